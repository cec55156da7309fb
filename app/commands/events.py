"""events: the signed event log as a stream of JSON lines (`r2k events tail [--follow] [--aggregate TYPE]`)."""
from __future__ import annotations

import sys
import time

from r2k.core.domain import limits

from ..cli import bounded_int


def register(commands) -> None:
    e = commands.group("events", "the signed event log")
    p = e.command("tail", "the newest events as JSON lines, oldest first; live with --follow", tail)
    p.add_argument("--follow", action="store_true", help="keep printing events as they are committed (ctrl+c ends)")
    p.add_argument("--aggregate", metavar="TYPE", help="only this aggregate type: task, candidate, answer, "
                                                       "work_item, grey_entry …")
    p.add_argument("--lines", "-n", type=bounded_int("--lines", (0, limits.LIST_LIMIT[1])), default=20,
                   help=f"how many of the newest to print first (default 20; at most {limits.LIST_LIMIT[1]:,})")
    p.set_defaults(streams=True)  # JSON lines, printed as they come: no JSON document after them
    p.add_argument("--interval", type=_interval, default=0.5, help="seconds between looks for new events with "
                   f"--follow ({INTERVAL[0]}–{INTERVAL[1]:g})")


INTERVAL = (0.05, 10.0)


def _interval(value: str) -> float:
    """An argparse type: seconds within INTERVAL, else the 400 that names --interval (never a NaN that
    reaches time.sleep)."""
    import math

    from r2k.core.errors import InvalidInput

    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not INTERVAL[0] <= seconds <= INTERVAL[1]:
        raise InvalidInput(f"--interval is {INTERVAL[0]}–{INTERVAL[1]:g} seconds, got {value!r}")
    return seconds


def tail(cli, args):
    from r2k.core.services import event_stream

    from ..safe import dumps

    actor = cli.actor
    aggregate = args.aggregate.strip() if args.aggregate else None
    last = event_stream.high_water(cli.ctx)
    seen: set[int] = set()
    for event in event_stream.newest(cli.ctx, aggregate, args.lines):
        print(dumps(event_stream.as_read_by(event, actor), default=str), flush=True)
        seen.add(event["id"])
    if not args.follow:
        return None
    # What was committed when the tail began is not new (a late commit below `last` is, and prints).
    seen |= {e["id"] for e in event_stream.after(cli.ctx, aggregate, last, set()) if e["id"] <= last}
    while True:
        for event in event_stream.after(cli.ctx, aggregate, last, seen):
            print(dumps(event_stream.as_read_by(event, actor), default=str), flush=True)
            last = max(last, event["id"])
        sys.stdout.flush()
        time.sleep(args.interval)
