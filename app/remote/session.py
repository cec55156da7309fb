"""One SSH session's workstation: what `r2k serve ssh` runs on the pty it made for a connection
(docs/architecture.md, "Remote access").

The user comes from the server (the key the connection was accepted with), as the one argument;
the server builds this process's environment itself (no `env` request of the client's reaches it),
and nothing here reads `--as`. The process leads a session of its own with the pty as its
controlling terminal, so the kernel sends it SIGWINCH when the client's window changes and SIGHUP
when the connection goes.
"""
from __future__ import annotations

import fcntl
import logging
import os
import sys
import termios

SAVES = ("save_screenshot", "deliver_screenshot", "deliver_text", "deliver_binary")


def save_nothing() -> None:
    """The workstation is the only service: Textual's file deliveries (the command palette's
    "Screenshot", which writes into the server account's Downloads) say so instead of writing."""
    from textual.app import App

    def refused(self, *args, **kwargs):
        self.notify("Over SSH nothing is saved where the server runs: use your own terminal's screenshot.",
                    title="Not saved", severity="warning")
        return None

    for name in SAVES:
        setattr(App, name, refused)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("r2k: started by `r2k serve ssh` only, with the user its key maps to", file=sys.stderr)
        return 6
    user = argv[0]
    try:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # the server made this process a session leader (setsid)
    except OSError as exc:  # the TUI runs all the same; only job control on its terminal is missing
        logging.getLogger("r2k.ssh").debug("session for %s: the pty did not become its terminal: %s", user, exc)
    os.environ["R2K_USER"] = user  # whatever reads the settings acts as the key's user too
    save_nothing()
    from r2k.app.tui import run_tui

    return run_tui(user=user)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
