"""What follows each move: one table for the whole core (docs/architecture.md, "Reactions").

Pure data: every row says, for (entity, action), what runs

- **then**: reactions in the same transaction, which may move other entities (and so set off their
  own rows here); each may return what it made (`{"answer": row}`), gathered in `event.outcome`
  for the caller;
- **after**: effects once the transaction has committed (a queue push, an RQ job, a live notice, a
  graph sync), so Redis and RQ never get ahead of PostgreSQL. A failing effect is logged and has
  the queues rebuilt (the change itself is committed); it never fails the change.

The bus (core/bus.py) dispatches an engine move's events to these rows; the composition root
(core/bootstrap.py) gives it this table. Workflows do not call each other for what follows their
moves: they make their move, and this table says the rest. Adding a reaction (say, "every registry
change syncs the graph") is one row.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from . import notices
from .bus import ReactionTable, index, on
from .services import tasks
from .services.answering import refine, workitems
from .services.answers import registry
from .services.contradictions import conflicts, graph_sync
from .services.grey_entries import grey
from .services.operations import webhooks
from .services.queue import claims, queue_index
from .services.search import embeddings
from .services.validation import candidates, overlap

if TYPE_CHECKING:
    from .context import Context
    from .engine import Event


def notice(ctx: Context, event: Event) -> None:
    """Tell open workstations (Redis pub/sub), in the one notice shape (core/notices.py)."""
    ctx.publish(notices.of(event))


def notices_of(ctx: Context, events: list[Event]) -> None:
    """`notice` for many events at once: one Redis pipeline."""
    ctx.publish_all([notices.of(event) for event in events])


TABLE = [
    # entity               actions                              in the same transaction                  after commit
    on("candidate",        "extract",                           (embeddings.embed_candidate,),           (queue_index.push_tail, notice)),
    on("candidate",        "resubmit",                          (workitems.close_for_resubmitted,
                                                                 embeddings.embed_candidate),            (queue_index.push_tail, notice)),
    on("candidate",        "claim re_review",                   (),                                      (claims.settle_claim,)),
    on("candidate",        "approve revise",                    (candidates.record_decision, registry.publish_decided,
                                                                 workitems.settle_generated,
                                                                 overlap.void_open),                     (notice,)),
    on("candidate",        "reject",                            (candidates.record_decision, registry.retire_rejected,
                                                                 workitems.settle_generated,
                                                                 overlap.void_open),                     (notice,)),
    on("candidate",        "escalate",                          (candidates.record_decision, overlap.void_open,
                                                                 workitems.open_for_escalation),         (notice,)),
    on("candidate",        "release dispute",                   (),                                      (queue_index.push_head, notice)),
    on("candidate",        "close supersede retire",            (),                                      (notice,)),
    on("candidate",        "record_version",                    (embeddings.embed_candidate,),           (notice,)),
    on("candidate",        "withdraw",                          (overlap.void_open,),                    (queue_index.pull, notice)),
    # Overlap (docs/architecture.md, "Overlap"): a review short of k goes back to the tail of its
    # queue; a disagreement waits for a specialist; an undone review's candidate is its reviewer's again.
    on("candidate",        "review",                            (overlap.record_review,),                (queue_index.push_tail, notice)),
    on("candidate",        "disagree",                          (overlap.record_review,),                (notice,)),
    on("candidate",        "unreview",                          (),                                      (queue_index.pull, notice)),
    on("candidate",        "source_added",                      (),                                      (notice,)),
    on("candidate",        "refine",                            (embeddings.embed_candidate,),           (queue_index.move_horn, notice)),
    # Every registry change reaches the graph (docs/architecture.md, "Graph"): one row each. A
    # re-review's outcome is one of these moves too: approve or revise supersedes the disputed
    # answer and publishes the new one, reject retires it.
    on("answer",           "publish",                           (conflicts.record_subjects,
                                                                 embeddings.embed_answer),               (registry.graph_jobs_later,
                                                                                                          notice)),
    on("answer",           "supersede",                         (conflicts.settle_with_answer,),         (graph_sync.sync_later, notice)),
    on("answer",           "dispute",                           (candidates.send_for_re_review,),        (graph_sync.sync_later, notice)),
    on("answer",           "retire",                            (candidates.retire_with_answer,
                                                                 conflicts.settle_with_answer),          (graph_sync.sync_later, notice)),
    on("work_item",        "create rework",                     (),                                      (workitems.generation_job, notice)),
    on("work_item",        "escalate",                          (grey.open_for_no_content,),             (notice,)),
    on("work_item",        "close",                             (candidates.close_escalated_origin,),    (notice,)),
    on("work_item",        "generate generated classify ready validate reject", (),                      (notice,)),
    on("grey_entry",       "add assign unassign reopen reset",  (grey.record_transition,),               (grey.processing_job, notice)),
    on("grey_entry",       "resolve",                           (grey.record_transition,
                                                                 workitems.open_for_resolved_grey),      (notice,)),
    on("grey_entry",       "process retry fail expire dismiss escalate deescalate reject",
                                                                (grey.record_transition,),               (notice,)),
    on("source_document",  "ingested",                          (),                                      (grey.retrigger_after_ingest,
                                                                                                          refine.refine_later, notice)),
    # Conflicts (docs/architecture.md, "Conflicts"): escalating disputes both answers; settling the
    # dispute (the answers' supersede or retire, above) closes the flag.
    on("conflict_flag",    "detect dismiss close",              (),                                      (notice,)),
    on("conflict_flag",    "escalate",                          (conflicts.dispute_answers,),            (notice,)),
    # Durable article tasks (docs/architecture.md, "Durable tasks"): publication follows approval at
    # once; a published new version deprecates the one it supersedes; a submission queues its analysis.
    on("task",             "submit",                            (),                                      (tasks.analysis_job, notice)),
    on("task",             "approve",                           (tasks.publish_approved,),               (notice,)),
    on("task",             "publish",                           (tasks.deprecate_superseded,),           (notice,)),
    on("task",             "create assign note_approval reject resolve pass_analysis flag_analysis deprecate",
                                                                (),                                      (notice,)),
    # Comments (docs/architecture.md, "Comments"): the notice lets a mentioned user's workstation say so.
    on("comment",          "add",                               (),                                      (notice,)),
    # A queue's new guidelines: open review screens show the version now in force.
    on("guidelines",       "write",                             (),                                      (notice,)),
]

# Reactions and effects with a form for many events of one (entity, action) written together
# (engine.create_all: one document's candidates, its grey entries): one statement, one Redis
# pipeline, for all of them. Each does for every event what the function it stands for does for one.
MANY: dict[Callable, Callable] = {
    queue_index.push_tail:   queue_index.push_tail_all,
    queue_index.pull:        queue_index.pull_all,
    notice:                  notices_of,
    grey.record_transition:  grey.record_transitions,
    grey.processing_job:     grey.processing_jobs,
}

# And after every move, whatever its row: its events to the webhooks that take them (docs/architecture.md,
# "HTTP API"), once committed; a webhook never fails nor holds up the move.
EVERY_EVENT_AFTER = (webhooks.fire_later,)

INDEX = index(TABLE)  # two rows for one move fail here, at import

REACTIONS = ReactionTable(INDEX, MANY, EVERY_EVENT_AFTER)
