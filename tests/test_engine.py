"""Every (state, action) pair of every machine: legal ones move the row and append one
event; illegal ones raise ValidationStateError naming entity, state and action, and change nothing.
The tables' own properties (reachability, terminal states, no orphaned action) and the engine's checks
over plain rows are the fast tier's, in tests/test_machines.py."""
from __future__ import annotations

import time

import pytest

from r2k.core import engine
from r2k.core.domain import SYSTEM, Actor
from r2k.core.errors import Conflict, Forbidden, InvalidInput, ValidationStateError
from r2k.core.events import now
from r2k.core.machines import Machine
from r2k.core.machines.answer import ANSWER
from r2k.core.machines.candidate import CANDIDATE
from r2k.core.machines.conflict import CONFLICT
from r2k.core.machines.grey import GREY
from r2k.core.machines.work_item import WORK_ITEM
from tests.conftest import redis_snapshot


def every_machine() -> list[Machine]:
    """Every Machine in the modules of core/machines, found there rather than listed here, so a new
    machine is under every property test (and the reactions table's, tests/test_spine.py) at once."""
    import importlib
    import pkgutil

    from r2k.core import machines

    found = {}  # by identity: a machine imported into another module is still one machine
    for module in pkgutil.iter_modules(machines.__path__, f"{machines.__name__}."):
        for value in vars(importlib.import_module(module.name)).values():
            if isinstance(value, Machine):
                found[id(value)] = value
    return sorted(found.values(), key=lambda m: m.name)


MACHINES = every_machine()

VALIDATOR = Actor("alice", "validator", frozenset({"FACT"}))
SPECIALIST = Actor("sam", "specialist")
ADMIN = Actor("root", "admin")

# What each action needs to pass its required fields and its guard, when it is legal.
FIELDS = {
    ("task", "pass_analysis"): {"ai_confidence_score": 0.95, "flagged_claims": []},
    ("task", "flag_analysis"): {"ai_confidence_score": 0.4, "flagged_claims": ["claim 3"]},
    ("task", "approve"): {"reviewer_ids": ["r1", "r2"]},
    ("candidate", "review"): {"decision": "approve"},    # a review's decision is one of the decisions
    ("candidate", "disagree"): {"decision": "reject", "reason": "not stated"},
}


def fields_for(machine, move) -> dict:
    fields = {name: f"some {name}" for name in move.needs}
    fields.update(FIELDS.get((machine.name, move.action), {}))
    return fields


def actor_for(move, row) -> Actor:
    for candidate in (SYSTEM, VALIDATOR, SPECIALIST, ADMIN, Actor(row.get("claimed_by") or "x", "validator",
                                                                  frozenset({"FACT"}))):
        if move.who(candidate, row):
            return candidate
    raise AssertionError(f"nobody may {move.action}")


def standing_actor(machine, action, row) -> Actor:
    """Someone with authority for `action` on this entity in some state: what an illegal move by
    them says is the 422 of the state, not a 403."""
    moves = machine.moves_of(action)
    for candidate in (SYSTEM, VALIDATOR, SPECIALIST, ADMIN):
        if not moves or any(m.who.stands(candidate, row) for m in moves):
            return candidate
    raise AssertionError(f"nobody stands for {action}")


def insert_in_state(tx, machine, state: str) -> dict:
    """A row of `machine`'s table sitting in `state`, with what every move's checks look at."""
    common = {"created_at": now(), "updated_at": now()}
    if machine is CANDIDATE:
        values = {"question": "Q?", "text": "T.", "horn_type": "FACT", "origin": "manual", "claimed_by": "alice",
                  "created_by": "t"}
    elif machine is ANSWER:
        values = _answer_values(tx)
    elif machine is CONFLICT:
        # Two approved answers of their own: an escalation disputes both (core/reactions.py).
        answers = [tx.insert(ANSWER.table, {**_answer_values(tx), **common, ANSWER.column: "APPROVED"})
                   for _ in range(2)]
        values = {"answer_id": answers[0]["id"], "other_answer_id": answers[1]["id"], "subject": "S",
                  "detail": "they disagree", "horn_types": ["FACT"]}
    elif machine is WORK_ITEM:
        values = {"question": "Q?", "created_by": "t"}
    elif machine is GREY:
        values = {"subject": "S", "origin": "manual", "ttl_seconds": 60, "expires_at": now(), "max_attempts": 3,
                  "created_by": "t"}
    elif machine.name == "task":
        values = {"title": "Article", "created_by": "t", "reviewers": [{"name": "alice"}],
                  "approvals": [{"reviewer": "r1"}, {"reviewer": "r2"}] if state == "PEER_REVIEW" else []}
    else:
        raise AssertionError(f"no row of {machine.name} to test with: say here what it needs")
    return tx.insert(machine.table, {**values, **common, machine.column: state})


def _answer_values(tx) -> dict:
    """What an answer's row needs: its candidate, APPROVED."""
    cand = tx.insert("candidates", {"question": "Q?", "text": "T.", "horn_type": "FACT", "state": "APPROVED",
                                    "origin": "manual", "created_by": "t", "created_at": now(),
                                    "updated_at": now()})
    return {"candidate_id": cand["id"], "question": "Q?", "text": "T.", "horn_type": "FACT",
            "published_by": "alice"}


def count_events(tx, machine, row_id) -> int:
    return tx.scalar("SELECT count(*) FROM events WHERE aggregate_type = %s AND aggregate_id = %s",
                     (machine.name, str(row_id)))


PAIRS = [(m, state, action) for m in MACHINES for state in sorted(m.states) for action in m.actions]


@pytest.mark.compat
@pytest.mark.parametrize("machine,state,action", PAIRS,
                         ids=[f"{m.name}-{s}-{a}" for m, s, a in PAIRS])
def test_every_state_action_pair(ctx, machine, state, action):
    with ctx.db.begin() as tx:
        row = insert_in_state(tx, machine, state)
    before_redis = redis_snapshot(ctx.redis)

    if machine.is_legal(action, state):
        m = machine.find(action, state)
        with ctx.db.begin() as tx:
            updated = engine.apply(tx, machine, row["id"], action, actor_for(m, row), fields=fields_for(machine, m)).row
            # A task's approval is followed in the same transaction by its publication (core/reactions.py).
            assert count_events(tx, machine, row["id"]) == (2 if (machine.name, action) == ("task", "approve") else 1)
        assert updated[machine.column] == m.to
        assert updated["version"] == row["version"] + 1
        with ctx.db.read() as tx:
            event = tx.one("SELECT * FROM events WHERE aggregate_type = %s AND aggregate_id = %s",
                           (machine.name, str(row["id"])))
        assert (event["type"], event["payload"]["from"], event["payload"]["to"]) == (action, state, m.to)
    else:
        with pytest.raises(ValidationStateError) as raised:
            with ctx.db.begin() as tx:
                engine.apply(tx, machine, row["id"], action, standing_actor(machine, action, row),
                             fields={"reason": "r", "assignee": "sam", "revised_text": "x", "text": "x"})
        assert raised.value.status == 422
        message = raised.value.message
        assert machine.words in message and state in message and action in message
        with ctx.db.read() as tx:
            assert tx.one(f"SELECT * FROM {machine.table} WHERE id = %s", (row["id"],)) == row
            assert count_events(tx, machine, row["id"]) == 0
        assert redis_snapshot(ctx.redis) == before_redis


@pytest.mark.parametrize("machine,action,field", [
    (CANDIDATE, "reject", "reason"), (CANDIDATE, "escalate", "reason"), (CANDIDATE, "revise", "revised_text"),
    (GREY, "assign", "assignee"), (GREY, "escalate", "reason"), (GREY, "reject", "rejected_by"),
])
def test_required_fields_are_a_400_and_change_nothing(ctx, machine, action, field):
    source = sorted(next(m for m in machine.moves if m.action == action).sources)[0]
    with ctx.db.begin() as tx:
        row = insert_in_state(tx, machine, source)
    m = machine.find(action, source)
    fields = fields_for(machine, m)
    fields[field] = "   "  # blank counts as missing
    with pytest.raises(InvalidInput, match=field):
        with ctx.db.begin() as tx:
            engine.apply(tx, machine, row["id"], action, actor_for(m, row), fields=fields)
    with ctx.db.read() as tx:
        assert tx.one(f"SELECT * FROM {machine.table} WHERE id = %s", (row["id"],)) == row
        assert count_events(tx, machine, row["id"]) == 0


def test_open_issue_cannot_be_approved_and_the_message_says_escalate(ctx):
    with ctx.db.begin() as tx:
        row = insert_in_state(tx, CANDIDATE, "IN_REVIEW")
        tx.execute("UPDATE candidates SET horn_type = 'OPEN_ISSUE' WHERE id = %s", (row["id"],))
    with pytest.raises(ValidationStateError, match="escalate"):
        with ctx.db.begin() as tx:
            engine.apply(tx, CANDIDATE, row["id"], "approve", Actor("alice", "validator", frozenset({"OPEN_ISSUE"})))


def test_authority_is_checked_by_the_engine(ctx):
    with ctx.db.begin() as tx:
        row = insert_in_state(tx, CANDIDATE, "PENDING")
        rule = insert_in_state(tx, CANDIDATE, "PENDING")
        tx.execute("UPDATE candidates SET horn_type = 'RULE' WHERE id = %s", (rule["id"],))
    with pytest.raises(Forbidden):
        with ctx.db.begin() as tx:
            engine.apply(tx, CANDIDATE, rule["id"], "claim", VALIDATOR)  # holds FACT only
    with pytest.raises(Forbidden):
        with ctx.db.begin() as tx:
            engine.apply(tx, CANDIDATE, row["id"], "claim", SPECIALIST)
    with ctx.db.begin() as tx:
        claimed = engine.apply(tx, CANDIDATE, row["id"], "claim", VALIDATOR, changes={"claimed_by": "alice"}).row
    assert claimed["state"] == "IN_REVIEW"
    with pytest.raises(Forbidden, match="claimed"):
        with ctx.db.begin() as tx:
            engine.apply(tx, CANDIDATE, row["id"], "approve", Actor("bob", "validator", frozenset({"FACT"})))


OUTSIDER = Actor("eve", "validator", frozenset({"PROCEDURE"}))  # no authority over a FACT entity
GUARDED = [(m, state, action) for m, state, action in PAIRS if m.moves_of(action)
           and not any(mv.who.stands(OUTSIDER, {"horn_type": "FACT"}) for mv in m.moves_of(action))]


@pytest.mark.parametrize("machine,state,action", GUARDED, ids=[f"{m.name}-{s}-{a}" for m, s, a in GUARDED])
def test_authority_is_checked_before_state_so_a_403_tells_nothing(ctx, machine, state, action):
    """Whether the move is legal from the entity's state or not, someone without authority gets the
    same 403, which names neither the state nor the version."""
    with ctx.db.begin() as tx:
        row = insert_in_state(tx, machine, state)
    with pytest.raises(Forbidden) as raised:
        with ctx.db.begin() as tx:
            engine.apply(tx, machine, row["id"], action, OUTSIDER, expected_version=row["version"] + 7,
                         fields={"reason": "r", "assignee": "sam", "revised_text": "x", "text": "x"})
    assert state not in raised.value.message and "version" not in raised.value.message
    with ctx.db.read() as tx:
        assert tx.one(f"SELECT * FROM {machine.table} WHERE id = %s", (row["id"],)) == row


def test_a_stale_expected_version_is_a_409_with_nothing_changed(ctx):
    with ctx.db.begin() as tx:
        row = insert_in_state(tx, GREY, "Pending")
    with pytest.raises(Conflict, match="version"):
        with ctx.db.begin() as tx:
            engine.apply(tx, GREY, row["id"], "dismiss", SPECIALIST, expected_version=row["version"] + 1)
    with ctx.db.begin() as tx:
        assert tx.one("SELECT * FROM grey_entries WHERE id = %s", (row["id"],)) == row
        done = engine.apply(tx, GREY, row["id"], "dismiss", SPECIALIST, expected_version=row["version"]).row
    assert done["state"] == "Dismissed"


def test_a_stale_version_says_who_moved_it_first(ctx, people):
    """The event log says who made the moves the request lost to: only another person is "someone
    else"; your own earlier move (another window, a script) and the system's are said as such."""
    from r2k.core.services.queue import claims
    from r2k.core.services.validation import candidates

    made = candidates.add(ctx, people["root"], "How many bays has the dock?", "Fourteen.", "FACT")
    seen = made["version"]
    claims.claim(ctx, people["alice"], made["id"])

    def stale(actor) -> str:
        with pytest.raises(Conflict) as raised:  # a service's unit of work reads the log before it rolls back
            candidates.release(ctx, actor, made["id"], expected_version=seen)
        return raised.value.message

    said = stale(people["alice"])
    assert said.startswith(f"you changed candidate {made['id']} already: it is at version {seen + 1}, not {seen} "
                           f"(claim by you)"), said
    assert "someone" not in said
    said = stale(people["bob"])
    assert said.startswith("someone else got there first: candidate"), said
    assert "(claim by alice)" in said
    with ctx.db.begin() as tx:
        engine.apply(tx, CANDIDATE, made["id"], "release", SYSTEM)  # the lease sweep
    said = stale(people["alice"])
    assert said.startswith(f"the system changed candidate {made['id']} first: it is at version"), said
    assert "(claim by you, release by the system)" in said and "someone" not in said


def wait_until_blocked_by(ctx, holder_pid: int, within: float = 10) -> bool:
    """Whether, within `within` s, a backend waits for a lock the backend `holder_pid` holds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with ctx.db.read() as tx:
            if tx.scalar("SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                         (holder_pid,)):
                return True
        time.sleep(0.01)
    return False


def test_a_move_that_waited_for_another_on_the_same_entity_follows_it(ctx, people):
    """Two specialists act on one grey entry at once: the second waits for the first's row lock, then
    makes its move on top of the first. Read committed hands a locking read that waited the row as
    the first left it but the rest of the statement (its chain head) from before; the engine reads
    the head again, so the second move is not refused as a lost race (409) it did not lose."""
    import threading

    from r2k.core.services.grey_entries import grey

    entry = grey.add(ctx, people["sam"], "Who signs the night log?", "")
    grey.transition(ctx, people["sam"], entry["id"], "assign", assignee="sam")
    holding, outcome, order = threading.Event(), {}, []

    def first():
        try:
            with ctx.db.begin() as tx:
                engine.apply(tx, GREY, entry["id"], "escalate", people["sam"], fields={"reason": "needs HR"})
                outcome["holder"] = tx.scalar("SELECT pg_backend_pid()")
                holding.set()
                # Commits only once the second's statement waits for this row lock (PostgreSQL says so).
                outcome["waited"] = wait_until_blocked_by(ctx, outcome["holder"])
                order.append("first commits")
        except Exception as exc:  # noqa: BLE001 - what it raised is the assertion's subject
            outcome["first error"] = exc

    def second():
        holding.wait(10)
        try:
            with ctx.db.begin() as tx:
                outcome["row"] = engine.apply(tx, GREY, entry["id"], "resolve", people["sam"]).row
                order.append("second moves")
        except Exception as exc:  # noqa: BLE001 - what it raised is the assertion's subject
            outcome["error"] = exc

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert "first error" not in outcome, outcome.get("first error")
    assert outcome["waited"], "the second move never waited for the first's lock"
    assert "error" not in outcome, outcome.get("error")  # not refused as a lost race it did not lose
    assert order == ["first commits", "second moves"]  # it waited, then moved on top of the first
    assert outcome["row"]["state"] == "Resolved"
    with ctx.db.read() as tx:
        chain = tx.all("SELECT seq, type FROM events WHERE aggregate_type = 'grey_entry' AND aggregate_id = %s "
                       "ORDER BY seq", (str(entry["id"]),))
    assert [e["type"] for e in chain][-2:] == ["escalate", "resolve"]
    assert [e["seq"] for e in chain] == list(range(1, len(chain) + 1))
