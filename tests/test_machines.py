"""Properties of every state machine in core/machines/, and the engine's checks over plain
rows (`engine.plan`, no database): the fast tier.

What each table must be, whatever its moves: every state is reachable from a creation move; a state
is terminal exactly when no move leaves it (`Machine` refuses a table that declares otherwise); every
action can be made from some reachable state; every state can still reach an end. Random walks over
the moves stay within the machine's states and stop only in terminal ones.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from r2k.core import engine
from r2k.core.domain import HORN_TYPES, SYSTEM, Actor
from r2k.core.errors import Conflict, Forbidden, InvalidInput, ValidationStateError
from r2k.core.machines import NEW, WHO, Machine, move
from r2k.core.machines.grey import GREY
from r2k.core.machines.work_item import WORK_ITEM
from r2k.core.services.answering import workitems
from r2k.core.services.grey_entries import grey
from tests.test_engine import MACHINES, OUTSIDER, actor_for, fields_for, standing_actor

IDS = [m.name for m in MACHINES]
WALKS = settings(max_examples=150, deadline=None, derandomize=True, database=None)

# What a state refuses does not depend on the walk that reached it: checked the first time a walk
# passes by, so the walks' time goes to reaching states and moves, not to repeating pytest.raises.
REFUSALS_SEEN: set[tuple] = set()


def creations(machine: Machine) -> list:
    return [m for m in machine.moves if m.creates]


def reachable(machine: Machine) -> set[str]:
    """The states some sequence of moves reaches from a creation move."""
    seen = {m.to for m in creations(machine)}
    frontier = list(seen)
    while frontier:
        for state in machine.next_states(frontier.pop()):
            if state not in seen:
                seen.add(state)
                frontier.append(state)
    return seen


def leaving(machine: Machine) -> set[str]:
    return {state for m in machine.moves for state in m.sources}


def test_the_properties_cover_every_machine():
    """MACHINES is found in core/machines, not listed: it holds each machine the core moves (a
    discovery that found none would leave every test below with nothing to check)."""
    from r2k.core.machines.answer import ANSWER
    from r2k.core.machines.candidate import CANDIDATE
    from r2k.core.machines.conflict import CONFLICT
    from r2k.core.machines.task import TASK

    known = (CANDIDATE, ANSWER, WORK_ITEM, GREY, TASK, CONFLICT)
    assert all(any(m is k for m in MACHINES) for k in known), IDS
    assert len(IDS) == len(set(IDS))  # one machine per aggregate type


@pytest.mark.parametrize("machine", MACHINES, ids=IDS)
def test_every_state_is_reachable_from_a_creation_move(machine):
    assert creations(machine), f"{machine.name} has no creation move"
    assert machine.states - reachable(machine) == set()


@pytest.mark.parametrize("machine", MACHINES, ids=IDS)
def test_a_state_is_terminal_exactly_when_no_move_leaves_it(machine):
    assert machine.terminal, f"{machine.name} never ends"
    for state in sorted(machine.states):
        assert (state in machine.terminal) == (not machine.allowed_actions(state)), state
    assert machine.terminal == machine.states - leaving(machine)


@pytest.mark.parametrize("machine", MACHINES, ids=IDS)
def test_no_action_is_orphaned(machine):
    """Every action has a move that some entity can make: a creation, or a move from a reachable state."""
    live = reachable(machine)
    for action in machine.actions:
        moves = [m for m in machine.moves if m.action == action]
        assert any(m.creates or m.sources & live for m in moves), f"{machine.name} {action} can never be made"


@pytest.mark.parametrize("machine", MACHINES, ids=IDS)
def test_every_state_can_still_reach_an_end(machine):
    """No trap: from every state some sequence of moves reaches a terminal state."""
    ends = set(machine.terminal)
    changed = True
    while changed:
        more = {s for s in machine.states - ends if set(machine.next_states(s)) & ends}
        changed = bool(more)
        ends |= more
    assert machine.states - ends == set()


def test_a_table_whose_terminal_states_disagree_with_its_moves_is_refused():
    moves = [move("create", NEW, "OPEN", WHO.ANY_USER), move("close", "OPEN", "CLOSED", WHO.ANY_USER),
             move("reopen", "CLOSED", "OPEN", WHO.ANY_USER), move("drop", "OPEN", "GONE", WHO.ANY_USER)]
    Machine("ok", "t", "state", moves, terminal=frozenset({"GONE"}))
    with pytest.raises(ValueError, match="declared terminal but has moves out: CLOSED"):
        Machine("bad", "t", "state", moves, terminal=frozenset({"CLOSED", "GONE"}))
    with pytest.raises(ValueError, match="no move out but not declared terminal: GONE"):
        Machine("bad", "t", "state", moves)
    with pytest.raises(ValueError, match="declared terminal but no move reaches it: LOST"):
        Machine("bad", "t", "state", moves, terminal=frozenset({"GONE", "LOST"}))
    with pytest.raises(ValueError, match="two moves for"):
        Machine("bad", "t", "state", [*moves, move("close", "OPEN", "GONE", WHO.ANY_USER)],
                terminal=frozenset({"GONE"}))


@pytest.mark.parametrize("machine", MACHINES, ids=IDS)
@WALKS
@given(data=st.data())
def test_random_walks_stay_within_the_states_and_end_only_in_terminal_ones(machine, data):
    state = data.draw(st.sampled_from(creations(machine)), label="created by").to
    steps = data.draw(st.randoms(use_true_random=False), label="steps")  # one draw for the walk, not one a step
    for _ in range(40):
        assert state in machine.states
        allowed = machine.allowed_actions(state)
        if (machine.name, state) not in REFUSALS_SEEN:  # the same every time a walk passes by
            for action in sorted(set(machine.actions) - set(allowed)):
                assert not machine.is_legal(action, state)
                with pytest.raises(ValidationStateError, match=f"is terminal|allowed from {state}: "):
                    machine.find(action, state, 1)
            REFUSALS_SEEN.add((machine.name, state))
        if not allowed:
            assert state in machine.terminal
            return
        assert state not in machine.terminal
        action = steps.choice(allowed)
        made = machine.find(action, state)
        assert made.action == action and state in made.sources and made.to in machine.next_states(state)
        state = made.to


# ----------------------------------------------------------------------------- engine.plan over plain rows

def row_in(machine: Machine, state: str, **extra) -> dict:
    """A row as the engine reads it, without a table: what every move's checks look at."""
    row = {"id": 7, "version": 3, machine.column: state, "horn_type": "FACT", "claimed_by": "alice"}
    if machine.name == "task":
        row["reviewers"] = [{"name": "alice"}]  # an assigned reviewer, who may review
    if machine.name == "task" and state == "PEER_REVIEW":
        row["approvals"] = [{"reviewer": "r1"}, {"reviewer": "r2"}]
    if machine.name == "conflict_flag":
        row["horn_types"] = ["FACT"]  # both answers' Horn types: whose authority decides the flag
    return {**row, **extra}


PAIRS = [(m, state, action) for m in MACHINES for state in sorted(m.states) for action in m.actions]


@pytest.mark.parametrize("machine,state,action", PAIRS, ids=[f"{m.name}-{s}-{a}" for m, s, a in PAIRS])
def test_plan_makes_exactly_the_legal_moves(machine, state, action):
    row = row_in(machine, state)
    if machine.is_legal(action, state):
        made = machine.find(action, state)
        planned = engine.plan(machine, row, action, actor_for(made, row), fields_for(machine, made),
                              expected_version=3)
        assert planned is made
    else:
        with pytest.raises(ValidationStateError) as raised:
            engine.plan(machine, row, action, standing_actor(machine, action, row),
                        {"reason": "r", "assignee": "sam", "revised_text": "x", "text": "x"})
        assert raised.value.status == 422
        assert machine.words in raised.value.message and state in raised.value.message
        assert action in raised.value.message
    assert row == row_in(machine, state)  # plan writes nothing, not even into the row


@pytest.mark.parametrize("machine,state,action", PAIRS, ids=[f"{m.name}-{s}-{a}" for m, s, a in PAIRS])
def test_plan_checks_authority_then_version_then_state(machine, state, action):
    row = row_in(machine, state)
    if machine.moves_of(action) and not any(m.who.stands(OUTSIDER, row) for m in machine.moves_of(action)):
        with pytest.raises(Forbidden) as raised:  # whatever the version and the state: a 403 that tells nothing
            engine.plan(machine, row, action, OUTSIDER, expected_version=10)
        assert state not in raised.value.message and "version" not in raised.value.message
    if machine.moves_of(action):
        with pytest.raises(Conflict, match="version 3, not 10"):  # legal or not from here: the 409 comes first
            engine.plan(machine, row, action, standing_actor(machine, action, row), expected_version=10)


ALL_HORNS = frozenset(HORN_TYPES)


def able(made, row: dict) -> Actor:
    """Someone the move's rule of who allows on this row, and who stands for it."""
    for actor in (SYSTEM, Actor(row.get("claimed_by") or "x", "validator", ALL_HORNS), Actor("sam", "specialist"),
                  Actor("root", "admin")):
        if made.who(actor, row) and made.who.stands(actor, row):
            return actor
    raise AssertionError(f"nobody may {made.action}")


@pytest.mark.parametrize("machine", MACHINES, ids=IDS)
def test_plan_needs_every_field_of_the_move_and_holds_its_guard(machine):
    for made in (m for m in machine.moves if m.sources):
        state = sorted(made.sources)[0]
        row = row_in(machine, state)
        fields = fields_for(machine, made)
        for name in made.needs:
            for blank in (None, "", "   "):
                with pytest.raises(InvalidInput, match=f"{machine.words} {made.action} requires {name}"):
                    engine.plan(machine, row, made.action, able(made, row), {**fields, name: blank})
        if made.guard is None:
            continue
        # Some input the guard refuses: an OPEN_ISSUE row, no reviewers, an analysis that passed or not.
        needed = {name: f"some {name}" for name in made.needs}
        refused = next(((r, f, why) for r in (row, row_in(machine, state, horn_type="OPEN_ISSUE", approvals=[]))
                        for f in ({**needed}, {**needed, "ai_confidence_score": 0.95, "flagged_claims": []})
                        if (why := made.guard(r, f))), None)
        assert refused, f"{machine.name} {made.action}: no input its guard refuses"
        guarded_row, guarded_fields, why = refused
        with pytest.raises(ValidationStateError) as raised:
            engine.plan(machine, guarded_row, made.action, able(made, guarded_row), guarded_fields)
        assert why in raised.value.message and state in raised.value.message


def test_the_claimant_rule_is_checked_after_the_state():
    from r2k.core.machines.candidate import CANDIDATE

    row = row_in(CANDIDATE, "IN_REVIEW")
    bob = Actor("bob", "validator", frozenset({"FACT"}))  # authority for FACT, but did not claim it
    with pytest.raises(Forbidden, match="only the validator who claimed it may"):
        engine.plan(CANDIDATE, row, "approve", bob)
    with pytest.raises(ValidationStateError, match="PENDING"):  # from PENDING the state speaks first
        engine.plan(CANDIDATE, row_in(CANDIDATE, "PENDING"), "approve", bob)
    assert engine.plan(CANDIDATE, row, "approve", Actor("alice", "validator", frozenset({"FACT"}))).to == "APPROVED"


@pytest.mark.parametrize("machine", MACHINES, ids=IDS)
@WALKS
@given(data=st.data())
def test_a_walk_of_any_actions_through_plan_moves_only_where_the_table_says(machine, data):
    row = row_in(machine, data.draw(st.sampled_from(creations(machine))).to, version=1)
    steps = data.draw(st.randoms(use_true_random=False), label="steps")  # one draw for the walk, not one a step
    for _ in range(25):
        state = row[machine.column]
        action = steps.choice(machine.actions)
        if not machine.moves_of(action):
            continue  # a creation-only action: nothing to plan on an existing row
        if not machine.is_legal(action, state):
            if (machine.name, state, action) not in REFUSALS_SEEN:  # the same every time a walk tries it
                with pytest.raises(ValidationStateError):
                    engine.plan(machine, row, action, standing_actor(machine, action, row),
                                {"reason": "r", "assignee": "sam", "revised_text": "x", "text": "x"},
                                expected_version=row["version"])
                REFUSALS_SEEN.add((machine.name, state, action))
            continue
        made = machine.find(action, state)
        planned = engine.plan(machine, row, action, actor_for(made, row), fields_for(machine, made),
                              expected_version=row["version"])
        row = row_in(machine, planned.to, version=row["version"] + 1)
        assert row[machine.column] in machine.states


# ----------------------------------------------------------------------------- what screens ask (services' `allowed`)

def test_what_a_screen_asks_of_a_workflow_is_what_its_machine_says():
    """Screens never hold a machine: they ask a service's `allowed` (core/services/common.py), which
    must say exactly what the table says, for the grey queue's moves as a specialist and a validator see them."""
    from r2k.core.machines.grey import GREY
    specialist, validator = Actor("sam", "specialist"), Actor("ada", "validator", frozenset({"FACT"}))
    assert grey.allowed.states() == GREY.states
    assert grey.allowed.sources_of("expire") == {s for m in GREY.moves if m.action == "expire" for s in m.sources}
    for state in sorted(GREY.states):
        shown = grey.allowed.moves_from(state)
        assert [a for a, _, _ in shown] == list(dict.fromkeys(
            m.action for m in GREY.moves if state in m.sources and m.who.description != "the system"))
        for action, to, who in shown:
            move = GREY.find(action, state)
            assert (to, who) == (move.to, move.who.description)
            row = {"id": 1, "state": state}
            for actor in (specialist, validator):
                assert grey.allowed.may(actor, action, row) == bool(move.who(actor, row))
                assert (grey.allowed.refusal(action, row, actor) is None) <= grey.allowed.may(actor, action, row)
            assert grey.allowed.needs(action, state) == set(move.needs)
    # Not a move from this state: not allowed, and the refusal is the engine's 422.
    assert not grey.allowed.may(specialist, "resolve", {"id": 1, "state": "Resolved"})
    assert isinstance(grey.allowed.refusal("resolve", {"id": 1, "state": "Resolved"}, specialist), ValidationStateError)


def test_the_work_items_pipeline_lists_every_state_once_in_the_order_moves_reach_them():
    from r2k.core.machines.work_item import WORK_ITEM
    order = workitems.allowed.pipeline()
    assert sorted(order) == sorted(WORK_ITEM.states) and len(order) == len(set(order))
    firsts = list(dict.fromkeys(m.to for m in WORK_ITEM.moves))
    assert order[:len(firsts)] == firsts
