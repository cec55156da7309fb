"""serve api: the HTTP API (docs/architecture.md, "HTTP API"), served by uvicorn. Its modules load
only when it starts (or prints its OpenAPI document). The handlers of the tree in app/commands/api.py."""
from __future__ import annotations

import json

import uvicorn

from r2k.core.services.people import users

from ..api import create_app


def serve_api(cli, args):
    """Its requests act as the users of their tokens, so it is the operator's to start, as `serve ssh` is:
    the OS account that owns the data dir, or an admin."""
    if args.openapi:
        print(json.dumps(create_app().openapi(), indent=2, sort_keys=True))
        return None

    cli.ctx.db  # the services up, and the schema current (or a 503), before the port opens
    if not users.owns_data_dir(cli.ctx):
        cli.admin("serve the HTTP API")

    # An import string and a factory: with --workers N, each process builds its own app and Context.
    uvicorn.run("r2k.app.api:create_app", factory=True, host=args.host, port=args.port, workers=args.workers,
                log_level="warning", proxy_headers=True, server_header=False)
    return None
