"""events: the signed event log as a stream of JSON lines (`r2k events tail [--follow] [--aggregate
TYPE]`). The handlers of the tree in app/commands/events.py."""
from __future__ import annotations

import sys
import time

from r2k.core.services.operations import event_stream

from ..safe import dumps


def tail(cli, args):
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
