"""State machines as data: a Machine is a table of Moves; the engine applies them.

A Move names an action, the states it leaves from, the state it reaches, who may make it, the
fields it needs, and an optional guard. Creation moves have no source state (`NEW`). A Machine
declares its terminal states and refuses a table whose moves say otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..domain import Actor
from ..errors import ValidationStateError

NEW: frozenset[str] = frozenset()  # the source of a creation move: the entity does not exist yet


@dataclass(frozen=True)
class Who:
    """Who may make a move: a name for messages and a predicate over (actor, row).

    `standing` is the part that does not depend on the entity's state (role and Horn-type
    authority): the engine checks it before anything else, so someone without authority learns
    nothing about an entity from a 422 that names its state. By default it is the predicate itself;
    a rule that also looks at the row's state-dependent columns (who claimed it) names its standing.
    """

    description: str
    allows: Callable[[Actor, dict], bool]
    standing: Callable[[Actor, dict], bool] | None = None

    def __call__(self, actor: Actor, row: dict) -> bool:
        return self.allows(actor, row)

    def stands(self, actor: Actor, row: dict) -> bool:
        return (self.standing or self.allows)(actor, row)


def _horn_authority(actor: Actor, row: dict) -> bool:
    return actor.is_system or actor.holds(row.get("horn_type"))


def _holds(actor: Actor, row: dict) -> bool:
    return actor.holds(row.get("horn_type"))


def _horn_or_specialist(actor: Actor, row: dict) -> bool:
    return actor.is_system or actor.role in ("specialist", "admin") or actor.holds(row.get("horn_type"))


# The roles of docs/architecture.md The system actor (workers, sweepers) is named where it may act.
class WHO:
    SYSTEM = Who("the system", lambda a, r: a.is_system)
    HORN_AUTHORITY = Who("a validator with authority for its Horn type", _horn_authority)
    CLAIMANT = Who("the validator who claimed it", lambda a, r: a.name == r.get("claimed_by"), standing=_holds)
    CLAIMANT_OR_SYSTEM = Who("the validator who claimed it, or the system when the lease expires",
                             lambda a, r: a.is_system or a.name == r.get("claimed_by"), standing=_horn_authority)
    SYSTEM_OR_SPECIALIST = Who("a specialist, an admin or the system",
                               lambda a, r: a.is_system or a.role in ("specialist", "admin"))
    SYSTEM_OR_VALIDATOR = Who("the system or a validator with authority for its Horn type", _horn_authority)
    HORN_AUTHORITY_OR_SPECIALIST = Who("a validator with authority for its Horn type, a specialist or an admin",
                                       _horn_or_specialist)
    VALIDATOR_OR_ADMIN = Who("a validator with authority for its Horn type, or an admin",
                             lambda a, r: a.role == "admin" or (a.role == "validator" and a.holds(r.get("horn_type"))))
    ANY_USER = Who("any known user", lambda a, r: True)
    SPECIALIST = Who("a specialist or an admin", lambda a, r: a.role in ("specialist", "admin"))


Guard = Callable[[dict, dict], "str | None"]  # (row, fields) -> why not, or None


@dataclass(frozen=True)
class Move:
    action: str
    sources: frozenset[str]
    to: str
    who: Who
    needs: tuple[str, ...] = ()
    guard: Guard | None = None

    @property
    def creates(self) -> bool:
        return not self.sources


def move(action: str, sources, to: str, who: Who, *, needs: tuple[str, ...] = (), guard: Guard | None = None) -> Move:
    srcs = frozenset([sources] if isinstance(sources, str) else sources)
    return Move(action, srcs, to, who, needs, guard)


@dataclass
class Machine:
    name: str          # the aggregate type in the event log
    table: str         # the projection table
    column: str        # the state column
    moves: list[Move]
    terminal: frozenset[str] = field(default_factory=frozenset)
    _index: dict = field(init=False, repr=False)
    _by_action: dict = field(init=False, repr=False)

    @property
    def words(self) -> str:
        """The entity in a user's words, for messages: "grey entry", "work item"."""
        return self.name.replace("_", " ")

    def __post_init__(self) -> None:
        self._index = {}
        for m in self.moves:
            for state in (m.sources or {None}):
                key = (m.action, state)
                if key in self._index:
                    raise ValueError(f"{self.name}: two moves for {key}")
                self._index[key] = m
        self._by_action = {}  # moves_of runs on every move's authority check
        for m in self.moves:
            if m.sources:
                self._by_action.setdefault(m.action, []).append(m)
        # `terminal` is declared beside the table, where a reader looks for it, and must say what
        # the moves say: a terminal state has no outgoing move, and a state without one is terminal.
        leaving = {s for m in self.moves for s in m.sources}
        dead_ends = self.states - leaving
        if self.terminal != dead_ends:
            wrong = [f"declared terminal but has moves out: {', '.join(sorted(self.terminal & leaving))}"
                     if self.terminal & leaving else "",
                     f"no move out but not declared terminal: {', '.join(sorted(dead_ends - self.terminal))}"
                     if dead_ends - self.terminal else "",
                     f"declared terminal but no move reaches it: {', '.join(sorted(self.terminal - self.states))}"
                     if self.terminal - self.states else ""]
            raise ValueError(f"{self.name}: terminal does not match the moves ({'; '.join(w for w in wrong if w)})")

    @property
    def states(self) -> set[str]:
        found = set()
        for m in self.moves:
            found |= set(m.sources)
            found.add(m.to)
        return found

    @property
    def actions(self) -> list[str]:
        return sorted({m.action for m in self.moves})

    def creation(self, action: str) -> Move:
        found = self._index.get((action, None))
        if found is None:
            raise ValueError(f"{self.name} has no creation move {action!r}")
        return found

    def moves_of(self, action: str) -> list[Move]:
        """Every move named `action`, whatever state it leaves from."""
        return list(self._by_action.get(action, ()))

    def find(self, action: str, state: str, entity_id=None) -> Move:
        found = self._index.get((action, state))
        if found is None:
            allowed = self.allowed_actions(state)
            detail = f"allowed from {state}: {', '.join(allowed)}" if allowed else f"{state} is terminal"
            raise ValidationStateError(self.name, entity_id, state, action, detail)
        return found

    def allowed_actions(self, state: str) -> list[str]:
        return sorted({m.action for m in self.moves if state in m.sources})

    def next_states(self, state: str) -> list[str]:
        return sorted({m.to for m in self.moves if state in m.sources})

    def is_legal(self, action: str, state: str) -> bool:
        return (action, state) in self._index
