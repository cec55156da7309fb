"""Durable article tasks (docs/architecture.md, "Durable tasks"): event-sourced review of Markdown
articles, with schema-checked transition requests, mandatory idempotency keys, two real reviewers, an
AI analysis gate on RQ, automatic publication, deprecation, snapshots and replay.

A task is its events. Each move of the table in core/machines/task.py appends one typed event
(`TaskCreated`, `SubmittedForAnalysis`, `AnalysisCompleted`, `ReviewerAssigned`, `ReviewApproved`,
`ReviewRejected`, `ResolutionSubmitted`, `Published`, `Deprecated`) whose `data` is all the fold
(`fold`) reads: the `durable_tasks` row is what folding them gives, written in the same transaction
as the event (and its `set`, the columns the fold changed, is what the generic `replay` compares).

Before an event is committed, its payload is checked against its type's JSON Schema
(core/schemas/event_*.json) and its hash and Ed25519 signature are recomputed and verified. The
engine's checks (core/engine.py `plan`: authority, version, state, who, fields, guard) decide every
move; the chain, hashing and signing are core/events.py's. What follows a move (publication on
APPROVED, the analysis job on submit, the superseded version's deprecation on publish) is a row of
core/reactions.py.

Every N events of a task (R2K_TASK_SNAPSHOT_EVENTS) a snapshot of its projection is kept; `rebuild`
folds the events after the newest snapshot onto it, which gives what a fold from the first event gives.

The package's modules, each one job: `fold` (the projection and replay), `writing` (appending a
checked, signed event with its row), `commands` (the moves), `sources` (the cited answers' statuses
and the rendered article), `reactions` (what follows a move), `analysis` (the AI analysis gate),
`queries` (reading) and `demo` (the demo's articles). Other packages use the names below.
"""
from __future__ import annotations

from ...machines.task import TASK
from ..common import Allowed
from .analysis import analyze, assess, split_claims
from .commands import approved_already, assign, create, deprecate, resolve, review, submit, transition
from .demo import demo_articles
from .fold import STATES, TABLE, fold, rebuild
from .queries import events, export, get, list_tasks, show, with_signatures
from .reactions import analysis_job, analysis_job_id, deprecate_superseded, publish_approved, recover
from .sources import headed_by_title, not_current, render, status_said, statuses
from .writing import projection

__all__ = ["STATES", "TABLE", "allowed", "analysis_job", "analysis_job_id", "analyze", "approved_already", "assess",
           "assign", "create", "demo_articles", "deprecate", "deprecate_superseded", "events", "export", "fold",
           "get", "headed_by_title", "list_tasks", "not_current", "projection", "publish_approved", "rebuild",
           "recover", "render", "resolve", "review", "show", "split_claims", "status_said", "statuses", "submit",
           "transition", "with_signatures"]

# What the screens ask of a task's moves (they never hold its machine).
allowed = Allowed(TASK)
