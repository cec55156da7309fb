"""Running and checking the installation: the embedded servers, the schema, the audit trail, replay.
What `r2k services|db|audit|replay` call; authority (an admin for what changes things) is the
command line's to check first, as for every command.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import audit, embedded, events, migrations
from ...adapters.postgres import adapt
from ...config import mask_url
from ...domain import jsonable
from ...errors import Forbidden
from ..tasks import with_signatures

if TYPE_CHECKING:
    from ...context import Context


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


def replay_repair(ctx: Context, actor) -> dict:
    """`replay --repair` (an admin): every projection row that differs from what its events say is
    rewritten from them (a column the events set, a row that is missing); a row no event rebuilds, or
    one a trigger keeps (a published answer's content), is reported, not touched. What it changed is
    itself a signed event (aggregate `replay_repair`), and the report says it column by column.
    It writes projection rows, so only an admin (or the system) may, whoever calls it."""
    if not (actor.is_system or actor.role == "admin"):
        raise Forbidden(f"{actor.name} ({actor.role}) may not repair projections: only an admin may")
    before = events.replay(ctx.db)
    changed, left = [], []
    if not before["differences"]:
        return {"ok": True, "events": before["events"], "rows": before["rows"], "changed": [], "left": [],
                "after": before}
    trust = events.trust_store(ctx.settings)
    unverified: dict[tuple[str, str], str | None] = {}
    with ctx.db.begin() as tx:
        for d in before["differences"]:
            table = events.PROJECTIONS[d["aggregate_type"]]
            try:
                with tx.conn.transaction():  # a savepoint: one refused row leaves the others repaired
                    if d.get("problem") == "row has no events":
                        left.append({**d, "why": "no event rebuilds it"})
                        continue
                    where = (d["aggregate_type"], d["id"])
                    if where not in unverified:
                        unverified[where] = _unverified(tx, trust, *where)
                    if unverified[where]:  # an event slipped in by hand is no truth to repair from
                        left.append({**d, "why": f"its events do not verify ({unverified[where]}): not repaired "
                                                 "from them; see `r2k audit verify`"})
                        continue
                    if d.get("problem"):  # events exist but the row is missing
                        values: dict = {}
                        for ev in tx.all("SELECT payload FROM events WHERE aggregate_type = %s AND aggregate_id = %s "
                                         "ORDER BY seq", (d["aggregate_type"], d["id"])):
                            values.update(ev["payload"].get("set", {}))
                        values["id"] = int(d["id"])
                        tx.insert(table, values)
                        changed.append({"aggregate_type": d["aggregate_type"], "id": d["id"], "column": None,
                                        "change": "row restored from its events"})
                        continue
                    tx.execute(f"UPDATE {table} SET {d['column']} = %s WHERE id = %s",
                               (adapt(d["column"], d["from_events"]), int(d["id"])))
                    changed.append({"aggregate_type": d["aggregate_type"], "id": d["id"], "column": d["column"],
                                    "from": d["in_table"], "to": d["from_events"]})
            except Exception as exc:  # noqa: BLE001 - a trigger or constraint refused this row: reported
                left.append({**d, "why": str(getattr(exc, "diag", None) and exc.diag.message_primary or exc)[:300]})
        if changed:
            at = events.now()
            events.append(tx, tx.signer, "replay_repair", at.strftime("%Y%m%dT%H%M%S%f"), "replay_repair", actor.name,
                          {"changed": jsonable(changed), "left": jsonable(left)}, at=at)
    after = events.replay(ctx.db)
    return {"ok": after["ok"], "events": after["events"], "rows": after["rows"], "changed": changed, "left": left,
            "after": after}


def _unverified(tx, trust: dict, aggregate_type: str, aggregate_id: str) -> str | None:
    """Why an aggregate's events are not to be trusted (the first that fails its hash, its link or
    its signature under the trust store), or None when every one verifies."""
    rows = tx.all("SELECT * FROM events WHERE aggregate_type = %s AND aggregate_id = %s ORDER BY seq",
                  (aggregate_type, aggregate_id))
    bad = next((e for e in with_signatures(rows, trust) if e["signature"] != "verified"), None)
    return f"event {bad['seq']}: {bad['signature']}" if bad else None
