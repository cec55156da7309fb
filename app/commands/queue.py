"""queue: the Horn-type validation queues: counts, claims, repair, the sweep, settings, guidelines.
The command tree; the handlers are app/handlers/queue.py, imported when one runs."""
from __future__ import annotations

from r2k.core.domain import limits

from ..cli import bounded_int


def register(commands) -> None:
    queue = commands.group("queue", "the Horn-type validation queues")
    queue.command("stats", "per Horn type: pending, in review, oldest pending age", "queue:queue_stats")
    p = queue.command("claim", "claim the oldest candidate of a partition", "queue:queue_claim", mutates=True)
    p.add_argument("--horn-type", required=True, help="the partition: FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE")
    queue.command("reconcile", "rebuild every partition from PostgreSQL (after Redis lost data)", "queue:queue_reconcile")
    queue.command("sweep", "the whole sweep, now (a specialist or an admin): expired claims released, ids stuck "
                  "in flight returned, queues that miss ids rebuilt, grey TTLs expired and retries queued, work "
                  "items a dead worker left re-enqueued, article analyses a lost job left waiting queued again, the "
                  "graph caught up", "queue:queue_sweep")
    p = queue.command("config", "a queue's setting: how many independent, blind reviews each of its candidates "
                      "needs (--reviews K, an admin; 1 by default; disagreement goes to a specialist's "
                      "adjudication); without --reviews, the setting in force", "queue:queue_config", mutates=True)
    p.add_argument("horn_type", metavar="HORN_TYPE", help="FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE")
    p.add_argument("--reviews", metavar="K", help="the number of reviews per candidate, 1 to 9")
    p = queue.command("guidelines", "a queue's guidelines for its validators: the version in force, another "
                      "(--version), every version (--history), or a new one from a Markdown file (--file, an admin)",
                      "queue:queue_guidelines", mutates=True)
    p.add_argument("horn_type", metavar="HORN_TYPE", help="FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE")
    p.add_argument("--file", metavar="FILE", help="write a new version from this Markdown file (at most 512 KB)")
    p.add_argument("--version", dest="number", type=bounded_int("--version", limits.VERSION),
                   help="show this version")
    p.add_argument("--history", action="store_true", help="list every version, newest first")
