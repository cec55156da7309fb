"""The bus and the unit of work (docs/architecture.md, "Bootstrap and bus"), in the fast tier but the last test.

As cosmic python's FakeUnitOfWork: the real `Database` unit of work and the real bus, on a fake
connection that records its commit or rollback instead of reaching PostgreSQL. What is checked is
the order of effects: an engine move's events reach their rows in table order, inside the same
transaction; effects after the commit, and the hooks after them, only once it committed; nothing
after a rollback. The reactions that write SQL keep their real-service tests (tests/test_validation.py,
tests/test_graph.py …); the last test here checks bootstrap's queue upkeep on the real services.
"""
from __future__ import annotations

import contextlib
import logging

import psycopg
import pytest

from r2k.core import engine, reactions
from r2k.core.adapters.postgres import Database
from r2k.core.bootstrap import bootstrap, reaction_table
from r2k.core.bus import Bus, ReactionTable, index, on
from r2k.core.config import Settings
from r2k.core.domain import SYSTEM


class FakeConnection:
    """A connection whose transaction only records what happened to it."""

    def __init__(self, log: list):
        self.log = log
        self.in_transaction = False
        self.info = self  # `conn.info.transaction_status`, read by the unit of work after its block
        self.transaction_status = psycopg.pq.TransactionStatus.IDLE

    @contextlib.contextmanager
    def transaction(self):
        self.in_transaction = True
        try:
            yield
        except BaseException:
            self.log.append("rollback")
            raise
        else:
            self.log.append("commit")
        finally:
            self.in_transaction = False


class FakeDatabase(Database):
    """The real unit of work (`begin`, its steps and hooks after the commit) on a FakeConnection."""

    def __init__(self, log: list, bus: Bus, **hooks):
        super().__init__("postgresql://fake", bus=bus, **hooks)
        self.conn = FakeConnection(log)

    @contextlib.contextmanager
    def connection(self):
        yield self.conn


def move(tx, entity: str, action: str, entity_id: int = 1) -> engine.Event:
    """What the engine does once it has written a move: its event to the unit of work (`engine._emitted`,
    the engine's own code); the event counted as `core.events.append` counts it."""
    tx.events_appended += 1
    return engine._emitted(tx, entity, action, SYSTEM, {}, {"id": entity_id, "version": 1}, None, None)


@pytest.fixture
def world():
    """A log of effects, a bus over a small table, and a database on a fake connection."""
    log: list = []
    db: FakeDatabase | None = None

    def inside(name):  # a reaction: records itself and whether the transaction was open
        def react(tx, event):
            log.append((name, event.machine, event.action, "in tx" if db.conn.in_transaction else "outside"))
        react.__qualname__ = name
        return react

    def effect(name):  # an effect after the commit
        def after(ctx, event):
            log.append((name, event.machine, event.action, "in tx" if db.conn.in_transaction else "outside"))
        after.__qualname__ = name
        return after

    def pokes_other(tx, event):  # a reaction that moves another entity, as registry.publish_decided does
        log.append(("pokes_other", event.machine, event.action, "in tx" if db.conn.in_transaction else "outside"))
        made = move(tx, "other", "poke", 7)
        return {"poked": made.aggregate_id}

    def every(ctx, events):
        log.append(("every", tuple(e.machine for e in events), "outside" if not db.conn.in_transaction else "in tx"))

    def many_notice(ctx, events):
        log.append(("notice_all", tuple(e.aggregate_id for e in events)))

    notice = effect("notice")
    rows = [
        on("thing", "make", (pokes_other, inside("second")), (effect("push"), notice)),
        on("other", "poke", (inside("other_then"),), (effect("other_after"),)),
        on("thing", "batch", (), (notice,)),
    ]
    table = ReactionTable(index(rows), {notice: many_notice}, (every,))
    loaded = []
    bus = Bus(ctx="the clients", load=lambda: loaded.append(1) or table)
    committed = []
    failures = []
    db = FakeDatabase(log, bus,
                      on_events_committed=lambda count: (committed.append(count), log.append(("checkpoint", count))),
                      on_after_commit_error=lambda exc: (failures.append(exc), log.append(("upkeep", str(exc)))))
    return {"log": log, "db": db, "bus": bus, "loaded": loaded, "committed": committed, "failures": failures}


def test_a_moves_events_reach_their_rows_in_table_order_inside_the_transaction_then_after_the_commit(world):
    log, db = world["log"], world["db"]
    with db.begin() as tx:
        event = move(tx, "thing", "make")
        log.append("work done")
    assert event.outcome == {"poked": 7}  # what a reaction made, for the caller
    assert log == [
        # in the transaction, in the row's order; the other entity's move runs its own row at once
        ("pokes_other", "thing", "make", "in tx"),
        ("other_then", "other", "poke", "in tx"),
        ("second", "thing", "make", "in tx"),
        "work done",
        "commit",
        # after it: the effects in the order their events were written, then every move's, then the hooks
        ("push", "thing", "make", "outside"),
        ("notice", "thing", "make", "outside"),
        ("other_after", "other", "poke", "outside"),
        ("every", ("other",), "outside"),
        ("every", ("thing",), "outside"),
        ("checkpoint", 2),
    ]


def test_nothing_follows_a_rolled_back_unit(world):
    log, db = world["log"], world["db"]
    with pytest.raises(RuntimeError, match="refused late"):
        with db.begin() as tx:
            move(tx, "thing", "make")
            raise RuntimeError("refused late")
    # The reactions ran inside the transaction, which rolled back with them; no effect, no hook.
    assert log == [("pokes_other", "thing", "make", "in tx"), ("other_then", "other", "poke", "in tx"),
                   ("second", "thing", "make", "in tx"), "rollback"]
    assert world["committed"] == [] and world["failures"] == []


def test_a_failing_effect_is_logged_the_rest_still_run_and_the_queues_are_told_once(world, caplog):
    log, db, bus = world["log"], world["db"], world["bus"]

    def broken(ctx, event):
        raise ConnectionError("redis away")

    table = bus.table
    rows = dict(table.rows)
    rows[("thing", "break")] = on("thing", "break", (), (broken, broken, table.rows[("thing", "make")].after[1]))
    bus.table = ReactionTable(rows, table.many, table.after_every_move)
    with caplog.at_level(logging.WARNING, logger="r2k.core.adapters.postgres"):
        with db.begin() as tx:
            move(tx, "thing", "break")
    assert log == ["commit", ("notice", "thing", "break", "outside"), ("every", ("thing",), "outside"),
                   ("upkeep", "redis away"), ("checkpoint", 1)]
    assert len(world["failures"]) == 1  # once per unit, however many steps failed
    assert sum("a step after a commit failed" in r.message for r in caplog.records) == 2


def test_events_written_together_go_to_the_form_for_many_once(world):
    log, db = world["log"], world["db"]
    with db.begin() as tx:
        events = [engine.Event("thing", "batch", n, SYSTEM, {}, 1, None, "NEW", {"id": n}) for n in (1, 2, 3)]
        tx.react_all(events)
    assert log == ["commit", ("notice_all", (1, 2, 3)), ("every", ("thing", "thing", "thing"), "outside")]


def test_a_move_without_a_row_sets_off_only_what_follows_every_move(world):
    log, db = world["log"], world["db"]
    with db.begin() as tx:
        move(tx, "thing", "unknown")
    assert log == ["commit", ("every", ("thing",), "outside"), ("checkpoint", 1)]


def test_the_table_is_loaded_on_the_first_move_only(world):
    db = world["db"]
    with db.begin():
        pass  # a unit that moves nothing (a read) loads no table
    assert world["loaded"] == []
    for _ in range(2):
        with db.begin() as tx:
            move(tx, "thing", "batch")
    assert world["loaded"] == [1]


def test_two_rows_for_one_move_are_refused():
    with pytest.raises(ValueError, match="two rows for thing make"):
        index([on("thing", "make publish"), on("thing", "make")])


def test_the_reactions_table_is_data_the_bus_dispatches():
    """Every row's reactions and effects are plain functions; the index holds every action of every row."""
    table = reaction_table()
    assert table is reactions.REACTIONS
    assert set(table.rows) == {(row.entity, a) for row in reactions.TABLE for a in row.actions}
    assert all(callable(f) for row in reactions.TABLE for f in (*row.then, *row.after))


def test_bootstrap_wires_the_bus_and_a_bare_context_refuses_to_move(tmp_path):
    settings = Settings(data_dir=str(tmp_path / "data"))
    ctx = bootstrap(settings)
    assert ctx.wiring.bus.ctx is ctx  # effects get this process's clients
    assert ctx.wiring.bus.table is reactions.REACTIONS
    bare = type(ctx)(settings)  # a Context made by hand, past the composition root
    with pytest.raises(RuntimeError, match="make it with r2k.core.bootstrap.bootstrap"):
        bare.db


def test_a_step_that_fails_after_a_real_commit_drops_the_reconcile_mark_and_the_change_stands(ctx, people):
    """On the real services, wired by bootstrap(): a step after the commit that fails (Redis away for a
    queue push, say) leaves the change committed and the queues marked for a rebuild, which the next
    claim (or start-up) makes."""
    from r2k.core.adapters.redis_queues import EPOCH_KEY
    from r2k.core.services.queue import queue_index

    assert ctx.redis.exists(EPOCH_KEY)  # reconciled when the world was made

    def push_lost():
        raise ConnectionError("redis away")

    with ctx.db.begin() as tx:
        bob = tx.one("SELECT * FROM users WHERE name = 'bob' FOR UPDATE")
        engine.update(tx, "user", "users", bob, {"role": "specialist"}, SYSTEM, event_type="role_changed")
        tx.after_commit(push_lost)
    assert not ctx.redis.exists(EPOCH_KEY)
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT role FROM users WHERE name = 'bob'") == "specialist"
    assert queue_index.reconcile_if_lost(ctx) is True  # rebuilt, and marked again
    assert ctx.redis.exists(EPOCH_KEY)
