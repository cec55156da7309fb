"""Bulk actions on the command line: several ids or `--from-file`, each item its own move, event and
idempotency key; failures listed per item, the others applied; bad input refused before anything
moves."""
from __future__ import annotations

import json
import os

import pytest

from r2k.core.services import bulk
from r2k.core.services.answering import workitems
from r2k.core.services.grey_entries import grey
from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates
from tests.conftest import error_of, r2k, r2k_json


def events_of(superuser, aggregate: str, entity_id: int) -> list[str]:
    return [r["type"] for r in superuser("SELECT type FROM events WHERE aggregate_type = %s AND aggregate_id = %s "
                                         "ORDER BY seq", (aggregate, str(entity_id)))]


@pytest.fixture
def entries(ctx, people):
    return [grey.add(ctx, people["sam"], f"Which dock takes pallet class {n}?")["id"] for n in range(4)]


def test_several_ids_each_move_once_and_failures_are_listed_per_item(ctx, people, entries, superuser):
    grey.transition(ctx, people["sam"], entries[2], "dismiss")  # already dismissed: a 422
    result = r2k("--json", "--as", "sam", "grey", "dismiss", str(entries[0]), "999999", str(entries[2]),
                 str(entries[1]), "--reason", "duplicates of entry 9")
    report = json.loads(result.stdout)
    assert result.returncode == 3  # the first failure's: the 404, also the one error line on stderr
    assert error_of(result) == {"error": "NotFound", "status": 404, "message": "2 of 4 failed (the report is on "
                                "stdout); the first, grey entry 999999: no grey entry 999999"}
    assert (report["done"], report["failed"]) == (2, 2)
    assert [(i["id"], i["ok"], i.get("error", {}).get("status")) for i in report["items"]] == [
        (entries[0], True, None), (999999, False, 404), (entries[2], False, 422), (entries[1], True, None)]
    for entry_id in (entries[0], entries[1]):
        assert events_of(superuser, "grey_entry", entry_id) == ["add", "dismiss"]
        assert grey.show(ctx, entry_id)["state"] == "Dismissed"
    assert events_of(superuser, "grey_entry", entries[2]) == ["add", "dismiss"]  # its own, from before
    assert grey.show(ctx, entries[3])["state"] == "Pending"
    text = r2k("--as", "sam", "grey", "reopen", str(entries[0]), str(entries[3])).stdout.splitlines()
    assert text[0] == f"grey entry {entries[0]}: Pending"
    assert text[1].startswith(f"grey entry {entries[3]}: ValidationStateError (422): ")
    assert text[-1] == "1 done, 1 failed"


def test_from_file_takes_ids_a_line_with_notes_and_each_once(ctx, people, entries, tmp_path):
    listed = tmp_path / "ids.txt"
    listed.write_text(f"# from the weekly triage\n{entries[0]}\n\n{entries[1]}   # the second\n{entries[0]}\n")
    report = r2k_json("--as", "sam", "grey", "assign", "--from-file", str(listed), str(entries[2]),
                      "--assignee", "sam")
    assert [i["id"] for i in report["items"]] == [entries[2], entries[0], entries[1]]
    assert {grey.show(ctx, e)["assignee"] for e in entries[:3]} == {"sam"}


def test_a_repeated_bulk_request_with_its_key_applies_nothing_twice(ctx, people, entries, superuser):
    args = ("--as", "sam", "grey", "dismiss", *map(str, entries[:3]), "--idempotency-key", "triage-7")
    first = r2k_json(*args)
    again = r2k_json(*args)
    assert first == again and first["done"] == 3
    assert all(events_of(superuser, "grey_entry", e) == ["add", "dismiss"] for e in entries[:3])


def test_registry_and_work_items_take_several_ids_too(ctx, people, superuser):
    answers = []
    for n in range(3):
        candidates.add(ctx, people["root"], f"How many forklifts has site {n}?", f"Site {n} has {n + 4} forklifts.",
                       "FACT")
        answers.append(candidates.approve(ctx, people["alice"], claims.claim_next(ctx, people["alice"], "FACT")["id"]
                                          )["answer"]["id"])
    report = r2k_json("--as", "alice", "registry", "retire", *map(str, answers[:2]), "--reason", "sites closed")
    assert [(i["id"], i["result"]["status"]) for i in report["items"]] == [(answers[0], "RETIRED"),
                                                                          (answers[1], "RETIRED")]
    one = r2k("--as", "alice", "registry", "dispute", str(answers[2]), "--reason", "count it again")
    assert one.returncode == 0 and one.stdout.startswith(f"Answer {answers[2]} is DISPUTED")  # one id: as ever
    items = [workitems.create(ctx, people["sam"], f"Who signs off change {n}?")["id"] for n in range(2)]
    report = r2k_json("--as", "sam", "workitems", "close", *map(str, items), "--reason", "asked elsewhere")
    assert [i["result"]["state"] for i in report["items"]] == ["CLOSED", "CLOSED"]


def test_bad_input_is_refused_before_anything_moves(ctx, people, entries, superuser, tmp_path):
    fifo = tmp_path / "ids.fifo"
    os.mkfifo(fifo)
    bad = tmp_path / "bad.txt"
    bad.write_text(f"{entries[0]}\nfour\n")
    cases = [
        (["grey", "dismiss", str(entries[0]), "abc"], 6, "a grey entry id is a number, got 'abc'"),
        (["grey", "dismiss"], 6, "no grey entry id given"),
        (["grey", "dismiss", str(entries[0]), str(entries[1]), "--expected-version", "1"], 6,
         "--expected-version is one entity's version"),
        (["grey", "dismiss", "--from-file", str(fifo)], 6, "is a FIFO, not a regular file"),
        (["grey", "dismiss", "--from-file", str(tmp_path / "none.txt")], 6, "cannot be read"),
        (["grey", "dismiss", "--from-file", str(bad)], 6, "got 'four'"),
        (["grey", "dismiss", str(entries[0]), str(entries[1]), "--idempotency-key", "k" * 199], 6,
         "at most 200 characters with its items' ids"),
    ]
    for args, code, words in cases:
        result = r2k("--as", "sam", *args)
        assert result.returncode == code and words in error_of(result)["message"], (args, result.stderr)
    result = r2k("--as", "nobody", "grey", "dismiss", str(entries[0]), str(entries[1]))
    assert result.returncode == 7
    assert all(events_of(superuser, "grey_entry", e) == ["add"] for e in entries)
    with pytest.raises(Exception, match="at most 100,000 ids"):
        bulk.ids_of([str(n) for n in range(1, 100_002)], "grey entry")
