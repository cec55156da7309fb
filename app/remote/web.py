"""`r2k serve web`: the workstation in a browser through textual-serve (docs/architecture.md,
"Remote access"). Each browser tab gets the TUI in a process of its own, acting as the one user the
server was started for (`--as`). It authenticates nobody: it listens on 127.0.0.1 by default and is
meant to sit behind an authenticating proxy (README, "The workstation in a browser")."""
from __future__ import annotations

import shlex
import sys


def command(user: str) -> str:
    """What textual-serve runs for each browser session (a shell line: it starts it with a shell)."""
    return shlex.join([sys.executable, "-m", "r2k.app", "--as", user])


def serve(user: str, host: str, port: int, public_url: str | None = None) -> None:
    from textual_serve.server import Server

    server = Server(command(user), host=host, port=port, title=f"r2k · {user}", public_url=public_url)
    server.serve()
