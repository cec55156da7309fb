"""serve api: the HTTP API (docs/architecture.md, "HTTP API"), served by uvicorn. Its modules load
only when it starts (or prints its OpenAPI document)."""
from __future__ import annotations


def register_serve_api(serve) -> None:
    from r2k.core.domain import limits

    from ..cli import bounded_int

    api = serve.command("api", "the HTTP API (uvicorn): every request acts as the user of its bearer token "
                        "(`r2k users token create`); on 127.0.0.1 unless --host says otherwise (the data dir's "
                        "owner, or an admin, starts it)", serve_api, authority="own")
    api.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    api.add_argument("--port", default=8080, type=bounded_int("--port", (0, 65535)), help="default 8080")
    api.add_argument("--workers", default=1, type=bounded_int("--workers", limits.PROCESSES),
                     help="server processes; each is stateless, so any number may run behind a proxy "
                          f"(default 1; {limits.said(limits.PROCESSES)})")
    api.add_argument("--openapi", action="store_true", help="print the OpenAPI document and exit (no server)")


def serve_api(cli, args):
    """Its requests act as the users of their tokens, so it is the operator's to start, as `serve ssh` is:
    the OS account that owns the data dir, or an admin."""
    if args.openapi:
        import json

        from ..api import create_app

        print(json.dumps(create_app().openapi(), indent=2, sort_keys=True))
        return None
    from r2k.core.services import users

    cli.ctx.db  # the services up, and the schema current (or a 503), before the port opens
    if not users.owns_data_dir(cli.ctx):
        cli.admin("serve the HTTP API")
    import uvicorn

    # An import string and a factory: with --workers N, each process builds its own app and Context.
    uvicorn.run("r2k.app.api:create_app", factory=True, host=args.host, port=args.port, workers=args.workers,
                log_level="warning", proxy_headers=True, server_header=False)
    return None
