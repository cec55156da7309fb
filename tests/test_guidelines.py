"""Guidelines per Horn queue: Markdown an admin writes, every version kept and signed, each decision
recording the version it was made under."""
from __future__ import annotations

import json

from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates, guidelines
from tests.conftest import error_of, r2k, r2k_json


def decide(ctx, people, question, action="approve"):
    candidates.add(ctx, people["root"], question, f"{question.rstrip('?')} is settled.", "FACT")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    if action == "reject":
        candidates.reject(ctx, people["alice"], claimed["id"], "not a fact")
    else:
        candidates.approve(ctx, people["alice"], claimed["id"])
    return claimed["id"]


def record_of(superuser, candidate_id: int) -> dict:
    return superuser("SELECT action, guidelines_version FROM validation_records WHERE candidate_id = %s",
                     (candidate_id,))[0]


def test_versions_are_kept_and_each_decision_names_the_one_in_force(ctx, people, tmp_path, superuser):
    before = decide(ctx, people, "Is dock 1 open?")
    first = tmp_path / "fact.md"
    first.write_text("# Judging a FACT\n\nIt holds unconditionally.\n")
    assert r2k_json("--as", "root", "queue", "guidelines", "FACT", "--file", str(first))["number"] == 1
    under_one = decide(ctx, people, "Is dock 2 open?", "reject")
    first.write_text("# Judging a FACT\n\nIt holds unconditionally; a date makes it a FACT of that date.\n")
    assert r2k_json("--as", "root", "queue", "guidelines", "FACT", "--file", str(first))["number"] == 2
    under_two = decide(ctx, people, "Is dock 3 open?")
    assert [record_of(superuser, c)["guidelines_version"] for c in (before, under_one, under_two)] == [None, 1, 2]
    shown = r2k("--as", "bob", "queue", "guidelines", "FACT").stdout
    assert shown.startswith("FACT guidelines, version 2 by root") and "a date makes it a FACT" in shown
    assert "a date" not in r2k_json("--as", "bob", "queue", "guidelines", "FACT", "--version", "1")["body"]
    assert [v["number"] for v in r2k_json("--as", "bob", "queue", "guidelines", "FACT", "--history")] == [2, 1]
    none = r2k("--as", "bob", "queue", "guidelines", "RULE")
    assert none.returncode == 0 and "has no guidelines yet" in none.stdout
    assert r2k("--as", "root", "replay", "--verify").returncode == 0


def test_only_an_admin_writes_and_bad_input_changes_nothing(ctx, people, tmp_path, superuser):
    good = tmp_path / "g.md"
    good.write_text("Judge by the text as it stands.\n")
    empty = tmp_path / "empty.md"
    empty.write_text("  \n")
    binary = tmp_path / "g.bin"
    binary.write_bytes(b"\xff\xfe\x00bad")
    cases = [
        (["--as", "alice", "queue", "guidelines", "FACT", "--file", str(tmp_path / "missing.md")], 7,
         "only an admin may"),
        (["--as", "root", "queue", "guidelines", "FACTS", "--file", str(good)], 6, "unknown Horn type 'FACTS'"),
        (["--as", "root", "queue", "guidelines", "FACT", "--file", str(empty)], 6, "guidelines need text"),
        (["--as", "root", "queue", "guidelines", "FACT", "--file", str(binary)], 6, "is not UTF-8 text"),
        (["--as", "root", "queue", "guidelines", "FACT", "--file", str(tmp_path)], 6, "is a folder"),
        (["--as", "root", "queue", "guidelines", "FACT", "--history", "--version", "1"], 6, "one at a time"),
        (["--as", "root", "queue", "guidelines", "FACT", "--version", "3"], 3, "no version 3 of the FACT guidelines"),
    ]
    for args, code, words in cases:
        result = r2k(*args)
        assert result.returncode == code and words in error_of(result)["message"], (args, result.stderr)
    assert superuser("SELECT count(*) AS n FROM queue_guidelines")[0]["n"] == 0
    r2k_json("--as", "root", "queue", "guidelines", "FACT", "--file", str(good))
    again = r2k("--as", "root", "queue", "guidelines", "FACT", "--file", str(good))
    assert again.returncode == 6 and "already say this" in error_of(again)["message"]
    assert superuser("SELECT count(*) AS n FROM queue_guidelines")[0]["n"] == 1


def test_stored_guidelines_are_shown_terminal_safe(ctx, people):
    guidelines.set_guidelines(ctx, people["root"], "RULE", "Judge \x1b]0;owned\x07 by the modal verb.")
    shown = r2k("--as", "bob", "queue", "guidelines", "RULE").stdout
    assert "\x1b" not in shown and "\\x1b]0;owned\\x07" in shown
    assert json.loads(r2k("--json", "--as", "bob", "queue", "guidelines", "RULE").stdout)["body"].startswith("Judge \x1b")
