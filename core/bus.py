"""The bus: an engine's events to the rows of the reactions table (docs/architecture.md, "Bootstrap and bus").

Every engine move hands the event it appended to its unit of work (`Tx.react`), whose bus looks the
event up here by (entity, action) and, in the row's order:

- queues the row's **after** effects on the unit of work (`tx.after_commit`), so they run once the
  transaction has committed and never on a rollback;
- runs the row's **then** reactions in the same transaction; a reaction may move other entities,
  whose events come back through `Tx.react` to this bus before the next reaction runs.

The rows themselves are pure data (core/reactions.py); the bus knows no workflow. It is made by the
composition root (core/bootstrap.py), which gives it the context its effects get and the table.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, partial
from itertools import groupby
from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:
    from .adapters.postgres import Tx
    from .engine import Event


@dataclass(frozen=True)
class On:
    """One row of the reactions table: what follows `actions` of `entity`."""

    entity: str
    actions: tuple[str, ...]
    then: tuple[Callable[[Tx, Event], dict | None], ...] = ()
    after: tuple[Callable[[Any, Event], None], ...] = ()


def on(entity: str, actions: str, then=(), after=()) -> On:
    return On(entity, tuple(actions.split()), tuple(then), tuple(after))


def index(rows: Iterable[On]) -> dict[tuple[str, str], On]:
    """The rows by (entity, action); two rows for one move are a mistake in the table, said at once."""
    found: dict[tuple[str, str], On] = {}
    for row in rows:
        for action in row.actions:
            if (row.entity, action) in found:
                raise ValueError(f"two rows for {row.entity} {action}")
            found[(row.entity, action)] = row
    return found


@dataclass(frozen=True)
class ReactionTable:
    """What the bus dispatches to: the rows by move; the forms for many events of one move written
    together (`many`: reaction or effect → its form for a list); the effects after every move."""

    rows: dict[tuple[str, str], On]
    many: dict[Callable, Callable]
    after_every_move: tuple[Callable[[Any, list], None], ...] = ()


class Bus:
    """Dispatches events to their rows. `load` gives the table on the first dispatch (the composition
    root's choice: the table imports every workflow, which a command that moves nothing never needs);
    `ctx` is what the effects after the commit are given (the process's clients)."""

    def __init__(self, ctx: Any, load: Callable[[], ReactionTable]):
        self.ctx = ctx
        self._load = load

    @cached_property
    def table(self) -> ReactionTable:
        return self._load()

    def dispatch(self, tx: Tx, events: list[Event]) -> None:
        """What the table says follows `events` (one move's event, or many written together): their
        reactions now, their effects after the commit. Many events of one (entity, action) go to the
        form for many of a reaction or effect that has one, once; the others run for each."""
        table, ctx = self.table, self.ctx
        for (entity, action), same in groupby(events, key=lambda e: (e.machine, e.action)):
            row = table.rows.get((entity, action))
            if row is None:
                continue
            group = list(same)
            # Effects are queued first, so after the commit they run in the order the events were
            # written (a decision's notice before that of the answer it published).
            for effect in row.after:
                if len(group) > 1 and effect in table.many:
                    tx.after_commit(partial(table.many[effect], ctx, group))
                else:
                    for event in group:
                        tx.after_commit(partial(effect, ctx, event))
            for react in row.then:
                if len(group) > 1 and react in table.many:
                    table.many[react](tx, group)
                    continue
                for event in group:
                    made = react(tx, event)
                    if made:
                        event.outcome.update(made)
        if events:
            for effect in table.after_every_move:
                tx.after_commit(partial(effect, ctx, list(events)))
