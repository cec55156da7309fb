"""Generated bad input against every command of the CLI: whatever is typed, a command ends with
0 or a typed error (3, 4, 5, 6, 7), never an internal error (1) nor a service down (8, with the
services up), and a command that fails changes nothing. Whatever file it is given (a FIFO, a device,
a folder, a socket, a file of gigabytes, bytes that are not text) it neither hangs nor reads it whole;
whatever R2K_* settings it runs under, a bad one is the one line that names it (exit 6).

The commands come from the parser itself (`app.cli.build_parser()`), so a new command or option
is fuzzed without being listed here. Each example is one command run in-process (`app.cli.run`)
against one world that the examples share and grow: seeded users, candidates, an answer, a grey
entry and a work item, so ids and states are there to hit. Hypothesis runs derandomized, so CI
repeats the same examples; every failure it found became a test in tests/test_bad_input.py.
"""
from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import resource
import socket
import time
from contextlib import redirect_stderr, redirect_stdout
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from pydantic import ValidationError

from r2k.core.config import Settings
from r2k.core.domain import limits
from r2k.core.domain.files import kind_at
from r2k.core.services.answering import workitems
from r2k.core.services.answers import registry
from r2k.core.services.grey_entries import grey
from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates
from tests.conftest import TABLES, error_of, within

# Commands that block or start things; `demo` is run with --no-tui only.
SKIPPED = {("worker",), ("services", "up"), ("services", "down"), ("db", "upgrade"),
           ("events", "tail"),  # --follow streams until interrupted
           ("serve", "ssh"), ("serve", "web"),  # servers: until stopped (their bad input: test_ssh, test_web)
           ("serve", "api")}  # its bad input: tests/test_api.py
ALLOWED = {0, 3, 4, 5, 6, 7}
USERS = ["root", "alice", "bob", "vera", "sam"]

# Derandomized for CI; R2K_FUZZ_EXAMPLES=2000 R2K_FUZZ_RANDOM=1 explores further by hand.
FUZZ = settings(max_examples=int(os.environ.get("R2K_FUZZ_EXAMPLES", "600")), deadline=timedelta(seconds=20),
                derandomize=not os.environ.get("R2K_FUZZ_RANDOM"), database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])


def leaves(parser: argparse.ArgumentParser, path: tuple = ()):
    """Every leaf command with its parser, as test_foundation walks them."""
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for action in subcommands:
        for name, sub in action.choices.items():
            yield from leaves(sub, (*path, name))
    if not subcommands and path:
        yield path, parser


def commands() -> list[tuple[tuple, argparse.ArgumentParser]]:
    from r2k.app.cli import build_parser

    return [(path, parser) for path, parser in leaves(build_parser()) if path not in SKIPPED]


COMMANDS = commands()


# ----------------------------------------------------------------------------- what is typed

CHARACTERS = st.characters(codec=None, categories=["Cc", "Cf", "Cs", "Co", "L", "M", "N", "P", "S", "Z"])
NASTY = ["", " ", "%", "_", "%%", "\\", "\\%", "'", '"', "''", '"a" -b', "&|!():*", "a:*", "!", "\x00", "a\x00b",
         "\ud800", "x\udfff", "\x1b[2J", "\u202e", "\n", "\r\n\t", "-", "--", "-1", "NaN", "null", "{}", "[]",
         "ALL", "FACT", "pending", "PENDING", "Escalated", "alice", "root", "sam", "caf\xe9", "日本語"]
HUGE = [limits.QUESTION + 1, limits.REASON + 1, limits.QUERY + 1, limits.ANSWER + 1, 200_000]
# Ordinary values too, so that commands get past their first check and reach the state machines.
PLAIN = ["gate", "Who opens the gate?", "The yard lead opens the gate at six.", "policy changed", "sam", "FACT",
         "RULE,FACT", "APPROVED,DISPUTED", "Pending", "UnderReview", "cameras", "backups kept", "validator",
         "x" * limits.QUESTION, "first then " * 1_800, "\n" * 1_999 + "1. x"]


def texts() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(PLAIN),
        st.sampled_from(NASTY),
        st.text(CHARACTERS, max_size=40),
        st.builds(lambda n, c: c * n, st.sampled_from(HUGE), st.sampled_from(["x", "word ", "\x00", "%", "é-ü "])),
        st.builds(lambda a, b: a + b, st.sampled_from(NASTY), st.text(CHARACTERS, max_size=10)),
    )


def numbers() -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(-3, 12).map(str),
        st.integers().map(str),
        st.integers(-2 ** 70, 2 ** 70).map(str),
        st.sampled_from(["2147483648", "99999999999999999999", "-0", "+5", " 5 ", "5\x00", "1e3", "0x10", "1_000",
                         "١٢", "9" * 5_000, "1.5", "inf", "nan", "", "abc", "--1"]),
        st.floats().map(str),
        texts(),
    )


def ids() -> st.SearchStrategy[str]:
    return st.one_of(st.integers(1, 8).map(str), numbers())


def json_texts() -> st.SearchStrategy[str]:
    """JSON documents (--metadata) whose strings and numbers are the nasty ones: lone surrogates, NULs,
    NaN, the infinities, numbers too large to be finite; and texts that are not JSON."""
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(), texts())
    documents = st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from([
            "reviewer_ids", "ai_confidence_score", "flagged_claims", "version", "reason", "note", "body", "claim",
            "kind", "\u0000", "\ud800", "x"]), inner, max_size=4)), max_leaves=12)

    def dumped(value) -> str:  # NaN and the infinities as Python's json writes them, which it reads back
        return json.dumps(value, allow_nan=True)

    return st.one_of(documents.map(dumped), texts(),
                     st.sampled_from(['{"ai_confidence_score": NaN}', '{"ai_confidence_score": 1e999}',
                                      '{"ai_confidence_score": -Infinity}', '{"note": "\\u0000"}',
                                      '{"note": "\\ud800"}', '{"reviewer_ids": ["alice", "alice"]}',
                                      '{"reviewer_ids": ["alice", " alice"]}', '{"flagged_claims": [NaN]}']))


class Files:
    """Files an example names, written into the test's tmp dir: binary, NUL, deep JSON, a huge
    single line, too large, Markdown and JSON Lines with generated text, names not UTF-8; and what is
    no regular file to read: a FIFO, devices, a folder, a socket, a sparse file of gigabytes."""

    SUFFIXES = [".md", ".txt", ".jsonl", ".markdown", ".pdf", ""]
    SPECIAL = ["fifo", "/dev/zero", "/dev/urandom", "/dev/null", "folder", "socket", "huge"]

    def __init__(self, root: Path):
        self.root, self.count = root, itertools.count()

    def special(self, kind: str) -> str:
        if kind.startswith("/dev/"):
            return kind
        folder = self.root / f"ex{next(self.count)}"
        folder.mkdir(parents=True)
        path = folder / kind
        if kind == "fifo":
            os.mkfifo(path)  # a read waits for a writer for ever
        elif kind == "folder":
            path.mkdir()
        elif kind == "socket":
            listener = socket.socket(socket.AF_UNIX)
            listener.bind(str(path))
            listener.close()
        else:
            with open(path, "wb") as handle:  # sparse: gigabytes that take no room
                handle.truncate(5 * 2 ** 30)
        return str(path)

    def contents(self) -> st.SearchStrategy[bytes]:
        text = texts().map(lambda t: t.encode("utf-8", "surrogatepass"))
        return st.one_of(
            st.binary(max_size=300),
            text,
            st.builds(lambda t: b"# Notes\n\n" + t + b"\x00\n\nThe gate closes at ten every night.\n", text),
            st.sampled_from([b"[" * 100_000 + b"]" * 100_000, b"{\"a\":" * 70 + b"1" + b"}" * 70,
                             b'{"question": "' + b"[" * 100 + b'", "answer": "Deep inside a string is fine."}',
                             b"word " * 300_000, b"a" * (limits.DOCUMENT_BYTES + 1), b"\xed\xa0\x80 surrogate",
                             b"# " + b" " * 30_000 + b"x\n\nThe gate closes at ten every night.\n"]),
            st.builds(lambda q, a: (json.dumps({"question": q, "answer": a}) + "\n").encode(), texts(), texts()),
            st.builds(lambda h, p: f"# Handbook\n\n## {h}\n\n{p}\n".encode("utf-8", "surrogatepass"), texts(),
                      texts()),
        )

    def paths(self) -> st.SearchStrategy[str]:
        return st.one_of(
            st.sampled_from(self.SPECIAL).map(self.special),  # first: the branch drawn most
            st.builds(self.write, self.contents(), st.sampled_from(self.SUFFIXES),
                      st.sampled_from(["doc", "caf\udce9", "a b", "-x", "%"])),
            st.builds(self.folder, st.lists(st.tuples(self.contents(), st.sampled_from(self.SUFFIXES)), max_size=4)),
            # Never a real folder: a name under one that does not exist (so ".." cannot climb out).
            texts().map(lambda t: str(self.root / "nowhere" / t)),
        )

    def write(self, content: bytes, suffix: str, stem: str) -> str:
        folder = self.root / f"ex{next(self.count)}"
        folder.mkdir(parents=True)
        path = folder / f"{stem}{suffix}"
        path.write_bytes(content)
        return str(path)

    def folder(self, files: list[tuple[bytes, str]]) -> str:
        folder = self.root / f"ex{next(self.count)}"
        folder.mkdir(parents=True)
        for n, (content, suffix) in enumerate(files):
            (folder / f"f{n}{suffix}").write_bytes(content)
        os.mkfifo(folder / "pipe.md")  # a walk reads regular files only
        return str(folder)


def names_a_file(action: argparse.Action) -> bool:
    return action.dest in ("paths", "anchor") or action.dest.endswith("_file") or action.metavar in ("FILE", "PATH")


def value_for(action: argparse.Action, files: Files) -> st.SearchStrategy[str]:
    if action.choices:
        return st.one_of(st.sampled_from(sorted(action.choices)), texts())
    if getattr(action.type, "__name__", "") == "whole number":
        return numbers()
    if action.dest == "id":
        return ids()
    if names_a_file(action):
        return files.paths()
    if action.metavar == "JSON":
        return json_texts()
    if action.dest in ("as_user", "assignee", "claimed_by"):
        return st.one_of(st.sampled_from(USERS), texts())
    return texts()


# The commands that take a file: a few of many, so they get a test of their own too (below).
FILE_COMMANDS = [(path, parser) for path, parser in COMMANDS if any(names_a_file(a) for a in parser._actions)]


@st.composite
def argvs(draw, files: Files, commands=COMMANDS, files_given: bool = False) -> list[str]:
    """A command line of one of `commands`; with `files_given`, every option that names a file is given."""
    path, parser = draw(st.sampled_from(commands))
    argv = ["--as", draw(st.one_of(st.sampled_from(USERS), texts()) if draw(st.integers(0, 9)) == 0
                         else st.sampled_from(USERS)), *path]
    if path == ("demo",):
        argv.append("--no-tui")
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.dest in ("as_user", "no_tui"):
            continue
        if not action.option_strings:  # a positional: always given (nargs + or ? take one or more)
            count = draw(st.integers(1, 3)) if action.nargs == "+" else 1
            argv += [draw(value_for(action, files)) for _ in range(count)]
            continue
        if not (action.required or files_given and names_a_file(action) or draw(st.booleans())):
            continue
        if action.nargs == 0:  # a flag
            argv.append(action.option_strings[0])
        else:
            argv += [action.option_strings[0], draw(value_for(action, files))]
    return argv


# ----------------------------------------------------------------------------- the world

def run(argv: list[str]) -> tuple[int, str, str]:
    from r2k.app.cli import run as cli_run

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli_run(argv)
    return code, out.getvalue(), err.getvalue()


def counts(ctx) -> dict:
    with ctx.db.read() as tx:
        row = tx.one("SELECT " + ", ".join(f"(SELECT count(*) FROM {t}) AS {t}" for t in TABLES))
    return dict(row)


def seed(ctx, people) -> None:
    """Something of everything, in states the commands act on."""
    for n, (question, text, horn) in enumerate([
            ("Who opens the gate?", "The yard lead opens the gate at six.", "FACT"),
            ("When do trucks wait?", "If a truck is late, it waits in lane three.", "RULE"),
            ("What is forbidden at the dock?", "Nobody may smoke on the dock.", "CONSTRAINT"),
            ("How is a pallet wrapped?", "1. Stack it.\n2. Wrap it.\n3. Label it.", "PROCEDURE"),
            ("Who signs refunds?", "The support lead signs refunds.", "FACT")]):
        candidates.add(ctx, people["root"], question, text, horn)
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    answer = candidates.approve(ctx, people["alice"], claimed["id"])["answer"]
    claims.claim_next(ctx, people["alice"], "FACT")
    registry.dispute(ctx, people["bob"], answer["id"], "the gate opens at seven now")
    grey.add(ctx, people["sam"], "Who owns the yard cameras?", "raised in the audit")
    grey.add(ctx, people["sam"], "Is 100% of the yard lit?")
    workitems.create(ctx, people["sam"], "How long are backups kept?")


STATS = {"examples": 0, "codes": {}, "given": {}}


@FUZZ
@given(data=st.data())
def test_no_input_gives_an_internal_error_and_a_failure_changes_nothing(ctx, people, tmp_path_factory, data):
    if not STATS["examples"]:
        seed(ctx, people)
        STATS["started"] = time.monotonic()
    files = Files(tmp_path_factory.mktemp("fuzz"))
    argv = data.draw(argvs(files), label="argv")
    ran(ctx, argv)


@settings(FUZZ, max_examples=int(os.environ.get("R2K_FUZZ_FILE_EXAMPLES", "150")))
@given(data=st.data())
def test_no_file_given_hangs_or_is_read_whole(ctx, people, tmp_path_factory, data):
    if not STATS["examples"]:
        seed(ctx, people)
        STATS["started"] = time.monotonic()
    files = Files(tmp_path_factory.mktemp("files"))
    ran(ctx, data.draw(argvs(files, FILE_COMMANDS, files_given=True), label="argv"))


def ran(ctx, argv: list[str]) -> tuple[int, str]:
    """Run one example: it ends in time, with an allowed exit, one error line, nothing read whole,
    and, when it failed, nothing changed."""
    before = counts(ctx)
    memory = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    said = [a if len(a) <= 100 else f"{a[:60]!r}… ({len(a):,} characters)" for a in argv]
    with within(60, f"r2k {said}"):  # a FIFO read would wait for ever
        code, out, err = run(argv)
    STATS["examples"] += 1
    STATS["codes"][code] = STATS["codes"].get(code, 0) + 1
    for kind in {kind_at(a) for a in argv if len(a) < 4_096 and os.sep in a} - {None, "a regular file"}:
        STATS["given"][kind] = STATS["given"].get(kind, 0) + 1
    assert code in ALLOWED, f"r2k {said} exited {code}: {err[-2000:]}"
    assert "Traceback" not in err, err[-2000:]
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - memory
    assert grown < 256 * 1024, f"r2k {said} grew by {grown:,} KB: it read something whole"  # /dev/zero: GBs
    message = ""
    if code:
        shape = error_of(err)  # the JSON error with --json, else the one readable line
        assert set(shape) == {"error", "status", "message"} and shape["status"] != 500, err[-2000:]
        assert counts(ctx) == before, f"r2k {said} failed ({code}) but changed the data"
        message = shape["message"]
    return code, message


# ----------------------------------------------------------------------------- the environment

NUMBERS = [name for name, info in Settings.model_fields.items() if info.annotation in (int, float)]
PATHS = ["data_dir", "signing_key_file", "trusted_keys"]


def setting_values(name: str, files: Files) -> st.SearchStrategy[str]:
    """Values for R2K_<NAME>. A data dir and a signing key are drawn bad only: a good other one would
    start other servers, or sign events that the shared world's `audit verify` does not trust."""
    bad_paths = st.one_of(st.sampled_from(["", " ", "x" * 4_097, "/dev/null", "/dev/zero"]),
                          st.sampled_from(["fifo", "socket", "huge"]).map(files.special))
    if name == "data_dir":
        return st.one_of(bad_paths, st.builds(files.write, files.contents(), st.just(""), st.just("dir")))
    if name == "signing_key_file":  # a folder, or a file whose bytes are no key (refused at the first event)
        return st.one_of(bad_paths, st.just("folder").map(files.special),
                         st.builds(files.write, files.contents(), st.just(".pem"), st.just("key")))
    if name == "trusted_keys":
        return st.one_of(bad_paths, files.paths())
    return st.one_of(numbers(), st.floats().map(repr),
                     st.sampled_from(["1e999", "-1e999", "1e-300", "0", "-0", "0.0", "1", "  7  ", "2e9", "+3",
                                      "10_000", "1" + "0" * 400, "0.5", "86400", "604800", "604801"]))


def in_an_environment(value: str) -> bool:
    """What an environment variable can hold: no NUL, and bytes (lone surrogates only as undecodable ones)."""
    try:
        os.fsencode(value)
    except UnicodeError:
        return False
    return "\x00" not in value


ENV_FUZZ = settings(FUZZ, max_examples=int(os.environ.get("R2K_FUZZ_ENV_EXAMPLES", "150")))


@ENV_FUZZ
@given(data=st.data())
def test_no_setting_gives_an_internal_error_and_a_bad_one_is_named(ctx, people, tmp_path_factory, data):
    from r2k.core.config import get_settings

    if not STATS["examples"]:
        seed(ctx, people)
        STATS["started"] = time.monotonic()
    files = Files(tmp_path_factory.mktemp("env"))
    names = data.draw(st.lists(st.sampled_from(NUMBERS + PATHS), min_size=1, max_size=3, unique=True),
                      label="settings")
    env = {f"R2K_{n.upper()}": data.draw(setting_values(n, files).filter(in_an_environment), label=n)
           for n in names}
    argv = data.draw(argvs(files), label="argv")
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        try:
            Settings()
            refused = False
        except ValidationError:
            refused = True
        get_settings.cache_clear()  # the command reads them as a new process would
        code, message = ran(ctx, argv)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        get_settings.cache_clear()
    if refused and parses(argv):  # one line naming one of them, before anything started
        assert code == 6 and any(message.startswith(f"{k} is ") for k in env), (env, message)
    elif refused:  # a usage error is said first: help and usage need no settings
        assert code == 6, (env, message)


def parses(argv: list[str]) -> bool:
    from r2k.app.cli import parser
    from r2k.core.errors import InvalidInput

    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            parser(argv).parse_args(argv)
    except (InvalidInput, SystemExit):
        return False
    return True


@pytest.fixture(scope="module", autouse=True)
def said_what_it_ran():
    yield
    if STATS["examples"]:
        took = time.monotonic() - STATS.get("started", time.monotonic())
        given = ", ".join(f"{n} {kind}" for kind, n in sorted(STATS["given"].items()))
        print(f"\nfuzz: {STATS['examples']} commands in {took:.1f} s, exit codes {dict(sorted(STATS['codes'].items()))}; "
              f"given {given or 'no FIFO, device, folder or socket'}")
