"""Running and checking the installation: the embedded servers, the schema, the audit trail, replay.
What `r2k services|db|audit|replay` call; authority (an admin for what changes things) is the
command line's to check first, as for every command.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import audit, embedded, events, migrations
from ..config import mask_url

if TYPE_CHECKING:
    from ..context import Context


def services_up(ctx: Context) -> list[dict]:
    """Start every embedded server no R2K_*_URL replaces; each part's status."""
    return [p.as_dict() for p in embedded.up(ctx.settings)]


def services_down(ctx: Context) -> list[dict]:
    return embedded.down(ctx.settings)


def services_status(ctx: Context) -> list[dict]:
    """Each part, embedded or external: where it listens, whether it answers, its credential (named,
    never shown). Starts nothing."""
    return [p.as_dict() for p in embedded.status(ctx.settings)]


def db_upgrade(ctx: Context) -> dict:
    """Bring the database to the newest schema, as its owner."""
    embedded.prepare_database(ctx.settings)
    return {"database": mask_url(ctx.database_url), "revision": migrations.HEAD}


def audit_verify(ctx: Context, anchor_path=None) -> dict:
    """Every hash chain and signature under the trusted keys, against the newest trusted checkpoint
    (or the anchor kept off the host, read from `anchor_path`)."""
    anchor = audit.read_anchor(anchor_path) if anchor_path else None
    return audit.verify(ctx.db, settings=ctx.settings, anchor=anchor,
                        anchor_name=f"--anchor {anchor_path}" if anchor_path else "--anchor")


def audit_anchor(ctx: Context):
    """A checkpoint of every event so far, when any is new; the latest (audit.Outcome)."""
    return audit.write_checkpoint(ctx, force=True)


def replay(ctx: Context) -> dict:
    """Every projection rebuilt from the events, and the differences with the tables."""
    return events.replay(ctx.db)
