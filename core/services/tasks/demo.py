"""The demo's articles (r2k demo), taken through the workflow as users would."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...domain import Actor
from ..people import users
from ..queue import claims
from ..validation import candidates
from .analysis import analyze
from .commands import assign, create, review, submit
from .queries import get

if TYPE_CHECKING:
    from ...context import Context


DEMO_ANSWERS = [
    ("How long are nightly database backups retained?", "Nightly database backups are retained for 30 days."),
    ("Where are backups stored?", "Backups are stored in the Frankfurt region in the Stowage backup service."),
    ("When do full database backups run?", "Full database backups run every night at 01:00."),
]


DEMO_ARTICLES = [
    ("Backups at a glance", "# Backups at a glance\n\nFull database backups run every night at 01:00.\n\n"
     "- Backups are stored in the Frankfurt region in the Stowage backup service.\n"
     "- Nightly database backups are retained for 30 days.\n", "passes"),
    ("Backup retention, draft", "# Backup retention\n\nNightly database backups are retained for 90 days.\n\n"
     "Restored copies are archived on tape in Lisbon every quarter.\n", "needs resolution"),
    ("Where backups live", "# Where backups live\n\n"
     "Backups are stored in the Frankfurt region in the Stowage backup service.\n", "published"),
]


def demo_articles(ctx: Context, by: Actor) -> list[dict]:
    """`r2k demo`'s three articles, by cleo: one that passed the analysis (PEER_REVIEW, ada and ben to
    review), one that needs resolution (it contradicts the registry and goes beyond it), one already
    published. The registry answers they are checked against are published first, through the
    candidates' own path (added, claimed and approved by dev), so the demo's queues are as before.
    Running it again adds nothing."""
    with ctx.db.read() as tx:
        if tx.one("SELECT 1 FROM durable_tasks WHERE title = ANY(%s)", ([a[0] for a in DEMO_ARTICLES],)):
            return []
        known = {r["text"] for r in tx.all("SELECT text FROM approved_answers WHERE status = 'APPROVED' "
                                           "AND text = ANY(%s)", ([a[1] for a in DEMO_ANSWERS],))}
    cleo, dev, ada, ben = (users.resolve(ctx, name) for name in ("cleo", "dev", "ada", "ben"))
    for question, text in DEMO_ANSWERS:
        if text not in known:
            added = candidates.add(ctx, by, question, text, "FACT", "13-backup-and-restore.md")
            claims.claim(ctx, dev, added["id"])
            candidates.approve(ctx, dev, added["id"])
    made = []
    for title, body, fate in DEMO_ARTICLES:
        task = create(ctx, cleo, title, body, version="v1")
        submit(ctx, cleo, task["id"])
        analyze(ctx, task["id"])  # at once, not waiting for a worker (its job then finds nothing to do)
        if fate != "needs resolution":
            assign(ctx, cleo, task["id"], ["ada", "ben"])
        if fate == "published":
            review(ctx, ada, task["id"], "approve", "matches the registry")
            review(ctx, ben, task["id"], "approve", "checked against the handbook")
        made.append(get(ctx, task["id"]))
    return made
