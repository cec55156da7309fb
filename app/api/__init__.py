"""`r2k serve api`: the HTTP API (docs/architecture.md, "HTTP API").

An ASGI application (FastAPI) whose routes call the same service functions as the command line and
the workstation, with no logic of their own: a route reads its path, query, body and headers, names
the acting user from its bearer token, calls one service and returns what it returned as JSON. The
errors are the CLI's `{"error", "status", "message"}` with the same statuses, plus 401.
"""
from __future__ import annotations

from .app import create_app

__all__ = ["create_app"]
