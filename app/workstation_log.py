"""The workstation's log: `logs/workstation.log` in the data dir, and what a failure writes there.

While Textual runs it holds the terminal, so a line on stderr would be lost; the workstation says
in this file what the screen does not (a sweep that failed, a worker that would not start).
"""
from __future__ import annotations

import logging
import os
import time

from r2k.core.services.session import service_error

from .worker_child import log_path, open_log

log = logging.getLogger(__name__)
LOG_NAME = "workstation.log"
SAID_AGAIN = 600.0  # seconds: the same failure again within this is logged at debug level only


def said(exc: BaseException) -> str:
    """An exception in one line: its type and the first line of its message."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


_last_said: dict[str, tuple[str, float]] = {}


def log_failure(ctx, what: str, exc: BaseException) -> None:
    """Say in the log what failed: a service that does not answer at debug level (frequent while it is
    away, and the header says "reconnecting…"), anything else as a warning with its traceback, once
    (a look every few seconds that keeps failing the same way repeats it at debug level)."""
    line, now = said(exc), time.monotonic()
    last = _last_said.get(what)
    if service_error(exc, ctx) is not None or (last and last[0] == line and now - last[1] < SAID_AGAIN):
        log.debug("%s: %s", what, line)
        return
    if len(_last_said) >= 100:  # one `what` names an entry (a grey entry read): forget the oldest
        _last_said.pop(next(iter(_last_said)))
    _last_said[what] = (line, now)
    log.warning("%s: %s", what, line, exc_info=exc)


def keep_log(data_dir) -> logging.Handler | None:
    """Write the log (r2k's lines from INFO, R2K_DEBUG: from DEBUG; the libraries' from WARNING) to
    `logs/workstation.log` in the data dir (0600, as the worker's log), each line with its process id:
    several workstations (SSH sessions, say) share the file."""
    try:
        stream = os.fdopen(open_log(log_path(data_dir, LOG_NAME)), "a", buffering=1)
    except OSError as exc:  # said on the terminal, before the screen takes it
        log.warning("no workstation log in %s: %s", data_dir, exc)
        return None
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s pid %(process)d %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level > logging.WARNING or root.level == logging.NOTSET:
        root.setLevel(logging.WARNING)
    logging.getLogger("r2k").setLevel(logging.DEBUG if os.environ.get("R2K_DEBUG") else logging.INFO)
    return handler
