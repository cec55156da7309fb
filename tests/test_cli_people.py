"""The command line for people as well as scripts (docs/architecture.md, Command line): without
--json an error is one readable line on stderr, with --json the JSON error, and the exit codes are the
same; a command group given no subcommand prints its help."""
from __future__ import annotations

import argparse
import json

import pytest

from r2k.core.services.queue import candidate_views
from r2k.core.services.validation import candidates
from tests.conftest import r2k


def _groups() -> list[str]:
    from r2k.app.cli import build_parser

    top = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [name for name, sub in top.choices.items()
            if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions)]


@pytest.mark.parametrize("argv,code,line", [
    (["--as", "nobody", "candidates", "list"], 7,
     "r2k: forbidden (403): unknown user 'nobody': an admin adds users with `r2k users add NAME --role ROLE`"),
    (["--as", "root", "candidates", "show", "999"], 3, "r2k: not found (404): "),
    (["--as", "root", "candidates", "show", "abc"], 6, "r2k: invalid input (400): a candidate id is a number"),
    (["--as", "alice", "candidates", "approve", "1"], 5, "r2k: illegal transition (422): candidate 1 is PENDING"),
    (["--as", "root", "candidates", "show", "1", "--expected-version", "x"], 6, "r2k: invalid input (400): "),
    (["frobnicate"], 6, "r2k: invalid input (400): r2k: argument COMMAND: invalid choice: 'frobnicate'"),
], ids=["403", "404", "400", "422", "400-usage", "unknown-command"])
def test_an_error_is_one_readable_line_with_its_exit_code(ctx, people, argv, code, line):
    candidates.add(ctx, people["root"], "Who opens the gate?", "The yard lead.", "FACT")
    result = r2k(*argv)
    assert result.returncode == code, result.stderr
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(line), result.stderr
    assert not result.stderr.lstrip().startswith("{")
    assert candidate_views.get(ctx, 1)["state"] == "PENDING"  # and nothing changed


@pytest.mark.parametrize("before", [True, False], ids=["json-first", "json-last"])
def test_with_json_an_error_is_the_json_error(ctx, people, before):
    argv = ["--as", "nobody", "candidates", "list"]
    result = r2k(*(["--json", *argv] if before else [*argv, "--json"]))
    assert result.returncode == 7 and result.stdout == ""
    error = json.loads(result.stderr)
    assert error == {"error": "Forbidden", "status": 403, "message": error["message"]}
    assert "unknown user 'nobody'" in error["message"]


def test_a_usage_error_with_json_is_the_json_error(ctx):
    result = r2k("--json", "candidates", "show")
    assert result.returncode == 6
    assert json.loads(result.stderr) == {"error": "InvalidInput", "status": 400, "message":
                                         "r2k candidates show: the following arguments are required: id"}


def test_a_message_with_controls_and_newlines_stays_one_safe_line(ctx, people):
    given = "12\x1b[2J\nsecond line\u202e"
    result = r2k("--as", "root", "candidates", "show", given)
    assert result.returncode == 6
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "\x1b" not in result.stderr and "\u202e" not in result.stderr
    assert "12\\x1b[2J\\nsecond line\\u202e" in result.stderr


def test_a_service_outage_is_one_line_in_a_real_process(tmp_path):
    env = {"R2K_DATABASE_URL": "postgresql://r2k:s3cret@127.0.0.1:1/r2k", "R2K_DATA_DIR": str(tmp_path)}
    result = r2k("--as", "root", "candidates", "list", env=env)
    assert result.returncode == 8, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("r2k: service unavailable (503): "), result.stderr
    assert "s3cret" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("group", _groups())
def test_a_group_without_a_subcommand_prints_its_help(group):
    result = r2k(group)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: r2k {group} ")
    assert "COMMAND" in result.stdout and result.stderr == ""


def test_the_groups_include_those_people_type_first():
    assert {"candidates", "grey", "registry", "workitems", "queue", "users"} <= set(_groups())


def test_no_command_at_all_is_still_a_400(ctx):
    result = r2k("--json")
    assert result.returncode == 6
    assert "no command given" in json.loads(result.stderr)["message"]
