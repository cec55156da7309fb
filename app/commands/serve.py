"""serve ssh|web: the workstation for people who come in from elsewhere (docs/architecture.md,
"Remote access"). The servers' modules load only when one is started. The command tree; the handlers are app/handlers/serve.py, imported when one runs."""
from __future__ import annotations

from r2k.core.domain.limits import SSH_IDLE as IDLE

from ..cli import bounded_int
from .api import register_serve_api

PORTS = (0, 65535)
IDLE_DEFAULT = 30 * 60  # R2K_SSH_IDLE_SECONDS's default (core/config.py)


def register(commands) -> None:
    serve = commands.group("serve", "serve the workstation over SSH or in a browser, or the HTTP API")
    ssh = serve.command("ssh", "an SSH server whose only service is the workstation, as the user each public key "
                        "maps to (the data dir's owner, or an admin, starts it)", "serve:serve_ssh", authority="own")
    ssh.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    ssh.add_argument("--port", default=2222, type=bounded_int("--port", PORTS), help="default 2222 (0: any free port)")
    ssh.add_argument("--authorized-keys", metavar="FILE", help="the keys let in, one a line `TYPE BASE64 user=NAME` "
                     "(default: ssh/authorized_keys in the data dir; `r2k users add-key` adds one)")
    ssh.add_argument("--idle", metavar="SECONDS", type=bounded_int("--idle", IDLE, "seconds"),
                     help="end a session after this long without a key pressed, with a warning a minute before "
                     f"(default R2K_SSH_IDLE_SECONDS, else {IDLE_DEFAULT})")
    web = serve.command("web", "the workstation in a browser (textual-serve) as --as USER, to those who hold its "
                        "link (a token kept in the data dir); beyond 127.0.0.1, behind an authenticating proxy",
                        "serve:serve_web")
    web.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    web.add_argument("--port", default=8000, type=bounded_int("--port", (1, 65535)), help="default 8000")
    web.add_argument("--public-url", metavar="URL", help="the address browsers reach it at, behind a proxy "
                     "(default http://HOST:PORT)")

    register_serve_api(serve)
