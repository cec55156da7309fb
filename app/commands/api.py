"""serve api: the HTTP API (docs/architecture.md, "HTTP API"), served by uvicorn. Its modules load
only when it starts (or prints its OpenAPI document). The command tree; the handlers are app/handlers/api.py, imported when one runs."""
from __future__ import annotations

from r2k.core.domain import limits

from ..cli import bounded_int


def register_serve_api(serve) -> None:
    api = serve.command("api", "the HTTP API (uvicorn): every request acts as the user of its bearer token "
                        "(`r2k users token create`); on 127.0.0.1 unless --host says otherwise (the data dir's "
                        "owner, or an admin, starts it)", "api:serve_api", authority="own")
    api.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    api.add_argument("--port", default=8080, type=bounded_int("--port", (0, 65535)), help="default 8080")
    api.add_argument("--workers", default=1, type=bounded_int("--workers", limits.PROCESSES),
                     help="server processes; each is stateless, so any number may run behind a proxy "
                          f"(default 1; {limits.said(limits.PROCESSES)})")
    api.add_argument("--openapi", action="store_true", help="print the OpenAPI document and exit (no server)")
