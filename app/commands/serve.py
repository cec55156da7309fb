"""serve ssh|web: the workstation for people who come in from elsewhere (docs/architecture.md,
"Remote access"). The servers' modules load only when one is started."""
from __future__ import annotations

from r2k.core.domain.limits import SSH_IDLE as IDLE

PORTS = (0, 65535)
IDLE_DEFAULT = 30 * 60  # R2K_SSH_IDLE_SECONDS's default (core/config.py)


def register(commands) -> None:
    from ..cli import bounded_int

    serve = commands.group("serve", "serve the workstation over SSH or in a browser, or the HTTP API")
    ssh = serve.command("ssh", "an SSH server whose only service is the workstation, as the user each public key "
                        "maps to (the data dir's owner, or an admin, starts it)", serve_ssh, authority="own")
    ssh.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    ssh.add_argument("--port", default=2222, type=bounded_int("--port", PORTS), help="default 2222 (0: any free port)")
    ssh.add_argument("--authorized-keys", metavar="FILE", help="the keys let in, one a line `TYPE BASE64 user=NAME` "
                     "(default: ssh/authorized_keys in the data dir; `r2k users add-key` adds one)")
    ssh.add_argument("--idle", metavar="SECONDS", type=bounded_int("--idle", IDLE, "seconds"),
                     help="end a session after this long without a key pressed, with a warning a minute before "
                     f"(default R2K_SSH_IDLE_SECONDS, else {IDLE_DEFAULT})")
    web = serve.command("web", "the workstation in a browser (textual-serve) as --as USER, to those who hold its "
                        "link (a token kept in the data dir); beyond 127.0.0.1, behind an authenticating proxy",
                        serve_web)
    web.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    web.add_argument("--port", default=8000, type=bounded_int("--port", (1, 65535)), help="default 8000")
    web.add_argument("--public-url", metavar="URL", help="the address browsers reach it at, behind a proxy "
                     "(default http://HOST:PORT)")
    from .api import register_serve_api

    register_serve_api(serve)


def idle_seconds(cli, args) -> int:
    return args.idle if args.idle is not None else cli.ctx.settings.ssh_idle_seconds


def _keys_file_ok(path: str) -> None:
    """--authorized-keys names a regular file, or one to be made: a FIFO, a device or a folder is
    refused before the server listens (the server would read it at the first login)."""
    from r2k.core.domain import files
    from r2k.core.errors import InvalidInput

    kind = files.kind_at(path)
    if kind not in (None, "a regular file"):
        raise InvalidInput(f"--authorized-keys {files.shown(path)} is {kind}, not a regular file")


def serve_ssh(cli, args):
    """Its sessions act as users the server picks, so it is the operator's to start: the OS account
    that owns the data dir (and its credentials), as a service manager runs it, or else an admin."""
    from r2k.core.services import users

    idle = idle_seconds(cli, args)
    if args.authorized_keys is not None:
        _keys_file_ok(args.authorized_keys)
    cli.ctx.db  # the services up (or a 503) before the port opens
    if not users.owns_data_dir(cli.ctx):
        cli.admin("serve the workstation over SSH")
    from ..remote import ssh

    ssh.serve(cli.ctx, args.host, args.port, args.authorized_keys, idle)


def serve_web(cli, args):
    actor = cli.actor  # a known user (403 otherwise), before the port opens
    from ..remote import web

    web.serve(actor.name, args.host, args.port, cli.ctx.settings.data_dir, args.public_url)
