"""webhooks: events POSTed to other systems, signed, on RQ (docs/architecture.md, "HTTP API"). The
command tree; the handlers are app/handlers/webhooks.py, imported when one runs."""
from __future__ import annotations

from r2k.core.domain import limits

from ..cli import bounded_int


def register(commands) -> None:
    w = commands.group("webhooks", "webhooks: chosen events POSTed to a URL, signed with HMAC-SHA256, retried "
                                   "with backoff (an admin)")
    p = w.command("add", "a hook; its secret is shown once", "webhooks:add", mutates=True, authority="admin")
    p.add_argument("url", metavar="URL", help="where to POST (http:// or https://)")
    p.add_argument("--events", required=True, metavar="E[,E…]",
                   help="event names such as candidate.approved,answer.published; ENTITY.* or * for all")
    p = w.command("list", "the hooks, with their state (ACTIVE, PAUSED) and failures", "webhooks:list_cmd", authority="admin")
    p.add_argument("--removed", action="store_true", help="removed hooks too")
    p = w.command("remove", "no more deliveries to a hook (its log is kept)", "webhooks:remove", mutates=True, authority="admin")
    p.add_argument("id", help="the hook's id")
    p = w.command("resume", "a paused hook takes events again", "webhooks:resume", mutates=True, authority="admin")
    p.add_argument("id", help="the hook's id")
    p = w.command("log", "every delivery attempt, newest first", "webhooks:log_cmd", authority="admin")
    p.add_argument("id", nargs="?", help="only this hook's")
    p.add_argument("--limit", type=bounded_int("--limit", limits.LIST_LIMIT), default=50,
                   help=f"at most this many (default 50; {limits.said(limits.LIST_LIMIT)})")
