"""The foundation: signed event log, audit and replay, idempotency, users and
authority, the CLI's contract, the embedded runtime, the import graph and the wheel."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import psycopg
import pytest

from r2k.core import audit, context
from r2k.core.errors import Conflict, Forbidden
from r2k.core.services.grey_entries import grey
from r2k.core.services.people import users
from r2k.core.services.queue import candidate_views, claims, queue_index
from r2k.core.services.validation import candidates
from tests.conftest import ROOT, error_of, on_database, r2k, r2k_json


def event_count(ctx) -> int:
    with ctx.db.read() as tx:
        return tx.scalar("SELECT count(*) FROM events")


# ----------------------------------------------------------------------------- event log

@pytest.mark.compat
@pytest.mark.parametrize("statement", [
    "UPDATE events SET actor = 'mallory'",
    "DELETE FROM events",
    "TRUNCATE events",
])
def test_events_cannot_be_rewritten_by_application_statements(ctx, people, statement):
    before = event_count(ctx)
    # The app's own role lacks the privilege (embedded default); a configured superuser URL meets the trigger.
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only|permission denied"):
        with ctx.db.begin() as tx:
            tx.execute(statement)
    assert event_count(ctx) == before


def test_registry_answers_are_never_deleted_nor_rewritten(ctx, people):
    candidates.add(ctx, people["root"], "Q?", "A plain fact.", "FACT")
    claims.claim_next(ctx, people["alice"], "FACT")
    answer = candidates.approve(ctx, people["alice"], 1)["answer"]
    for statement in ("DELETE FROM approved_answers", "UPDATE approved_answers SET text = 'changed'"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            with ctx.db.begin() as tx:
                tx.execute(statement)
    with ctx.db.read() as tx:
        assert tx.one("SELECT text FROM approved_answers WHERE id = %s", (answer["id"],))["text"] == "A plain fact."


@pytest.mark.compat
def test_audit_verify_names_exactly_the_tampered_event(ctx, people, superuser):
    for i in range(3):
        candidates.add(ctx, people["root"], f"Q{i}?", f"Fact {i}.", "FACT")
    claims.claim_next(ctx, people["alice"], "FACT")
    assert r2k_json("audit", "verify", "--as", "root")["ok"] is True

    with ctx.db.read() as tx:
        victim = tx.one("SELECT id, aggregate_type, aggregate_id FROM events WHERE aggregate_type = 'candidate' "
                        "ORDER BY id LIMIT 1 OFFSET 1")
    superuser("ALTER TABLE events DISABLE TRIGGER events_append_only")
    superuser("UPDATE events SET payload = jsonb_set(payload, '{fields}', '{\"question\": \"forged\"}') "
              "WHERE id = %s", (victim["id"],))
    superuser("ALTER TABLE events ENABLE TRIGGER events_append_only")

    result = r2k("--json", "audit", "verify")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert [b["event_id"] for b in report["broken"]] == [victim["id"]]
    assert "altered" in report["broken"][0]["problem"]


def test_audit_verify_finds_a_forged_signature_and_a_broken_link(ctx, people, superuser):
    candidates.add(ctx, people["root"], "Q?", "Fact.", "FACT")
    claims.claim_next(ctx, people["alice"], "FACT")
    with ctx.db.read() as tx:
        first, second = tx.all("SELECT id FROM events WHERE aggregate_type = 'candidate' ORDER BY seq")
    superuser("ALTER TABLE events DISABLE TRIGGER events_append_only")
    superuser("UPDATE events SET signature = %s WHERE id = %s", (b"\x00" * 64, second["id"]))
    superuser("ALTER TABLE events ENABLE TRIGGER events_append_only")
    report = audit.verify(ctx.db)
    assert [(b["event_id"], b["problem"]) for b in report["broken"]] == [(second["id"], "signature does not verify")]


def test_replay_rebuilds_the_projections_and_reports_a_difference(ctx, people):
    for i in range(3):
        candidates.add(ctx, people["root"], f"Q{i}?", f"Fact {i}.", "FACT")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    candidates.revise(ctx, people["alice"], claimed["id"], "Revised fact.")
    report = r2k_json("replay", "--verify")
    assert report["ok"] is True and report["rows"] > 0

    with ctx.db.begin() as tx:  # a change made behind the engine's back
        tx.execute("UPDATE candidates SET state = 'REJECTED' WHERE id = 2")
    result = r2k("--json", "replay", "--verify")
    assert result.returncode == 1
    differences = json.loads(result.stdout)["differences"]
    assert differences == [{"aggregate_type": "candidate", "id": "2", "column": "state",
                            "from_events": "PENDING", "in_table": "REJECTED"}]


# ----------------------------------------------------------------------------- idempotency, locking

@pytest.mark.compat
def test_idempotency_key_returns_the_first_result_and_changes_nothing(ctx, people):
    first = candidates.add(ctx, people["root"], "Q?", "Fact.", "FACT", idempotency_key="k-1")
    count = event_count(ctx)
    again = candidates.add(ctx, people["root"], "Q?", "Fact.", "FACT", idempotency_key="k-1")
    assert again == first
    assert event_count(ctx) == count
    assert queue_index.queue(ctx).length("FACT") == 1

    with pytest.raises(Conflict, match="different request"):
        candidates.add(ctx, people["root"], "Other?", "Other fact.", "FACT", idempotency_key="k-1")
    assert event_count(ctx) == count


def test_an_idempotency_key_holds_for_24_hours_and_then_starts_a_new_window(ctx, people):
    root = people["root"]
    first = candidates.add(ctx, root, "Q?", "Fact.", "FACT", idempotency_key="k-day")

    def aged(hours: float) -> None:  # the key's row as if it were used `hours` ago
        with ctx.db.begin() as tx:
            tx.execute("UPDATE idempotency_keys SET created_at = now() - make_interval(secs => %s) "
                       "WHERE actor = 'root' AND key = 'k-day'", (hours * 3600,))

    aged(23.9)  # within the window: the first result, nothing new, another request a 409
    count = event_count(ctx)
    assert candidates.add(ctx, root, "Q?", "Fact.", "FACT", idempotency_key="k-day") == first
    with pytest.raises(Conflict, match="different request"):
        candidates.add(ctx, root, "Other?", "Other fact.", "FACT", idempotency_key="k-day")
    assert event_count(ctx) == count

    aged(24.1)  # past it: the key is free again, and the request is made anew
    again = candidates.add(ctx, root, "Q?", "Fact.", "FACT", idempotency_key="k-day")
    assert again["id"] != first["id"] and event_count(ctx) > count
    assert queue_index.queue(ctx).length("FACT") == 2
    # The new window starts at that use: a repeat now returns the new result.
    assert candidates.add(ctx, root, "Q?", "Fact.", "FACT", idempotency_key="k-day") == again


def test_idempotent_decision_through_the_cli(ctx, people):
    candidates.add(ctx, people["root"], "Q?", "Fact.", "FACT")
    claims.claim_next(ctx, people["alice"], "FACT")
    first = r2k_json("candidates", "approve", "1", "--as", "alice", "--idempotency-key", "press-7")
    count = event_count(ctx)
    second = r2k_json("--as", "alice", "candidates", "approve", "1", "--idempotency-key", "press-7")
    assert second == first and event_count(ctx) == count
    clash = r2k("--as", "alice", "candidates", "reject", "1", "--reason", "x", "--idempotency-key", "press-7")
    assert clash.returncode == 4 and error_of(clash)["status"] == 409


def test_an_idempotency_key_is_its_users_own(ctx, people):
    # As Stripe scopes keys per account: a key one user chose never makes another's request a 409,
    # nor hands them the first user's stored result.
    sams = grey.add(ctx, people["sam"], "Who owns the cameras?", idempotency_key="press-1")
    count = event_count(ctx)
    roots = grey.add(ctx, people["root"], "Who owns the cameras?", idempotency_key="press-1")
    assert roots["id"] != sams["id"] and roots["created_by"] == "root" and event_count(ctx) > count
    other = r2k_json("--as", "alice", "grey", "add", "--subject", "Something else", "--idempotency-key", "press-1")
    assert other["id"] not in (sams["id"], roots["id"]) and other["subject"] == "Something else"
    # Each user's repeat is their own first result, and changes nothing.
    count = event_count(ctx)
    assert grey.add(ctx, people["sam"], "Who owns the cameras?", idempotency_key="press-1") == sams
    assert r2k_json("--as", "root", "grey", "add", "--subject", "Who owns the cameras?",
                    "--idempotency-key", "press-1") == json.loads(json.dumps(roots, default=str))
    assert event_count(ctx) == count
    # Another request under one's own key is still a 409, and only for that user.
    with pytest.raises(Conflict, match="different request"):
        grey.add(ctx, people["sam"], "Another subject", idempotency_key="press-1")
    assert event_count(ctx) == count
    with ctx.db.read() as tx:
        assert tx.all("SELECT actor, key FROM idempotency_keys ORDER BY actor") == [
            {"actor": "alice", "key": "press-1"}, {"actor": "root", "key": "press-1"}, {"actor": "sam", "key": "press-1"}]


def test_a_stale_expected_version_is_a_409_through_the_cli(ctx, people):
    candidates.add(ctx, people["root"], "Q?", "Fact.", "FACT")
    result = r2k("--as", "alice", "candidates", "claim", "1", "--expected-version", "5")
    assert result.returncode == 4
    assert error_of(result) == {"error": "Conflict", "status": 409,
                                "message": error_of(result)["message"]}
    assert "version 1, not 5" in error_of(result)["message"]
    assert candidate_views.get(ctx, 1)["state"] == "PENDING"


# ----------------------------------------------------------------------------- users and authority

def test_users_add_and_list(ctx):
    added = r2k_json("users", "add", "ada", "--role", "validator", "--horn-types", "fact,Rule")
    assert (added["name"], added["role"], added["horn_types"], added["version"]) == ("ada", "validator",
                                                                                   ["FACT", "RULE"], 1)
    r2k_json("users", "add", "sam", "--role", "specialist")
    listed = r2k_json("users", "list")
    assert [(u["name"], u["role"]) for u in listed] == [("ada", "validator"), ("sam", "specialist")]


@pytest.mark.parametrize("args,status,words", [
    (["users", "add", "ada", "--role", "validator"], 400, "needs --horn-types"),
    (["users", "add", "ada", "--role", "validator", "--horn-types", "FACT,OPINION"], 400, "unknown Horn type"),
    (["users", "add", "sam", "--role", "specialist", "--horn-types", "FACT"], 400, "only validators"),
    (["users", "add", "bad name", "--role", "admin"], 400, "user name"),
    (["users", "add", "x", "--role", "emperor"], 400, "invalid choice"),
])
def test_bad_user_input_is_a_400_and_adds_nothing(ctx, args, status, words):
    result = r2k(*args)
    assert result.returncode == 6
    error = error_of(result)
    assert error["status"] == status and words in error["message"]
    assert users.list_users(ctx) == []


def test_duplicate_user_is_a_409(ctx):
    users.add(ctx, "ada", "admin")
    with pytest.raises(Conflict):
        users.add(ctx, "ada", "specialist")
    assert [u["role"] for u in users.list_users(ctx)] == ["admin"]


@pytest.mark.compat
def test_unknown_acting_user_is_a_403_not_a_default(ctx, people):
    candidates.add(ctx, people["root"], "Q?", "Fact.", "FACT")
    result = r2k("queue", "claim", "--horn-type", "FACT", "--as", "mallory")
    assert result.returncode == 7
    assert error_of(result)["status"] == 403 and "mallory" in error_of(result)["message"]
    result = r2k("queue", "claim", "--horn-type", "FACT", env={"R2K_USER": "nobody-here"})
    assert result.returncode == 7
    assert candidate_views.get(ctx, 1)["state"] == "PENDING"
    assert queue_index.queue(ctx).length("FACT") == 1


def test_authority_is_enforced_in_core_for_every_caller(ctx, people):
    candidates.add(ctx, people["root"], "Q?", "If it rains, roads are wet.", "RULE")
    with pytest.raises(Forbidden):
        claims.claim_next(ctx, people["bob"], "RULE")  # bob holds FACT only
    with pytest.raises(Forbidden):
        claims.claim_next(ctx, people["sam"], "RULE")  # specialists do not validate
    assert queue_index.queue(ctx).length("RULE") == 1
    assert claims.claim_next(ctx, people["root"], "RULE")["state"] == "IN_REVIEW"  # admins may


# ----------------------------------------------------------------------------- CLI contract

@pytest.mark.compat
def test_json_and_as_are_accepted_before_or_after_the_command(ctx, people):
    for argv in (["--json", "--as", "alice", "queue", "stats"], ["queue", "stats", "--json", "--as", "alice"],
                 ["--as", "alice", "queue", "--json", "stats"], ["queue", "--as=alice", "stats", "--json"]):
        result = r2k(*argv)
        assert result.returncode == 0, (argv, result.stderr)
        assert [row["horn_type"] for row in json.loads(result.stdout)][:2] == ["FACT", "RULE"]


def test_illegal_transition_is_exit_5_with_json_on_stderr(ctx, people):
    candidates.add(ctx, people["root"], "Q?", "Fact.", "FACT")
    result = r2k("--json", "--as", "alice", "candidates", "approve", "1", process=True)
    assert result.returncode == 5
    assert result.stdout == ""
    error = error_of(result)
    assert error["error"] == "ValidationStateError" and error["status"] == 422
    assert "candidate 1 is PENDING" in error["message"] and "approve" in error["message"]
    assert candidate_views.get(ctx, 1)["state"] == "PENDING"


@pytest.mark.parametrize("argv,code", [
    (["frobnicate"], 6), (["candidates", "show"], 6), (["candidates", "show", "999", "--as", "root"], 3),
    (["candidates", "show", "abc", "--as", "root"], 6), (["queue", "claim", "--horn-type", "FACT", "--as", "alice"], 3),
])
def test_cli_errors_map_to_their_exit_codes(ctx, people, argv, code):
    """In a real process: the exit code and the last line of stderr are what scripts read."""
    result = r2k(*argv, process=True)
    assert result.returncode == code, result.stderr
    error = error_of(result)
    assert set(error) == {"error", "status", "message"}
    assert "Traceback" not in result.stderr


def test_the_in_process_command_line_says_what_the_process_says(ctx, people):
    """tests/conftest.py runs most commands in the test's own process (`app.cli.run`): for each kind of
    outcome (JSON, text with stored controls, a refusal, a usage error, help, an internal state read),
    the exit code, stdout and stderr are those of `python -m r2k.app`."""
    from tests.conftest import r2k_in_process, r2k_process

    candidates.add(ctx, people["root"], "Q\x1b[2J?", "Fact \x9b with \u202e controls\r\nand lines.", "FACT")
    for argv in (["--json", "--as", "root", "candidates", "show", "1"], ["--as", "root", "candidates", "show", "1"],
                 ["--as", "root", "candidates", "list"], ["--as", "alice", "candidates", "approve", "1"],
                 ["--json", "--as", "mallory", "queue", "stats"], ["candidates", "show", "abc", "--as", "root"],
                 ["frobnicate"], ["candidates", "--help"], ["--as", "root", "audit", "verify"]):
        inside, outside = r2k_in_process(*argv), r2k_process(*argv)
        assert (inside.returncode, inside.stdout, inside.stderr) == (outside.returncode, outside.stdout,
                                                                     outside.stderr), argv


def test_core_never_imports_textual():
    code = ("import pkgutil, importlib, sys, r2k.core\n"
            "for m in pkgutil.walk_packages(r2k.core.__path__, 'r2k.core.'):\n"
            "    if '.migrations.versions' in m.name or m.name.endswith('migrations.env'): continue\n"
            "    importlib.import_module(m.name)\n"
            "import r2k.workers.tasks, r2k.workers.main\n"
            "bad = sorted(n for n in sys.modules if n == 'textual' or n.startswith('textual.'))\n"
            "print(len(bad))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"


def test_a_cli_command_does_not_import_textual(ctx, people):
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "r2k.app", "--json", "--as", "root",
                             "queue", "stats"], capture_output=True, text=True, cwd=ROOT, env=os.environ)
    assert result.returncode == 0
    imported = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line]
    assert "r2k.core.services.queue.candidate_views" in imported
    assert not [m for m in imported if m == "textual" or m.startswith("textual.")]


# ----------------------------------------------------------------------------- runtime

def _env(data_dir: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("R2K_")}
    env.update(R2K_DATA_DIR=str(data_dir), **extra)
    return env


SERVERS = ("postgres", "redis", "graph")


@pytest.mark.services
def test_two_commands_starting_together_start_one_set_of_servers(tmp_path):
    data = tmp_path / "fresh"
    env = _env(data)
    procs = [subprocess.Popen([sys.executable, "-m", "r2k.app", "--json", "services", "up"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=180) for p in procs]
    try:
        assert all(p.returncode == 0 for p in procs), outs
        # The servers' rows (llm and retrieval say how generation and retrieval run, not where a server is).
        first, second = ([p for p in json.loads(o[0]) if p["name"] in SERVERS] for o in outs)
        assert [(p["name"], p["pid"], p["url"]) for p in first] == [(p["name"], p["pid"], p["url"]) for p in second]
        assert all(p["answers"] for p in first)
        # On sockets, each in its own directory of this data dir (PostgreSQL's in its cluster's).
        assert all(p["url"].startswith(("postgresql://r2k_app:***@/r2k?host=/", "unix://:***@/")) for p in first)
        assert [p["listens"] for p in first][1:] == [str(data / "redis" / "server.sock"),
                                                     str(data / "graph" / "server.sock")]
        status = json.loads(subprocess.run([sys.executable, "-m", "r2k.app", "--json", "services", "status"],
                                           cwd=ROOT, env=env, capture_output=True, text=True).stdout)
        assert [p["pid"] for p in status if p["name"] in SERVERS] == [p["pid"] for p in first]
    finally:
        subprocess.run([sys.executable, "-m", "r2k.app", "services", "down"], cwd=ROOT, env=env, capture_output=True)
    down = json.loads(subprocess.run([sys.executable, "-m", "r2k.app", "--json", "services", "status"], cwd=ROOT,
                                     env=env, capture_output=True, text=True).stdout)
    assert [(p["name"], p["answers"]) for p in down] == [("postgres", False), ("redis", False), ("graph", False)]


@pytest.mark.services
def test_a_stale_pid_file_after_a_crash_is_recovered(tmp_path):
    from r2k.core import embedded
    from r2k.core.config import Settings

    settings = Settings(data_dir=tmp_path / "crashed")
    run = embedded.run_dir(settings)
    dead = subprocess.Popen(["true"])
    dead.wait()
    socket = tmp_path / "crashed" / "redis" / "server.sock"
    (run / "redis.json").write_text(json.dumps({"pid": dead.pid, "socket": str(socket), "program": "redis-server",
                                                "secure": 1}))
    (tmp_path / "crashed" / "redis").mkdir(parents=True)
    (tmp_path / "crashed" / "redis" / "server.pid").write_text(str(dead.pid))
    try:
        url = embedded.ensure(settings, "redis")
        assert embedded.common.read_state(settings, "redis")["pid"] != dead.pid
        ok, _ = embedded.probe("redis", url, settings)
        assert ok
    finally:
        embedded.purge(settings)


class Silent:
    """A TCP address on this machine that does not answer, as a firewalled or hung host does.

    "never accepts": it listens, never accepts, and its one-place backlog is full, so the kernel
    drops a new connection's SYN and `connect()` waits. "accepts, never answers": the kernel
    completes the connection and nothing ever reads or writes on it."""

    def __init__(self, mode: str):
        import socket

        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(0 if mode == "never accepts" else 16)
        self.port = self.listener.getsockname()[1]
        self.fillers = []
        if mode == "never accepts":
            for _ in range(2):  # fills the backlog (Linux keeps backlog + 1); the second's SYN is dropped
                filler = socket.socket()
                filler.setblocking(False)
                filler.connect_ex(("127.0.0.1", self.port))
                self.fillers.append(filler)
            probe = socket.create_connection  # a connection now is not answered: the test meets a silent host
            try:
                probe(("127.0.0.1", self.port), timeout=0.5).close()
                raise AssertionError("the backlog is not full: a connection was answered")
            except TimeoutError:
                pass

    def close(self) -> None:
        for s in (*self.fillers, self.listener):
            s.close()


def _fails_fast(env: dict, args: list[str], service: str) -> float:
    """The command fails with the 503 that names the service, its password masked; its seconds."""
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "r2k.app", *args], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=30)
    took = time.monotonic() - started
    assert result.returncode == 8, result.stderr
    error = error_of(result)
    assert error["status"] == 503 and service in error["message"], error
    assert "does not answer" in error["message"], error
    assert "***" in error["message"] and "s3cret" not in result.stderr
    assert "Traceback" not in result.stderr
    return took


# README "Embedded servers": "When a configured service does not answer, commands fail with
# status 503 naming it (password masked)", after at most R2K_CONNECT_TIMEOUT seconds (README's
# settings table: "seconds to wait for a server to accept a connection"). Each command is timed
# beside the same command meeting a refused port (the start-up of a command, measured in the
# same test), and given the timeout and 2 s more. A Redis that accepts and never answers is waited
# for as long as its client's read timeout (core/context.py REDIS_READ_TIMEOUT, 5 s), which R2K_CONNECT_TIMEOUT does
# not set; PostgreSQL's connect timeout covers its whole handshake.
CONNECT_TIMEOUT = 2
REDIS_READ_TIMEOUT = context.REDIS_READ_TIMEOUT


@pytest.mark.parametrize("mode", ["never accepts", "accepts, never answers"])
def test_a_database_that_does_not_answer_fails_fast_with_503_naming_it(tmp_path, mode):
    silent = Silent(mode)
    try:
        refused = _fails_fast(_env(tmp_path / "unused", R2K_DATABASE_URL="postgresql://ops:s3cret@127.0.0.1:9/r2k"),
                              ["queue", "stats", "--as", "root"], "PostgreSQL")
        env = _env(tmp_path / "unused", R2K_DATABASE_URL=f"postgresql://ops:s3cret@127.0.0.1:{silent.port}/r2k",
                   R2K_CONNECT_TIMEOUT=str(CONNECT_TIMEOUT))
        took = _fails_fast(env, ["queue", "stats", "--as", "root"], "PostgreSQL")
    finally:
        silent.close()
    assert took < refused + CONNECT_TIMEOUT + 2, f"{took:.1f} s against {refused:.1f} s for a refused port"


@pytest.mark.parametrize("mode", ["never accepts", "accepts, never answers"])
def test_a_redis_that_does_not_answer_fails_fast_with_503_naming_it(ctx, people, tmp_path, mode):
    base = dict(R2K_DATABASE_URL=ctx.database_url, R2K_SIGNING_KEY_FILE=str(tmp_path / "key.pem"))
    silent = Silent(mode)
    try:
        refused = _fails_fast(_env(tmp_path / "unused", R2K_REDIS_URL="redis://:s3cret@127.0.0.1:9/0", **base),
                              ["queue", "reconcile", "--as", "root"], "Redis")
        env = _env(tmp_path / "unused", R2K_REDIS_URL=f"redis://:s3cret@127.0.0.1:{silent.port}/0",
                   R2K_CONNECT_TIMEOUT=str(CONNECT_TIMEOUT), **base)
        took = _fails_fast(env, ["queue", "reconcile", "--as", "root"], "Redis")
    finally:
        silent.close()
    waited = CONNECT_TIMEOUT if mode == "never accepts" else REDIS_READ_TIMEOUT
    assert took < refused + waited + 2, f"{took:.1f} s against {refused:.1f} s for a refused port"


# ----------------------------------------------------------------------------- packaging

def test_the_wheel_installs_everything_under_one_package_r2k(tmp_path):
    """The repository's folders go into the wheel as r2k.app, r2k.core, r2k.workers and r2k.styles,
    with the styles, migrations and demo corpus: `r2k` is the only top-level name it installs."""
    import shutil

    # Built from a copy: setuptools builds in the source tree, and a build/ left by an older layout
    # would be packed too.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", ".venv",
                                                                "__pycache__", ".pytest_cache", ".hypothesis"))
    # In place: the build-system's requirements come with the test extras (pyproject.toml).
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w",
                             str(tmp_path), str(source)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    wheel = next(tmp_path.glob("r2k-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    top = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert top == {"r2k"}, top
    assert {"r2k/styles/app.tcss", "r2k/styles/dashboard.tcss", "r2k/core/migrations/env.py",
            "r2k/core/migrations/script.py.mako", "r2k/core/migrations/versions/0001_initial.py",
            "r2k/core/migrations/versions/0002_oldest_pending_index.py", "r2k/core/demo/users.json",
            "r2k/app/cli.py", "r2k/app/__main__.py", "r2k/workers/tasks.py"} <= names
    assert len([n for n in names if n.startswith("r2k/core/demo/corpus/")]) >= 30
    top_level = [n for n in names if n.endswith(".dist-info/top_level.txt")]
    assert all(zipfile.ZipFile(wheel).read(n).decode().split() == ["r2k"] for n in top_level)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "r2k = r2k.app.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.fixture(scope="module")
def revision_0001(services):
    """A database on the session's server migrated only to revision 0001, made once: the template
    each test copies (CREATE DATABASE … TEMPLATE writes no checkpoint, where DROP DATABASE forces an
    immediate one, which took up to 97 s on a busy machine). The copies are dropped at the end only
    on a configured server: the embedded cluster is removed whole."""
    from r2k.core import embedded, migrations

    base = embedded.superuser_url(services)
    template = f"r2k_revision_0001_{os.getpid()}"
    with psycopg.connect(on_database(base, "postgres"), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {template}")
        admin.execute(f"CREATE DATABASE {template}")
    migrations.upgrade(on_database(base, template), "0001")
    made = [template]
    yield base, template, made
    if services.database_url:
        with psycopg.connect(on_database(base, "postgres"), autocommit=True) as admin:
            for name in reversed(made):
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def old_database(revision_0001):
    """A scratch database of its own on the same server, at revision 0001."""
    base, template, made = revision_0001
    name = f"r2k_old_revision_{os.getpid()}_{len(made)}"
    with psycopg.connect(on_database(base, "postgres"), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    made.append(name)
    return on_database(base, name)


def test_migrations_upgrade_an_existing_database_step_by_step(old_database):
    """An installation at an older revision is brought to head by `r2k db upgrade`, keeping its rows."""
    from r2k.core import migrations

    with psycopg.connect(old_database) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == "0001"
        conn.execute("INSERT INTO users (name, role, created_at, updated_at) VALUES ('ada', 'admin', now(), now())")
        conn.execute("INSERT INTO idempotency_keys (key, actor, request_hash, response, created_at) "
                     "VALUES ('press-1', 'ada', 'h', '{}', now())")
    result = subprocess.run([sys.executable, "-m", "r2k.app", "--json", "--as", "ada", "db", "upgrade"], cwd=ROOT,
                            capture_output=True,
                            text=True, env={**os.environ, "R2K_DATABASE_URL": old_database})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["revision"] == migrations.HEAD
    with psycopg.connect(old_database) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == migrations.HEAD
        assert conn.execute("SELECT name FROM users").fetchone()[0] == "ada"
        index = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'candidates_state'").fetchone()[0]
        assert "created_at" in index
        # Keys kept, and each user's own since 0012: another user may choose the same one.
        conn.execute("INSERT INTO idempotency_keys (key, actor, request_hash, response, created_at) "
                     "VALUES ('press-1', 'ben', 'h', '{}', now())")
        assert conn.execute("SELECT actor FROM idempotency_keys ORDER BY actor").fetchall() == [("ada",), ("ben",)]


def test_an_external_database_behind_the_code_is_told_to_upgrade(old_database):
    result = subprocess.run([sys.executable, "-m", "r2k.app", "users", "list"], cwd=ROOT, capture_output=True,
                            text=True, env={**os.environ, "R2K_DATABASE_URL": old_database})
    assert result.returncode == 8
    assert "r2k db upgrade" in error_of(result)["message"] and "0001" in error_of(result)["message"]


def test_a_candidates_work_item_is_found_through_an_index(ctx):
    """Every candidate view looks up the work item its escalation opened (migration 0007): by an
    index, not a read of every work item."""
    with ctx.db.read() as tx:
        tx.execute("SET LOCAL enable_seqscan = off")  # a near-empty table: ask what the plan can use
        plan = json.dumps(tx.all("EXPLAIN (FORMAT JSON) SELECT id, state FROM work_items "
                                 "WHERE candidate_id = %s ORDER BY id DESC LIMIT 1", (1,)))
    assert "work_items_candidate" in plan, plan
