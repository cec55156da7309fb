"""`r2k.testing`: a pytest plugin for developers who drive r2k headlessly in their own tests
(README, "Testing your integration"; docs/architecture.md, "HTTP API"). Installed with r2k and
registered through the `pytest11` entry point, so its fixtures are there in any test run:

- `r2k_services`: PostgreSQL, Redis and the graph, embedded, in a temporary data dir, started once per
  session on first use and torn down at its end (`.settings`, `.ctx`: a Context on them);
- `r2k_user(name, role, horn_types)`: a user (made once; the same call again returns them);
- `r2k_cli(*args)`: a command run in this process with `--json`: `.code` (its exit code), `.json`
  (its document, or its error `{"error", "status", "message"}`), `.stderr`;
- `r2k_api`: an `httpx.AsyncClient` on the HTTP API in this process (`httpx.ASGITransport`), with the
  token of `r2k_api_user` (an admin named `r2k-admin` unless a test overrides that fixture);
  `r2k_token(name)` makes a token for any other user;
- `r2k_workstation(user)`: `async with r2k_workstation("alice") as pilot:` the workstation under
  Textual's Pilot;
- `r2k_worker()`: runs the queued RQ jobs (generation, graph, webhooks) to completion, in this process.

Nothing starts when the plugin loads: servers start only for a test that asks for `r2k_services`
(itself or through another of these fixtures). Their names all begin with `r2k_`, so they meet no
fixture of a project's own conftest.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
from dataclasses import dataclass
from typing import Any

import pytest

try:  # the async client's fixture is an async one where pytest-asyncio is installed (r2k's test extra)
    import pytest_asyncio
except ImportError:  # pragma: no cover - without it the client is made and left for the test to close
    pytest_asyncio = None

API_ADMIN = "r2k-admin"


class R2KServices:
    """The session's servers: their settings and one Context on them (made on first use)."""

    def __init__(self, settings):
        self.settings = settings
        self._ctx = None

    @property
    def ctx(self):
        if self._ctx is None:
            from r2k.core.bootstrap import bootstrap

            self._ctx = bootstrap(self.settings, pool_size=8)
        return self._ctx

    def close(self) -> None:
        if self._ctx is not None:
            self._ctx.close()
            self._ctx = None


@pytest.fixture(scope="session")
def r2k_services(tmp_path_factory):
    """Embedded PostgreSQL, Redis and graph in a temporary data dir, once per session (servers named by
    R2K_DATABASE_URL, R2K_REDIS_URL or R2K_GRAPH_URL are used instead, and left running)."""
    from r2k.core import embedded
    from r2k.core.config import get_settings

    saved = {k: os.environ.get(k) for k in ("R2K_DATA_DIR", "R2K_USER")}
    os.environ["R2K_DATA_DIR"] = str(tmp_path_factory.mktemp("r2k-data"))
    os.environ.pop("R2K_USER", None)
    get_settings.cache_clear()
    settings = get_settings()
    embedded.up(settings)
    embedded.prepare_database(settings)
    services = R2KServices(settings)
    try:
        yield services
    finally:
        services.close()
        from r2k.core import audit

        audit.wait_pending()
        embedded.purge(settings)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        get_settings.cache_clear()


@pytest.fixture
def r2k_user(r2k_services):
    """`r2k_user(name, role="validator", horn_types=())`: the user, added if new (by the system)."""
    from r2k.core.errors import Conflict
    from r2k.core.services.people import users

    def make(name: str, role: str = "validator", horn_types=()):
        try:
            users.add(r2k_services.ctx, name, role, list(horn_types))
        except Conflict:
            pass
        return users.resolve(r2k_services.ctx, name)

    return make


@dataclass
class CliResult:
    code: int
    json: Any
    stderr: str


@pytest.fixture
def r2k_cli(r2k_services):
    """`r2k_cli("--as", "alice", "queue", "claim", "--horn-type", "FACT")`: the command run in this
    process with --json; its exit code, its JSON document (or its JSON error) and its stderr."""
    from r2k.app.cli import run
    from r2k.core.config import get_settings

    def call(*args: str) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        get_settings.cache_clear()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = run(["--json", *map(str, args)])
            except SystemExit as exit_:  # --help
                code = exit_.code if isinstance(exit_.code, int) else 0
        text, said = out.getvalue().strip(), err.getvalue()
        document = None
        if text:
            document = json.loads(text)
        elif said.strip().splitlines() and said.strip().splitlines()[-1].startswith("{"):
            document = json.loads(said.strip().splitlines()[-1])
        return CliResult(code, document, said)

    return call


@pytest.fixture
def r2k_token(r2k_services):
    """`r2k_token(name)`: a new API token of that user (who must exist)."""
    from r2k.core.services.people import tokens, users

    def make(name: str) -> str:
        user = users.resolve(r2k_services.ctx, name)
        return tokens.create(r2k_services.ctx, user)["token"]  # a user may make their own

    return make


@pytest.fixture
def r2k_api_user(r2k_user) -> str:
    """Whom `r2k_api` acts as: an admin, unless a test module overrides this fixture with another name."""
    r2k_user(API_ADMIN, "admin")
    return API_ADMIN


def _client(r2k_services, token: str):
    import httpx

    from r2k.app.api import create_app

    return httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(r2k_services.ctx)),
                             base_url="http://r2k.test", headers={"Authorization": f"Bearer {token}"})


if pytest_asyncio is not None:
    @pytest_asyncio.fixture
    async def r2k_api(r2k_services, r2k_api_user, r2k_token):
        """An httpx.AsyncClient on the HTTP API in this process, acting as `r2k_api_user`."""
        async with _client(r2k_services, r2k_token(r2k_api_user)) as client:
            yield client
else:  # pragma: no cover
    @pytest.fixture
    def r2k_api(r2k_services, r2k_api_user, r2k_token):
        """An httpx.AsyncClient on the HTTP API in this process, acting as `r2k_api_user`."""
        return _client(r2k_services, r2k_token(r2k_api_user))


@pytest.fixture
def r2k_workstation(r2k_services):
    """`async with r2k_workstation("alice") as pilot:` the workstation as that user, under Pilot."""
    @contextlib.asynccontextmanager
    async def open_(user: str, size: tuple[int, int] = (120, 40)):
        from r2k.app.tui import R2KApp
        from r2k.core.bootstrap import bootstrap

        # A Context of its own: the workstation closes its Context when it exits.
        app = R2KApp(bootstrap(r2k_services.settings, pool_size=4), user, sweep_every=0)
        async with app.run_test(size=size) as pilot:
            yield pilot

    return open_


@pytest.fixture
def r2k_worker(r2k_services):
    """`r2k_worker()`: every job queued on r2k's RQ queues (generation, graph) run to completion in this
    process, as `r2k worker --burst` does; returns how many were run."""
    from r2k.core.adapters.jobs import QUEUES
    from r2k.workers import tasks
    from r2k.workers.main import R2KWorker

    def run(queues=("generation", "graph")) -> int:
        ctx = r2k_services.ctx
        names = [QUEUES[q] for q in queues]
        tasks._ctx, tasks._pid = ctx, os.getpid()
        from rq import Queue

        from r2k.core.adapters.redis_queues import send_all_settles

        send_all_settles()
        waiting = sum(Queue(name, connection=ctx.redis).count for name in names)
        try:
            R2KWorker(names, connection=ctx.redis).work(burst=True, logging_level="WARNING")
        finally:
            tasks._ctx = tasks._pid = None
        return waiting

    return run
