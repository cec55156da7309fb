"""Riding out a server restart: long-lived processes (workers, the workstation, sweeps) retry what
an outage interrupted, with bounded backoff, and say so once per outage, not once per attempt.

`retry_across_outages(ctx, fn)` runs `fn`; when it fails because PostgreSQL, Redis or the graph does
not answer, it waits (0.25 s doubling to 5 s), lets the context reconnect (an embedded one that died is
started again on its socket, docs/architecture.md "Embedded servers"), and runs `fn` again, until it
succeeds or the time allowed runs out. Only a whole unit of work is retried: every service call is
one transaction, and what is committed stays committed, so a retry redoes at most what never happened
(the state of the entity decides, as for every retried job).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, TypeVar

from .adapters.graph import GraphUnavailable
from .errors import ServiceUnavailable

T = TypeVar("T")

FIRST_DELAY = 0.25
MAX_DELAY = 5.0

log = logging.getLogger("r2k.outage")


def delays(first: float = FIRST_DELAY, cap: float = MAX_DELAY):
    """0.25, 0.5, 1, 2, 4, 5, 5, … seconds."""
    delay = first
    while True:
        yield delay
        delay = min(delay * 2, cap)


class Outages:
    """This process's outages, one per service part: a line when one starts, a line when it ends."""

    def __init__(self, logger: logging.Logger = log):
        self._since: dict[str, float] = {}
        self._lock = threading.Lock()
        self._log = logger

    def down(self, part: str, reason: str) -> None:
        with self._lock:
            if part in self._since:
                return
            self._since[part] = time.monotonic()
        self._log.warning("%s does not answer (%s): reconnecting with backoff", _NAMES.get(part, part), reason)

    def up(self, part: str | None = None) -> None:
        with self._lock:
            parts = [part] if part else list(self._since)
            ended = {p: self._since.pop(p) for p in parts if p in self._since}
        for p, since in ended.items():
            self._log.warning("%s answers again after %.1f s", _NAMES.get(p, p), time.monotonic() - since)

    def current(self) -> list[str]:
        with self._lock:
            return sorted(self._since)


_NAMES = {"postgres": "PostgreSQL", "redis": "Redis", "graph": "the graph"}
OUTAGES = Outages()


def retry_across_outages(ctx, fn: Callable[[], T], *, within: float, outages: Outages = OUTAGES) -> T:
    """`fn()`, retried across outages of the services it uses for at most `within` seconds; any
    other error, or an outage that outlasts `within`, is raised as it is."""
    deadline = time.monotonic() + within
    waits = delays()
    while True:
        try:
            result = fn()
        except Exception as exc:
            unavailable = service_error(exc, ctx)
            if unavailable is None or unavailable.part is None:
                raise
            outages.down(unavailable.part, unavailable.message)
            pause = next(waits)
            if time.monotonic() + pause > deadline:
                raise unavailable from None
            time.sleep(pause)
            try:
                ctx.reconnect(unavailable.part)
            except Exception as follow_error:  # noqa: BLE001 - still down: the next attempt says so
                log.debug("following %s: %s", unavailable.part, follow_error)
            continue
        outages.up()
        return result


def service_error(exc: BaseException, ctx=None) -> ServiceUnavailable | None:
    """A connection failure from a driver, as the 503 that names the service and its URL (and the
    part, so a caller knows what to reconnect to); None for any other error."""
    if isinstance(exc, ServiceUnavailable):
        return exc
    # Here, not at the top: the embedded servers and the settings (psycopg and pydantic, ~200 ms) load
    # only once a driver failed; every module that reports a 503 imports this one, `r2k --help` too.
    from . import embedded
    from .config import get_settings

    settings = ctx.settings if ctx else get_settings()

    def url_of(part: str) -> str:
        if ctx is not None and f"{'database' if part == 'postgres' else part}_url" in ctx.__dict__:
            return ctx.__dict__[f"{'database' if part == 'postgres' else part}_url"]
        return embedded.configured_url(settings, part) or f"embedded {part}"

    # By the classes an error descends from: a killed server raises subclasses (AdminShutdown,
    # CannotConnectNow while it recovers, …) of the driver's connection errors.
    kinds = {(c.__module__.split(".")[0], c.__name__) for c in type(exc).__mro__}
    if kinds & {("psycopg", "OperationalError"), ("psycopg", "InterfaceError"), ("psycopg_pool", "PoolTimeout"),
                ("sqlalchemy", "OperationalError")}:
        return embedded.unavailable("postgres", url_of("postgres"), exc)
    if isinstance(exc, GraphUnavailable) or kinds & {("neo4j", "ServiceUnavailable"), ("neo4j", "SessionExpired")}:
        return embedded.unavailable("graph", url_of("graph"), exc)
    if kinds & {("redis", "ConnectionError"), ("redis", "TimeoutError"), ("redis", "BusyLoadingError")}:
        return embedded.unavailable("redis", url_of("redis"), exc)
    return None
