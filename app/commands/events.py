"""events: the signed event log as a stream of JSON lines (`r2k events tail [--follow] [--aggregate
TYPE]`). The command tree; the handlers are app/handlers/events.py, imported when one runs."""
from __future__ import annotations

import math

from r2k.core.domain import limits
from r2k.core.errors import InvalidInput

from ..cli import bounded_int

INTERVAL = (0.05, 10.0)


def register(commands) -> None:
    e = commands.group("events", "the signed event log")
    p = e.command("tail", "the newest events as JSON lines, oldest first; live with --follow", "events:tail")
    p.add_argument("--follow", action="store_true", help="keep printing events as they are committed (ctrl+c ends)")
    p.add_argument("--aggregate", metavar="TYPE", help="only this aggregate type: task, candidate, answer, "
                                                       "work_item, grey_entry …")
    p.add_argument("--lines", "-n", type=bounded_int("--lines", (0, limits.LIST_LIMIT[1])), default=20,
                   help=f"how many of the newest to print first (default 20; at most {limits.LIST_LIMIT[1]:,})")
    p.set_defaults(streams=True)  # JSON lines, printed as they come: no JSON document after them
    p.add_argument("--interval", type=interval, default=0.5, help="seconds between looks for new events with "
                   f"--follow ({INTERVAL[0]}–{INTERVAL[1]:g})")


def interval(value: str) -> float:
    """An argparse type: seconds within INTERVAL, else the 400 that names --interval (never a NaN that
    reaches time.sleep)."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not INTERVAL[0] <= seconds <= INTERVAL[1]:
        raise InvalidInput(f"--interval is {INTERVAL[0]}–{INTERVAL[1]:g} seconds, got {value!r}")
    return seconds
