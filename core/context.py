"""The clients one process talks to, opened lazily: PostgreSQL, Redis, graph, LLM, embeddings,
the signer, live notices; and finding a server again after an outage.

A Context is made by the composition root (core/bootstrap.py `bootstrap`), which wires its
database's bus and hooks after a commit (`Wiring`); the CLI, the TUI, the workers and the API
server each make one that way and pass it to the service functions.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from . import embedded, migrations
from .adapters.graph import connect as connect_graph
from .adapters.llm import ChatClient
from .adapters.postgres import Database
from .config import Settings, get_settings, mask_url
from .errors import ServiceUnavailable
from .events import Signer
from .notices import CHANNEL, shaped

if TYPE_CHECKING:
    from .bus import Bus

LOADING_WAIT = 15.0  # seconds a command waits for a Redis still loading its data after a restart
REDIS_READ_TIMEOUT = 5.0  # seconds a Redis reply may take before the command fails with 503


@dataclass(frozen=True)
class Wiring:
    """What the composition root gives a Context's database (docs/architecture.md, "Bootstrap and bus")."""

    bus: Bus  # what follows every engine move
    on_events_committed: Callable[[int], None]  # the audit checkpoint, when one is due
    on_after_commit_error: Callable[[Exception], None]  # queue upkeep: a step after a commit failed


class Context:
    def __init__(self, settings: Settings | None = None, *, pool_size: int | None = None,
                 check_schema: bool = True):
        self.settings = settings or get_settings()
        # Before anything reads or starts in the data dir: one of another account, or one others can
        # write, is refused (docs/architecture.md, "Trust model").
        embedded.check_owner(self.settings)
        self._servers: dict[str, int | None] = {}  # which server process this one's clients of a part reach
        self.pool_size = pool_size
        self.check_schema = check_schema  # off only for `db upgrade`, which brings the schema up itself
        self.wiring: Wiring | None = None  # set by core/bootstrap.py before any use of the database

    # -- PostgreSQL -------------------------------------------------------------------------
    def _reach(self, part: str) -> str:
        url = embedded.ensure(self.settings, part)
        self._servers[part] = embedded.server_pid(self.settings, part)
        return url

    @cached_property
    def database_url(self) -> str:
        return self._reach("postgres")

    @cached_property
    def db(self):
        wiring = self.wiring
        if wiring is None:  # a move on it would set off no reaction: say so rather than lose them
            raise RuntimeError("this Context has no bus: make it with r2k.core.bootstrap.bootstrap()")
        url = self.database_url
        db = Database(url, pool_size=self.pool_size, connect_timeout=self.settings.connect_timeout,
                      on_connect_error=lambda exc: embedded.unavailable("postgres", url, exc),
                      signer=_LazySigner(self), on_after_commit_error=wiring.on_after_commit_error,
                      on_events_committed=wiring.on_events_committed, bus=wiring.bus,
                      embeddings=_Lazy(self, "embeddings"))
        if self.check_schema:
            self._check_schema(db, url)
        return db

    @cached_property
    def checkpoint_db(self):
        """Where the audit checkpoint after commits is written (core/audit.py): a connection of its
        own, opened when one is first due, when this process has just one (a command), so a
        checkpoint (up to a second at 100,000 chains) never holds up the claims and decisions of
        the process; the pool when it has one."""
        if self.pool_size:
            return self.db
        url = self.database_url
        return Database(url, connect_timeout=self.settings.connect_timeout,
                        on_connect_error=lambda exc: embedded.unavailable("postgres", url, exc))

    def _check_schema(self, db, url: str) -> None:
        with db.connection() as conn:
            revision = migrations.current(conn)
        if revision == migrations.HEAD:
            return
        if not self.settings.database_url:
            embedded.prepare_database(self.settings)  # the embedded default keeps itself current
            return
        raise ServiceUnavailable(
            f"the database at {mask_url(url)} is at schema {revision or 'none'}, this r2k needs "
            f"{migrations.HEAD}: run `r2k db upgrade`")

    @cached_property
    def signer(self):
        key_file = self.settings.signing_key_file or Path(self.settings.data_dir) / "signing_key.pem"
        return Signer(key_file)

    # -- Redis ------------------------------------------------------------------------------
    @cached_property
    def redis_url(self) -> str:
        return self._reach("redis")

    @cached_property
    def redis(self):
        # In-function: redis costs 0.29 s to import (load 4), which a command that never reaches Redis never pays
        import redis

        url = self.redis_url
        # A reply may take REDIS_READ_TIMEOUT: a Redis that accepts and never answers is a 503 after
        # it, as the README says (redis-py's own default today, named here so it cannot move unseen).
        client = redis.Redis.from_url(url, socket_connect_timeout=self.settings.connect_timeout,
                                      socket_timeout=REDIS_READ_TIMEOUT, health_check_interval=30)
        deadline = time.monotonic() + LOADING_WAIT
        while True:
            try:
                client.ping()
                return client
            except redis.exceptions.BusyLoadingError as exc:
                # A Redis restarted a moment ago answers LOADING while it reads its append-only
                # file: wait for it rather than fail the command.
                if time.monotonic() > deadline:
                    raise embedded.unavailable("redis", url, exc) from None
                time.sleep(0.1)
            except redis.exceptions.RedisError as exc:
                raise embedded.unavailable("redis", url, exc) from None

    @cached_property
    def redis_queues(self):
        """core/adapters/redis_queues, imported with the first use of Redis: it imports redis (above)."""
        from .adapters import redis_queues

        return redis_queues

    @cached_property
    def validation_queue(self):
        """The Horn-type queues (their Lua scripts registered once per process)."""
        return self.redis_queues.ValidationQueue(self.redis)

    def publish(self, notice: str) -> None:
        """Tell open workstations something changed (Redis pub/sub, a notice of core/notices.py).
        Never fails the caller: the change is committed already, and screens reload when opened."""
        try:
            self.redis_queues.send_all_settles()  # a claim's notice waiting to ride on a pop goes first: notices keep their order
            self.redis.publish(CHANNEL, notice)
        except Exception as exc:  # noqa: BLE001 - Redis away: the screens reload when it is back
            logging.getLogger(__name__).debug("a live notice was not sent: %s", exc)

    def publish_all(self, notices: list[str]) -> None:
        """`publish` for many notices, in order: one Redis command a thousand of them (a script that
        publishes each; a pipeline's commands cost the client as much to pack as one round trip each)."""
        try:
            self.redis_queues.send_all_settles()
            for start in range(0, len(notices), 1000):
                self._publish_each(keys=[CHANNEL], args=notices[start:start + 1000])
        except Exception as exc:  # noqa: BLE001 - Redis away: the screens reload when it is back
            logging.getLogger(__name__).debug("live notices were not sent: %s", exc)

    @cached_property
    def _publish_each(self):
        return self.redis.register_script("for i = 1, #ARGV do redis.call('PUBLISH', KEYS[1], ARGV[i]) end return #ARGV")

    def notify(self, entity: str, **shape) -> None:
        """A notice for a change that is no one entity's move (a queue rebuilt, say)."""
        self.publish(shaped(entity, **shape))

    # -- LLM --------------------------------------------------------------------------------
    @cached_property
    def llm(self):
        """The chat-completions client, kept for the process (None: the built-in generator)."""
        if not self.settings.llm_url:
            return None
        s = self.settings
        return ChatClient(s.llm_url, s.llm_model, s.llm_api_key, s.llm_timeout, s.llm_retries)

    # -- embeddings ---------------------------------------------------------------------------
    @cached_property
    def embeddings(self):
        """The vector index's view for this process (core/services/search/embeddings.py): its embedder is
        loaded on first use, so a command that embeds nothing never loads it."""
        from .services.search.embeddings import Embeddings  # in-function: 8 ms (load 4), for a command that embeds only

        return Embeddings(self)

    # -- graph ------------------------------------------------------------------------------
    @cached_property
    def graph_url(self) -> str:
        return self._reach("graph")

    @cached_property
    def graph(self):
        return connect_graph(self.graph_url, self.settings.graph_user, self.settings.graph_password)

    # -- outages ------------------------------------------------------------------------------
    _CLIENTS = {"postgres": ("database_url", "db", "checkpoint_db"),
                "redis": ("redis_url", "redis", "validation_queue"),
                "graph": ("graph_url", "graph")}

    def reconnect(self, part: str) -> bool:
        """After `part` failed: look where it is now, and drop this process's clients of it when it
        is another server (its URL changed, or an embedded one was started again), so the next use
        connects afresh: a pool that kept trying a dead server backs off for seconds between tries.
        An embedded server that died is started again on its socket with its credential, so its URL
        stays the same; one an operator stopped is left stopped (ServiceUnavailable). True when the
        same server is where it was."""
        names = self._CLIENTS[part]
        before = self.__dict__.get(names[0])
        url = embedded.ensure(self.settings, part, start_stopped=False)
        server = embedded.server_pid(self.settings, part)
        if url == before and server == self._servers.get(part):
            return True
        for name in names[1:]:
            client = self.__dict__.pop(name, None)
            if client is not None:
                try:
                    client.close()
                except Exception as exc:  # noqa: BLE001 - a broken client of a server that moved
                    logging.getLogger(__name__).debug("closing the old %s client: %s", part, exc)
        self.__dict__[names[0]] = url
        self._servers[part] = server
        return False

    def close(self) -> None:
        for name in ("checkpoint_db", "db", "graph", "llm", "embeddings", "validation_queue", "redis"):
            if self.__dict__.get(name) is not None:
                try:
                    self.__dict__[name].close()
                except Exception as exc:  # noqa: BLE001 - closing a client of a server already gone
                    logging.getLogger(__name__).debug("closing the %s client: %s", name, exc)


class _Lazy:
    """A Context attribute made on its first use by whoever holds this (a transaction, for the
    embeddings): a command that never needs it never makes it."""

    def __init__(self, ctx: Context, name: str):
        self._ctx, self._name = ctx, name

    def __getattr__(self, attr):
        return getattr(getattr(self._ctx, self._name), attr)


class _LazySigner:
    """Loads the signing key on the first event, so read-only commands never touch it."""

    def __init__(self, ctx: Context):
        self._ctx = ctx

    def __getattr__(self, name):
        value = getattr(self._ctx.signer, name)
        setattr(self, name, value)  # the key does not change: found directly from now on (every event)
        return value
