"""serve ssh|web: the workstation for people who come in from elsewhere (docs/architecture.md,
"Remote access"). The servers' modules load only when one is started. The handlers of the tree in app/commands/serve.py."""
from __future__ import annotations

from r2k.core.domain import files
from r2k.core.errors import InvalidInput
from r2k.core.services.people import users

from ..remote import ssh, web


def idle_seconds(cli, args) -> int:
    return args.idle if args.idle is not None else cli.ctx.settings.ssh_idle_seconds


def _keys_file_ok(path: str) -> None:
    """--authorized-keys names a regular file, or one to be made: a FIFO, a device or a folder is
    refused before the server listens (the server would read it at the first login)."""
    kind = files.kind_at(path)
    if kind not in (None, "a regular file"):
        raise InvalidInput(f"--authorized-keys {files.shown(path)} is {kind}, not a regular file")


def serve_ssh(cli, args):
    """Its sessions act as users the server picks, so it is the operator's to start: the OS account
    that owns the data dir (and its credentials), as a service manager runs it, or else an admin."""
    idle = idle_seconds(cli, args)
    if args.authorized_keys is not None:
        _keys_file_ok(args.authorized_keys)
    cli.ctx.db  # the services up (or a 503) before the port opens
    if not users.owns_data_dir(cli.ctx):
        cli.admin("serve the workstation over SSH")

    ssh.serve(cli.ctx, args.host, args.port, args.authorized_keys, idle)


def serve_web(cli, args):
    actor = cli.actor  # a known user (403 otherwise), before the port opens

    web.serve(actor.name, args.host, args.port, cli.ctx.settings.data_dir, args.public_url)
