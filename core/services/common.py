"""What every workflow's service shares: who moved an entity since (a stale version's 409 in words),
reading a row by id or 404, an entity's history from its signed events, what a machine's moves allow.
The unit of work is core/services/unit_of_work.py.
"""
from __future__ import annotations

import logging

from ..adapters.postgres import Tx
from ..domain import SYSTEM, Actor, parse_id  # noqa: F401 - re-exported for the services
from ..engine import check_standing, check_who
from ..errors import InvalidInput, NotFound, R2KError, StaleVersion, ValidationStateError

log = logging.getLogger(__name__)

# ----------------------------------------------------------------------------- who moved it

def moves_since(tx: Tx, aggregate: str, entity_id, seq: int) -> list[dict]:
    """The moves made on an entity after its event `seq` (its version then), oldest first: type and actor."""
    return tx.all("SELECT seq, type, actor FROM events WHERE aggregate_type = %s AND aggregate_id = %s AND seq > %s "
                  "ORDER BY seq LIMIT 20", (aggregate, str(entity_id), seq))


def mover(name: str, actor: Actor) -> str:
    """Who made a move, as the actor reads it: you, the system, or the person by name."""
    return "you" if name == actor.name else "the system" if name == SYSTEM.name else name


def by_whom(moves: list[dict], actor: Actor) -> str:
    """Moves in words: "claim by you, release by bob"."""
    return ", ".join(f"{m['type']} by {mover(m['actor'], actor)}" for m in moves)


def stale_refusal(tx: Tx, exc: StaleVersion, actor: Actor) -> StaleVersion:
    """A stale version's 409 in the facts of the event log (docs/architecture.md, "Keys"): "someone
    else got there first" only when another person moved the entity since the version the actor
    had; their own earlier move (another window, a script) or the system's is said as such."""
    moves = moves_since(tx, exc.aggregate, exc.entity_id, exc.expected)
    if not moves:
        return exc
    what = f"{exc.words} {exc.entity_id}"
    at = f"version {exc.version}, not {exc.expected} ({by_whom(moves, actor)}); reload and try again"
    people = {m["actor"] for m in moves} - {SYSTEM.name}
    if people - {actor.name}:
        said = f"someone else got there first: {what} is at {at}"
    elif people and all(m["actor"] == actor.name for m in moves):
        said = f"you changed {what} already: it is at {at}"
    else:
        said = f"the system changed {what} first: it is at {at}"
    return StaleVersion(exc.words, exc.aggregate, exc.entity_id, exc.version, exc.expected, said)


# ----------------------------------------------------------------------------- reading

def fetch(tx: Tx, table: str, what: str, entity_id) -> dict:
    """One row by id, or the 404 that names it."""
    row = tx.one(f"SELECT * FROM {table} WHERE id = %s", (parse_id(entity_id, what),))
    if row is None:
        raise NotFound(f"no {what} {entity_id}")
    return row


BLIND = ("review", "disagree")  # candidate moves whose decision only an adjudication shows


def event_history(tx: Tx, aggregate: str, entity_id: int) -> list[dict]:
    """An entity's transitions read from its signed events: who, when, from, to, and why."""
    rows = tx.all("SELECT seq, type, actor, created_at, payload FROM events WHERE aggregate_type = %s "
                  "AND aggregate_id = %s ORDER BY seq", (aggregate, str(entity_id)))
    out = []
    for r in rows:
        fields = r["payload"].get("fields") or {}
        if aggregate == "candidate" and r["type"] in BLIND:
            fields = {}  # a review's decision is never shown to the next reviewer (docs/architecture.md, "Overlap")
        out.append({"seq": r["seq"], "action": r["type"], "actor": r["actor"], "at": r["created_at"].isoformat(),
                    "from": r["payload"].get("from"), "to": r["payload"].get("to"), "reason": fields.get("reason"),
                    "revised_text": fields.get("revised_text")})
    return out


def refusal(machine, action: str, row: dict, actor: Actor):
    """Why `actor` may not make `action` on `row` as the row reads now: the R2KError the engine
    would raise (authority 403, state 422, the move's rule of who, a guard on the row itself), not
    raised; None when the move is open to them. The workstation hides the keys of refused moves and says this when one is
    pressed (docs/architecture.md, "Keys"): the engine still decides, on the row as it is."""
    try:
        check_standing(machine, action, actor, row)
        move = machine.find(action, row[machine.column], row.get("id"))
        check_who(machine, move, actor, row)
        if move.guard is not None:
            try:
                why_not = move.guard(row, {})
            except Exception as exc:  # noqa: BLE001 - a guard that reads the fields: only the engine can tell
                log.debug("the guard of %s %s cannot be judged without the request's fields: %r",
                          machine.name, action, exc)
                why_not = None
            if why_not:
                raise ValidationStateError(machine.name, row.get("id"), row[machine.column], action, why_not)
    except R2KError as exc:
        return exc
    return None


class Allowed:
    """What a workflow's moves allow, as the screens ask it: each service gives one (`allowed`) over
    its machine, so no screen holds a machine or looks into its moves; the engine still decides every
    move on the row as it is (docs/architecture.md, "Keys")."""

    def __init__(self, machine):
        self._machine = machine

    def refusal(self, action: str, row: dict, actor: Actor):
        """Why `actor` may not make `action` on `row` now (the core's R2KError, not raised), or None."""
        return refusal(self._machine, action, row, actor)

    def is_legal(self, action: str, state: str) -> bool:
        return self._machine.is_legal(action, state)

    def may(self, actor: Actor, action: str, row: dict, state: str | None = None) -> bool:
        """`action` is a move from `state` (the row's own by default) and `actor` is who may make it;
        its guard and the row's version are the engine's to judge."""
        state = row[self._machine.column] if state is None else state
        return self._machine.is_legal(action, state) and bool(self._machine.find(action, state).who(actor, row))

    def needs(self, action: str, state: str) -> set[str]:
        """The fields a move from `state` requires."""
        return set(self._machine.find(action, state).needs)

    def states(self) -> set[str]:
        return set(self._machine.states)

    def pipeline(self) -> list[str]:
        """The states in the order the moves reach them (each move's target, in table order), then
        any other."""
        order: list[str] = []
        for state in [m.to for m in self._machine.moves] + sorted(self._machine.states):
            if state not in order:
                order.append(state)
        return order

    def sources_of(self, action: str) -> set[str]:
        """The states `action` leaves from."""
        return {state for m in self._machine.moves_of(action) for state in m.sources}

    def moves_from(self, state: str) -> list[tuple[str, str, str]]:
        """(action, target state, who may) of each move a user makes from `state` (not the system's),
        each action once, in table order."""
        found: list[tuple[str, str, str]] = []
        for m in self._machine.moves:
            if state in m.sources and m.who.description != "the system" and all(m.action != f[0] for f in found):
                found.append((m.action, m.to, m.who.description))
        return found


def one_state(given: str, known, words: str) -> str:
    """A list's state filter: the state of `known` it names, whatever its case and underscores
    ("in review", "under_review"); a 400 naming `words` ("grey state") and the states otherwise."""
    key = given.strip().lower().replace("_", "").replace(" ", "")
    match = {s.lower().replace("_", ""): s for s in known}.get(key)
    if match is None:
        raise InvalidInput(f"unknown {words} {given!r}: expected one of {', '.join(known)}")
    return match


def status_filter(given, known, default: str, words: str) -> list[str]:
    """A list's status filter ("APPROVED,DISPUTED", a list, or ALL) checked against `known`; `default`
    when none is given, a 400 naming `words` ("answer status") for one it does not know."""
    if not given:
        return [default]
    values = given if isinstance(given, list) else [s for s in given.split(",") if s.strip()]
    out = []
    for value in values:
        value = value.strip().upper()
        if value == "ALL":
            return list(known)
        if value not in known:
            raise InvalidInput(f"unknown {words} {value!r}: expected {', '.join(known)} or ALL")
        out.append(value)
    return out
