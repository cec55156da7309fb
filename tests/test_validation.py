"""Validation end to end through the core and the CLI: ingest, queues, claims,
decisions; concurrency, crashes and a flushed Redis."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from r2k.core import audit
from r2k.core.adapters.redis_queues import heads_key, inflight_key, queue_key
from r2k.core.errors import Forbidden, InvalidInput, NotFound, ValidationStateError
from r2k.core.services.answering import workitems
from r2k.core.services.answers import registry
from r2k.core.services.documents import ingest
from r2k.core.services.operations import sweeps
from r2k.core.services.queue import candidate_views, claims, queue_index
from r2k.core.services.validation import candidates
from tests.conftest import ROOT, error_of, r2k, r2k_json

HANDBOOK = """# Dock handbook

## Dock count

The Rotterdam site has fourteen loading docks on the north side.

## Truck arrival

If a truck arrives more than thirty minutes late, the dock lead reassigns its slot.

## Dock safety

Drivers must never stand behind a reversing truck at the dock.

## Unloading

1. Chock the wheels of the trailer.
2. Open the dock leveller.
3. Scan the pallet labels.

## Night docks

It is not yet decided whether docks stay open after midnight?

Gates close early.

See appendix B.
"""


def write(path, text, mode="w"):
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def table_counts(ctx) -> dict:
    with ctx.db.read() as tx:
        return {t: tx.scalar(f"SELECT count(*) FROM {t}") for t in
                ("source_documents", "source_passages", "candidates", "events", "grey_entries")}


# ----------------------------------------------------------------------------- ingest

@pytest.mark.compat
def test_ingest_classifies_by_logical_form_and_queues_each_candidate(ctx, people, tmp_path):
    write(tmp_path / "docs" / "handbook.md", HANDBOOK)
    summary = ingest.ingest(ctx, people["root"], [tmp_path / "docs"])
    assert summary["documents"] == 1
    assert summary["candidates"] == {"FACT": 1, "RULE": 1, "CONSTRAINT": 1, "PROCEDURE": 1, "OPEN_ISSUE": 1}
    assert summary["fragments"] == 1  # "Gates close early." is too short to answer: a grey entry, not a candidate
    assert summary["dropped"] == {"navigation": 1} and summary["dropped_total"] == 1  # "See appendix B."
    rows = candidate_views.list_candidates(ctx)
    by_type = {r["horn_type"]: r for r in rows}
    assert by_type["FACT"]["question"] == "What does the Rotterdam site have?"  # its statement's, not its heading's
    assert by_type["OPEN_ISSUE"]["question"] == "It is not yet decided whether docks stay open after midnight?"
    assert all(r["state"] == "PENDING" for r in rows)
    for horn, row in by_type.items():
        assert queue_index.queue(ctx).ids(horn) == [row["id"]]
    shown = candidate_views.show(ctx, by_type["RULE"]["id"])
    source = shown["sources"][0]
    assert source["title"] == "Dock handbook"
    assert source["excerpt"][source["match"][0]:source["match"][1]].startswith("If a truck arrives")
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT count(*) FROM source_documents WHERE search @@ plainto_tsquery('english', "
                         "'leveller')") == 1


def test_a_source_excerpt_opens_and_closes_on_whole_lines(ctx, people, tmp_path):
    lines = [f"Line {n} of the yard log names the dock that opened at {n} o'clock." for n in range(1, 30)]
    write(tmp_path / "yard.md", "# Yard log\n\n## Docks\n\n" + "\n".join(lines[:14]) + "\n\n## Gates\n\n"
          "Gate 4 closes at ten.\n\n## Later\n\n" + "\n".join(lines[14:]) + "\n")
    ingest.ingest(ctx, people["root"], [tmp_path / "yard.md"])
    gate = next(r for r in candidate_views.list_candidates(ctx) if r["text"] == "Gate 4 closes at ten.")
    source = candidate_views.show(ctx, gate["id"])["sources"][0]
    excerpt, (start, end) = source["excerpt"], source["match"]
    assert excerpt[start:end] == "Gate 4 closes at ten."
    content = (tmp_path / "yard.md").read_text()
    at = content.index(excerpt)  # a piece of the document, cut 300 characters or so either side
    assert 0 < at and content[at - 1] == "\n" and excerpt.startswith("Line ")
    assert at + len(excerpt) < len(content) and content[at + len(excerpt)] == "\n" and excerpt.endswith("o'clock.")


def test_candidates_show_reads_as_text_in_a_terminal(ctx, people, tmp_path):
    write(tmp_path / "yard.md", "# Yard log\n\n## Gates\n\nGate 4 closes at ten.\n\n## Docks\n\nDock 2 is for reefers.\n")
    ingest.ingest(ctx, people["root"], [tmp_path / "yard.md"])
    gate = next(r for r in candidate_views.list_candidates(ctx) if r["text"] == "Gate 4 closes at ten.")
    shown = r2k("--as", "alice", "candidates", "show", str(gate["id"]))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"Candidate {gate['id']} · FACT · PENDING · version 1"
    at = (tmp_path / "yard.md").read_text().index("Gate 4")
    assert f"  [1] Yard log  {tmp_path / 'yard.md'}, characters {at}–{at + 21}" in lines
    assert "      > Gate 4 closes at ten." in lines  # the passage itself, not the JSON of the source
    assert "Dock 2" not in shown.stdout
    assert lines[-1].split()[:4] == ["1", "extract", "PENDING", "root"]
    assert r2k_json("--as", "alice", "candidates", "show", str(gate["id"]))["sources"][0]["excerpt"].startswith("#")


def test_ingesting_the_same_file_twice_adds_nothing(ctx, people, tmp_path):
    write(tmp_path / "a.md", HANDBOOK)
    ingest.ingest(ctx, people["root"], [tmp_path / "a.md"])
    before = table_counts(ctx)
    write(tmp_path / "copy" / "same.md", HANDBOOK)
    summary = ingest.ingest(ctx, people["root"], [tmp_path / "a.md", tmp_path / "copy"])
    assert summary["documents"] == 0 and len(summary["duplicates"]) == 2
    assert table_counts(ctx) == before


def test_bad_files_are_reported_with_path_and_line_and_the_rest_goes_in(ctx, people, tmp_path):
    write(tmp_path / "good.md", HANDBOOK)
    write(tmp_path / "latin1.txt", "Caf\xe9 opening hours\n\nThe caf\xe9 opens at seven every weekday.\n"
          .encode("latin-1"), "wb")
    write(tmp_path / "broken.jsonl", '{"question": "Q1?", "answer": "A fine answer."}\n'
                                     '{"question": "Q2?", "answer": "Another answer."}\n'
                                     '{"question": "Q3?", "answer": oops}\n')
    write(tmp_path / "missing-answer.jsonl", '{"question": "Q?"}\n')
    write(tmp_path / "notes.pdf", "not a document")
    write(tmp_path / "sheet.ods", "cells")
    result = r2k("--json", "--as", "root", "ingest", str(tmp_path), str(tmp_path / "nowhere.md"))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    skipped = {os.path.basename(s["path"]): s for s in summary["skipped"]}
    assert skipped["broken.jsonl"]["line"] == 3 and "malformed JSON" in skipped["broken.jsonl"]["reason"]
    assert skipped["latin1.txt"]["line"] == 1 and "not UTF-8" in skipped["latin1.txt"]["reason"]
    assert skipped["missing-answer.jsonl"]["line"] == 1 and "answer" in skipped["missing-answer.jsonl"]["reason"]
    assert "not a PDF pypdf can read" in skipped["notes.pdf"]["reason"]
    assert "unsupported file type .ods" in skipped["sheet.ods"]["reason"]  # listed, not passed over
    assert "no such file" in skipped["nowhere.md"]["reason"]
    assert result.stderr.count("broken.jsonl:3") == 1  # said once
    # The malformed line is skipped with its line; the file's good lines go in.
    assert summary["documents"] == 2 and summary["candidates_total"] == 7
    with ctx.db.read() as tx:  # nothing of a file skipped whole remains
        assert sorted(r["path"] for r in tx.all("SELECT path FROM source_documents")) == [
            str(tmp_path / "broken.jsonl"), str(tmp_path / "good.md")]
        assert tx.scalar("SELECT count(*) FROM candidates WHERE question LIKE 'Q_?'") == 2


def test_ingest_of_nothing_readable_is_a_400(ctx, people, tmp_path):
    write(tmp_path / "bad.jsonl", "not json\n")
    result = r2k("--as", "root", "ingest", str(tmp_path / "bad.jsonl"))
    assert result.returncode == 6
    assert "bad.jsonl:1" in result.stderr
    assert error_of(result)["message"] == "nothing was ingested: all 1 file(s) were skipped"
    assert table_counts(ctx)["candidates"] == 0


def test_a_file_with_nothing_to_review_is_skipped_not_stored(ctx, people, tmp_path):
    write(tmp_path / "empty.md", "")
    write(tmp_path / "outline.md", "# Yard handbook\n\n## Gates\n\n## Parking\n")
    before = table_counts(ctx)
    result = r2k("--as", "root", "ingest", str(tmp_path))
    assert result.returncode == 6
    for name in ("empty.md", "outline.md"):
        assert f"{name}: nothing to review in it" in result.stderr
    assert table_counts(ctx) == before  # no document without candidates


def test_jsonl_and_plain_text_ingest(ctx, people, tmp_path):
    write(tmp_path / "faq.jsonl", '{"question": "Who signs refunds?", "answer": "The support lead signs refunds.", '
                                  '"horn_type": "FACT"}\n{"question": "When are refunds paid?", '
                                  '"answer": "If approved, refunds are paid within five days."}\n')
    write(tmp_path / "notes.txt", "SHIFT NOTES\n\nHANDOVER\n\nThe night lead writes the handover log at six.\n")
    summary = ingest.ingest(ctx, people["root"], [tmp_path])
    assert summary["documents"] == 2
    rows = {r["question"]: r for r in candidate_views.list_candidates(ctx)}
    assert rows["Who signs refunds?"]["horn_type"] == "FACT"
    assert rows["When are refunds paid?"]["horn_type"] == "RULE"
    assert rows["What does the night lead write?"]["text"] == "The night lead writes the handover log at six."


def test_questions_keep_the_capitals_of_names_only(ctx, people, tmp_path):
    write(tmp_path / "sites.md", "# Sites\n\n## Rotterdam Warehouse Cold Room\n\nThe cold room of the warehouse "
                                 "in Rotterdam holds 1,800 square metres.\n\n## RTM-1 Dock Count\n\nThe RTM-1 site "
                                 "has fourteen docks and one cold room.\n\n## Change Board Meetings\n\nEvery change "
                                 "to the docks goes to the Change Board on Mondays.\n")
    ingest.ingest(ctx, people["root"], [tmp_path / "sites.md"])
    assert sorted(r["question"] for r in candidate_views.list_candidates(ctx)) == [
        "What does the RTM-1 site have?",  # a code keeps its capitals
        "What does the cold room of the warehouse in Rotterdam hold?",  # a name keeps them, a sentence's first word not
        "Where does every change to the docks go?"]


def test_plain_text_without_a_title_line_loses_nothing(ctx, people, tmp_path):
    write(tmp_path / "yard-rule.txt", "Drivers must never idle engines in the yard.\n")
    write(tmp_path / "gates.txt", "Gate Rules\nIf a gate is blocked, the yard lead opens gate four.\n\n"
                                  "1. Stop at the barrier.\n2. Show the badge to the guard.\n")
    ingest.ingest(ctx, people["root"], [tmp_path])
    rows = {r["text"]: r for r in candidate_views.list_candidates(ctx)}
    assert rows["Drivers must never idle engines in the yard."]["horn_type"] == "CONSTRAINT"  # named by its file
    gate = rows["If a gate is blocked, the yard lead opens gate four."]
    assert gate["question"] == "What happens if a gate is blocked?" and gate["horn_type"] == "RULE"
    assert rows["1. Stop at the barrier.\n2. Show the badge to the guard."]["horn_type"] == "PROCEDURE"
    with ctx.db.read() as tx:  # each span points at its own text, for the review screen's highlight
        for row in rows.values():
            ref = candidate_views.get(ctx, row["id"])["source_refs"][0]
            content = tx.scalar("SELECT content FROM source_documents WHERE id = %s", (ref["document_id"],))
            assert content[ref["span"][0]:ref["span"][1]] == row["text"]


# The logical forms the demo's statements are written in (docs/architecture.md, "Documents and
# extraction", "Horn types"), tried in the table's order on the claim's first sentence: it says
# the matter is open; a numbered list or "First, … then …"; a prohibition; an obligation, a
# permission or a condition (in its main clause: "which may be extended" describes); else a fact.
OPEN_FORM = re.compile(r"^(It is (not yet decided|unclear|not known|unresolved)\b|Open question:)|\bis still unresolved\b")
STEPS_FORM = re.compile(r"^(1\. |First, )|\n1\. ")
FORBIDS_FORM = re.compile(r"\b(must not|must never|may not|shall not|not allowed|prohibited|forbidden|never)\b")
OBLIGES_FORM = re.compile(r"^(If|When) |\b(must|shall|should|may|is required|needs? approval)\b")


def logical_form(text: str) -> str:
    first = re.split(r"(?<=[.;:])\s", text, maxsplit=1)[0]
    main = re.split(r", which ", first, maxsplit=1)[0]
    if OPEN_FORM.search(first):
        return "OPEN_ISSUE"
    if STEPS_FORM.search(text):
        return "PROCEDURE"
    if FORBIDS_FORM.search(first):
        return "CONSTRAINT"
    if OBLIGES_FORM.search(main):
        return "RULE"
    return "FACT"


def test_logical_forms_read_the_demos_own_examples():
    """The reading above, on one statement of each form (so a mistake in it is not the product's)."""
    assert logical_form("It is unclear whether the dock opens.") == "OPEN_ISSUE"
    assert logical_form("1. Stop.\n2. Look.") == "PROCEDURE"
    assert logical_form("First, check the seal; then sign.") == "PROCEDURE"
    assert logical_form("Drivers must not use a phone.") == "CONSTRAINT"
    assert logical_form("When a badge is lost, report it.") == "RULE"
    assert logical_form("Drivers drive 9 hours, which may be extended to 10.") == "FACT"
    assert logical_form("Harbor runs 64 trucks.") == "FACT"


def test_the_demo_loads_its_corpus_and_users_once(ctx):
    first = r2k("demo", "--no-tui")
    assert first.returncode == 0, first.stderr
    counted = re.search(r"30 document\(s\), (\d+) candidate\(s\): FACT (\d+), RULE (\d+), CONSTRAINT (\d+), "
                        r"PROCEDURE (\d+), OPEN_ISSUE (\d+)", first.stdout)
    total, *by_type = (int(n) for n in counted.groups())
    assert total == sum(by_type) and all(by_type)  # every queue has work
    readme = (ROOT / "README.md").read_text()
    assert f"30 documents ({total} candidate answers)" in readme  # the README says what the demo loads
    assert "added now: ada, ben, cleo, dev, sam, root" in first.stdout
    stats = {row["horn_type"]: row for row in candidate_views.queue_stats(ctx)}
    assert {h: (row["pending"], row["queued"]) for h, row in stats.items()} == dict(zip(
        ("FACT", "RULE", "CONSTRAINT", "PROCEDURE", "OPEN_ISSUE"), ((n, n) for n in by_type)))
    # Each queue holds what its Horn type means (docs/architecture.md, "Documents and extraction"):
    # every statement the demo loads has the type of its logical form, as the demo writes its
    # statements (a JSON Lines record keeps the type it states), whatever the counts come to.
    with ctx.db.read() as tx:
        loaded = tx.all("SELECT c.id, c.text, c.horn_type, d.path FROM candidates c "
                        "JOIN source_documents d ON d.id = (c.source_refs -> 0 ->> 'document_id')::bigint")
    assert len(loaded) == total
    stated = {(path.name, record["answer"]): record.get("horn_type")
              for path in (ROOT / "core" / "demo" / "corpus").glob("*.jsonl")
              for record in map(json.loads, path.read_text().splitlines())}
    wrong = []
    for row in loaded:
        expected = stated.get((Path(row["path"].split("#")[0]).name, row["text"])) or logical_form(row["text"])
        if row["horn_type"] != expected:
            wrong.append((row["horn_type"], expected, row["text"][:120]))
    assert wrong == [], wrong  # (typed, its form's type, the statement)
    typed = {r["text"].split("\n")[0]: r["horn_type"] for r in candidate_views.list_candidates(ctx, limit=1_000)}
    assert typed["1. Stop traffic in the aisle and place the yellow spill cones around the area."] == "PROCEDURE"
    assert typed["Pedestrians must not leave the green-marked walkways in aisles where forklifts are operating. "
                 "Crossing an aisle is allowed only at the marked crossing points with a painted stop line."] == "CONSTRAINT"
    assert next(h for t, h in typed.items() if t.startswith("Multi-factor authentication is required")) == "RULE"
    assert next(h for t, h in typed.items() if t.startswith("It is unclear whether the summer heat")) == "OPEN_ISSUE"
    assert next(h for t, h in typed.items() if t.startswith("Harbor Logistics runs 64")) == "FACT"
    assert not any(q.startswith(("What is established about", "What rule applies to"))
                   for q in (r["question"] for r in candidate_views.list_candidates(ctx, limit=1_000)))
    from r2k.core.services.people import users

    assert users.resolve(ctx, "ada").holds("RULE") and not users.resolve(ctx, "ada").holds("CONSTRAINT")
    assert users.resolve(ctx, "sam").role == "specialist" and users.resolve(ctx, "root").role == "admin"

    again = r2k_json("demo", "--no-tui")  # idempotent: nothing added, nothing queued twice
    assert again["users_added"] == [] and again["ingest"]["documents"] == 0
    assert len(again["ingest"]["duplicates"]) == 30
    assert {row["horn_type"]: (row["pending"], row["queued"]) for row in candidate_views.queue_stats(ctx)} == {
        h: (row["pending"], row["queued"]) for h, row in stats.items()}
    assert "already loaded, nothing added (30 documents)" in r2k("demo", "--no-tui").stdout


def test_candidates_add_by_hand_and_its_bad_input(ctx, people):
    added = r2k_json("--as", "alice", "candidates", "add", "--question", "Where are pallets stored?",
                     "--text", "Pallets are stored in hall B.", "--source-ref", "walkthrough 2026-11")
    assert (added["horn_type"], added["state"], added["source_refs"]) == ("FACT", "PENDING",
                                                                          [{"ref": "walkthrough 2026-11"}])
    typed = r2k_json("--as", "alice", "candidates", "add", "--question", "Q?", "--text", "T.", "--horn-type", "rule")
    assert typed["horn_type"] == "RULE"
    for args, words in [(["--question", " ", "--text", "T."], "question"), (["--question", "Q", "--text", ""], "text"),
                        (["--question", "Q", "--text", "T", "--horn-type", "OPINION"], "unknown Horn type")]:
        result = r2k("--as", "alice", "candidates", "add", *args)
        assert result.returncode == 6 and words in error_of(result)["message"]
    assert len(candidate_views.list_candidates(ctx)) == 2


# ----------------------------------------------------------------------------- queues

def add_many(ctx, actor, horn: str, n: int, prefix: str = "Q") -> list[int]:
    created = []
    with ctx.db.begin() as tx:
        for i in range(n):
            created.append(candidates.create_candidate(tx, actor, f"{prefix} {i}?", f"Statement {i}.", horn, [],
                                                       origin="manual"))
    return [c["id"] for c in created]


@pytest.mark.compat
def test_claims_come_oldest_first_and_an_empty_queue_is_a_404(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 3)
    claimed = [claims.claim_next(ctx, people["alice"], "FACT") for _ in ids]
    assert [c["id"] for c in claimed] == ids
    assert all(c["state"] == "IN_REVIEW" and c["claimed_by"] == "alice" for c in claimed)
    with pytest.raises(NotFound, match="FACT queue is empty"):
        claims.claim_next(ctx, people["alice"], "FACT")


def test_no_authority_is_a_403_and_pops_nothing(ctx, people):
    add_many(ctx, people["root"], "PROCEDURE", 2)
    result = r2k("--as", "alice", "queue", "claim", "--horn-type", "PROCEDURE")
    assert result.returncode == 7 and "PROCEDURE" in error_of(result)["message"]
    assert queue_index.queue(ctx).length("PROCEDURE") == 2


def test_stale_ids_are_skipped(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 3)
    claims.claim(ctx, people["bob"], ids[0])  # claimed by name, while its id may still sit in the list
    queue_index.queue(ctx).push_head("FACT", ids[0])
    queue_index.queue(ctx).push_head("FACT", 999999)  # an id with no row
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == ids[1]


def test_release_and_lease_expiry_return_the_candidate_to_the_head(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 3)
    first = claims.claim_next(ctx, people["alice"], "FACT")
    released = candidates.release(ctx, people["alice"], first["id"])
    assert (released["state"], released["claimed_by"]) == ("PENDING", None)
    assert queue_index.queue(ctx).ids("FACT") == ids
    with pytest.raises(Forbidden):  # only the claimant releases
        claimed = claims.claim_next(ctx, people["alice"], "FACT")
        candidates.release(ctx, people["bob"], claimed["id"])
    with ctx.db.begin() as tx:
        tx.execute("UPDATE candidates SET lease_expires_at = now() - interval '1 second' WHERE id = %s", (ids[0],))
    assert sweeps.sweep_claims(ctx)["released"] == [ids[0]]
    assert queue_index.queue(ctx).ids("FACT")[0] == ids[0]
    assert candidate_views.history(ctx, ids[0])[-1]["actor"] == "system"


def test_queue_stats(ctx, people):
    add_many(ctx, people["root"], "RULE", 4)
    claims.claim_next(ctx, people["alice"], "RULE")
    stats = {s["horn_type"]: s for s in r2k_json("--as", "alice", "queue", "stats")}
    assert (stats["RULE"]["pending"], stats["RULE"]["in_review"], stats["RULE"]["queued"]) == (3, 1, 3)
    assert stats["RULE"]["oldest_pending_age_seconds"] >= 0
    assert stats["FACT"]["pending"] == 0 and stats["FACT"]["oldest_pending_age_seconds"] is None
    ctx.redis.flushall()  # what the partitions held is gone, and stats says what is true again
    stats = {s["horn_type"]: s for s in r2k_json("--as", "alice", "queue", "stats")}
    assert (stats["RULE"]["pending"], stats["RULE"]["queued"]) == (3, 3)


def read_ahead(ctx, horn="FACT") -> dict[int, str]:
    return {int(k): v.decode() for k, v in ctx.redis.hgetall(heads_key(horn)).items()}


def test_claims_read_ahead_and_a_stale_entry_costs_only_a_read(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 4)
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == ids[0]
    # The first claim had nothing read ahead: it read its row, then read ahead the rest.
    assert sorted(read_ahead(ctx)) == ids[1:]
    assert read_ahead(ctx)[ids[1]].startswith("PENDING|1|1|")

    # ids[1] moves (claimed by name, released to the head again) while a refill that read it
    # before those moves writes its entry after them: the entry is stale, at version 1 of 3.
    entry = read_ahead(ctx)[ids[1]]
    claims.claim(ctx, people["bob"], ids[1])
    assert ids[1] not in read_ahead(ctx)  # a claim by name takes the entry out with the id
    candidates.release(ctx, people["bob"], ids[1])
    ctx.redis.hset(heads_key("FACT"), ids[1], entry)
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    assert (claimed["id"], claimed["claimed_by"], claimed["version"]) == (ids[1], "alice", 4)
    assert ids[1] not in read_ahead(ctx)
    assert audit.verify(ctx.db)["broken"] == []


def test_a_claim_returns_the_row_exactly_as_a_read_of_it_gives(ctx, people):
    """The claim's statement takes its row back in binary form (cheaper to load): the caller, and
    `queue claim`'s output, get the very values a plain read gives."""
    from r2k.core.adapters.postgres import public_row

    [cid] = add_many(ctx, people["root"], "FACT", 1)
    with ctx.db.begin() as tx:
        tx.execute("UPDATE candidates SET source_refs = %s, queue_rank = 1.5 WHERE id = %s",
                   ('[{"document": "d", "start": 1}]', cid))
    queue_index.reconcile(ctx)
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    with ctx.db.read() as tx:
        assert claimed == public_row(tx.one("SELECT * FROM candidates WHERE id = %s", (cid,)))
    assert claimed["source_refs"] == [{"document": "d", "start": 1}] and claimed["queue_rank"] == 1.5


def test_a_refill_reads_only_the_ids_not_yet_read_ahead(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 5)
    claims.claim_next(ctx, people["alice"], "FACT")
    assert sorted(read_ahead(ctx)) == ids[1:]
    assert claims._refill(ctx, "FACT") == 0  # the whole front is read ahead already: no read
    ctx.redis.hdel(heads_key("FACT"), ids[3])
    assert claims._refill(ctx, "FACT") == 1
    assert sorted(read_ahead(ctx)) == ids[1:]


def test_a_read_ahead_entry_with_a_wrong_chain_head_writes_nothing_wrong(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 3)
    claims.claim_next(ctx, people["alice"], "FACT")
    state, version, seq, digest = read_ahead(ctx)[ids[1]].split("|")
    ctx.redis.hset(heads_key("FACT"), ids[1], f"{state}|{version}|{seq}|{'0' * 64}")  # right version, wrong head
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    assert (claimed["id"], claimed["state"]) == (ids[1], "IN_REVIEW")
    assert [e["action"] for e in candidate_views.history(ctx, ids[1])] == ["extract", "claim"]
    assert audit.verify(ctx.db)["broken"] == []  # the claim's event links to the real head


def test_reconcile_drops_the_read_ahead(ctx, people):
    add_many(ctx, people["root"], "FACT", 3)
    claims.claim_next(ctx, people["alice"], "FACT")
    assert read_ahead(ctx)
    queue_index.reconcile(ctx)
    assert read_ahead(ctx) == {}


def test_claims_go_on_after_redis_drops_their_connection_or_forgets_their_scripts(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 4)
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == ids[0]
    # Every other client's connection goes, the claims' own line among them (a failover, say).
    assert ctx.redis.client_kill_filter(_type="normal", skipme=True) >= 1
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == ids[1]
    ctx.redis.script_flush()
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == ids[2]
    ctx.redis.script_flush()  # both at once, as after a Redis restart
    ctx.redis.client_kill_filter(_type="normal", skipme=True)
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == ids[3]
    assert settled_soon(ctx)  # each claim also settled its pop
    assert [c["state"] for c in candidate_views.list_candidates(ctx, horn_type="FACT")] == ["IN_REVIEW"] * 4


def settled_soon(ctx, horn="FACT", within: float = 2.0) -> bool:
    """The partition's in-flight set empties by itself (no further step of this process sends it)."""
    deadline = time.monotonic() + within
    while ctx.redis.zcard(inflight_key(horn)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_a_claims_settle_rides_on_the_next_pop(ctx, people):
    """A claim's settle (its id leaves flight, its notice goes out) waits a moment for the same
    process's next pop and goes in the same script. The notices come in the order of the claims,
    each once. (That one no pop takes goes out by itself: test_claims_go_on_after_redis_drops….)"""
    ids = add_many(ctx, people["root"], "FACT", 3)
    q = queue_index.queue(ctx)
    q._settles.wait = 3600  # however slow this machine is, only a pop or a read sends them
    listener = ctx.redis.pubsub(ignore_subscribe_messages=True)
    listener.subscribe("raw_to_knowledge:events")
    sent = []
    send = q._line.run
    q._line.run = lambda script, keys, args: sent.append(script) or send(script, keys, args)
    try:
        for _ in ids:
            claims.claim_next(ctx, people["alice"], "FACT")
    finally:
        q._line.run = send
    # Three claims, three pops; the first two settles rode on the pops after them.
    assert sent == [q._pop] * 3
    assert ctx.redis.zrange(inflight_key("FACT"), 0, -1) == [str(ids[2]).encode()]
    assert q.in_flight("FACT") == set()  # a read sends the last one first
    heard = []
    deadline = time.monotonic() + 2
    while len(heard) < 3 and time.monotonic() < deadline:
        message = listener.get_message(timeout=0.1)
        if message:
            heard.append(json.loads(message["data"]))
    listener.close()
    assert [(n["id"], n["action"], n["state"]) for n in heard] == [(i, "claim", "IN_REVIEW") for i in ids]


def test_a_waiting_settle_goes_out_before_a_step_that_could_see_it(ctx, people):
    """Within the process, order is as if each settle went out at its commit: a release, a sweep
    or a read of the partition sends the waiting ones first."""
    ids = add_many(ctx, people["root"], "FACT", 2)
    q = queue_index.queue(ctx)
    first = claims.claim_next(ctx, people["alice"], "FACT")
    assert q.held_ids("FACT") == {ids[1]}  # read at once: the claimed id is no longer in flight
    claims.claim_next(ctx, people["alice"], "FACT")
    queue_index.sweep_in_flight(ctx, grace=0)  # nothing unsettled to return to the list
    assert q.ids("FACT") == []
    candidates.release(ctx, people["alice"], first["id"])
    assert q.ids("FACT") == [ids[0]] and q.in_flight("FACT") == set()


def test_a_settle_taken_by_a_pop_that_failed_still_goes_out(ctx, people):
    from redis.exceptions import ConnectionError as RedisConnectionError

    add_many(ctx, people["root"], "FACT", 2)
    q = queue_index.queue(ctx)
    q._settles.wait = 3600  # nothing but a later step sends it
    first = claims.claim_next(ctx, people["alice"], "FACT")
    run = q._line.run

    def away(script, keys, args):
        raise RedisConnectionError("Redis went away")

    q._line.run = away
    try:
        with pytest.raises(Exception):
            claims.claim_next(ctx, people["alice"], "FACT")
    finally:
        q._line.run = run
    assert q.in_flight("FACT") == set()  # the pop failed, yet the first claim's settle went out after it
    assert candidate_views.get(ctx, first["id"])["state"] == "IN_REVIEW"


def test_closing_the_context_sends_the_waiting_settles(ctx, people):
    from r2k.core.bootstrap import bootstrap

    ids = add_many(ctx, people["root"], "FACT", 1)
    other = bootstrap()
    other.validation_queue._settles.wait = 3600  # the thread would wait an hour: only the close sends it
    try:
        claims.claim_next(other, people["alice"], "FACT")
        assert ctx.redis.zcard(inflight_key("FACT")) == 1
    finally:
        other.close()
    assert ctx.redis.zcard(inflight_key("FACT")) == 0
    assert candidate_views.get(ctx, ids[0])["state"] == "IN_REVIEW"


CLAIMER = """
import json, sys
from r2k.core.bootstrap import bootstrap
from r2k.core.errors import NotFound, Conflict
from r2k.core.services.operations import sweeps
from r2k.core.services.people import users
from r2k.core.services.queue import candidate_views, claims, queue_index
from r2k.core.services.validation import candidates
ctx = bootstrap()
actor = users.resolve(ctx, sys.argv[1])
got = []
while True:
    try:
        got.append(claims.claim_next(ctx, actor, "FACT")["id"])
    except NotFound:
        break
print(json.dumps(got))
"""


@pytest.mark.compat
def test_eight_processes_claim_two_thousand_candidates_each_exactly_once(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 2000)
    procs = [subprocess.Popen([sys.executable, "-c", CLAIMER, "alice" if i % 2 else "bob"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(8)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    claimed = [i for r in results for i in r]
    assert sorted(claimed) == ids  # every candidate once, none twice, none lost
    assert sum(1 for r in results if r) >= 2  # they really raced
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT count(*) FROM candidates WHERE state = 'IN_REVIEW'") == 2000
        assert tx.scalar("SELECT count(*) FROM events WHERE type = 'claim'") == 2000


STUCK_CLAIMER = """
import sys
from r2k.core.bootstrap import bootstrap
from r2k.core.services.operations import sweeps
from r2k.core.services.people import users
from r2k.core.services.queue import candidate_views, claims, queue_index
from r2k.core.services.validation import candidates
ctx = bootstrap()
actor = users.resolve(ctx, "alice")
print("ready", flush=True)
claims.claim_next(ctx, actor, "FACT")
"""


def kill_claimer_while(ctx, lock_sql: str, params=()) -> int:
    """Start a claimer, hold `lock_sql`'s lock until it has popped its id and its statement waits
    for that lock, then SIGKILL it; the claimer's server backend (pid)."""
    with ctx.db.connection() as conn:
        blocker = conn.transaction()
        blocker.__enter__()
        conn.execute(lock_sql, params)
        holder = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
        proc = subprocess.Popen([sys.executable, "-c", STUCK_CLAIMER], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 30
        waiting = []
        while not waiting:  # its statement waits for the lock held here, as PostgreSQL reports it
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() else ""
            with ctx.db.read() as tx:
                waiting = tx.all("SELECT pid FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))", (holder,))
            time.sleep(0.01)
        assert queue_index.queue(ctx).length("FACT") == 1  # it popped its id before it reached the lock
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        blocker.__exit__(None, None, None)
    return waiting[0]["pid"]


def backend_gone(ctx, pid: int, within: float = 30) -> None:
    """Wait until the server is done with backend `pid` (its client died: it ends the session)."""
    deadline = time.monotonic() + within
    while True:
        with ctx.db.read() as tx:
            if not tx.scalar("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)):
                return
        assert time.monotonic() < deadline, f"backend {pid} still there"
        time.sleep(0.01)


def test_a_claimer_killed_between_pop_and_commit_loses_no_candidate(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 2)
    # A table lock stops the claimer at its read, after the pop and before anything is written.
    kill_claimer_while(ctx, "LOCK TABLE candidates IN ACCESS EXCLUSIVE MODE")
    assert queue_index.queue(ctx).ids("FACT") == [ids[1]]  # its id is in flight, not in the list
    assert candidate_views.get(ctx, ids[0])["state"] == "PENDING"
    queue_index.sweep_in_flight(ctx, grace=0)
    assert queue_index.queue(ctx).ids("FACT") == ids
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == ids[0]


def test_a_claimer_killed_while_its_claim_statement_runs_loses_no_candidate(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 2)
    # A row lock stops the claimer inside its conditional UPDATE. The server may finish that
    # statement after the client died (then the claim stands and its lease runs out), or not
    # (then the sweep returns the id): either way the candidate comes back.
    claimer = kill_claimer_while(ctx, "SELECT 1 FROM candidates WHERE id = %s FOR UPDATE", (ids[0],))
    backend_gone(ctx, claimer)  # the server finished or dropped the statement: the outcome is settled
    queue_index.sweep_in_flight(ctx, grace=0)
    with ctx.db.begin() as tx:
        tx.execute("UPDATE candidates SET lease_expires_at = now() - interval '1 second' "
                   "WHERE id = %s AND state = 'IN_REVIEW'", (ids[0],))
    sweeps.sweep_claims(ctx)
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == ids[0]


def test_flushall_then_reconcile_restores_every_partition_in_order(ctx, people):
    facts = add_many(ctx, people["root"], "FACT", 5)
    rules = add_many(ctx, people["root"], "RULE", 3)
    add_many(ctx, people["root"], "CONSTRAINT", 2)
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    candidates.approve(ctx, people["alice"], claimed["id"])
    second = claims.claim_next(ctx, people["alice"], "FACT")
    candidates.release(ctx, people["alice"], second["id"])  # back at the head
    with ctx.db.read() as tx:
        answer = registry.current_answer(tx, claimed["id"])
    registry.dispute(ctx, people["alice"], answer["id"], "numbers disagree")  # at the head too
    before = {h: queue_index.queue(ctx).ids(h) for h in ("FACT", "RULE", "CONSTRAINT")}
    assert before["FACT"] == [facts[0], facts[1], *facts[2:]]
    assert before["RULE"] == rules

    ctx.redis.flushall()
    assert queue_index.queue(ctx).length("FACT") == 0
    result = r2k_json("--as", "root", "queue", "reconcile")
    assert {p["horn_type"]: p["queued"] for p in result["partitions"]}["FACT"] == 5
    after = {h: queue_index.queue(ctx).ids(h) for h in ("FACT", "RULE", "CONSTRAINT")}
    assert after == before


def test_a_claim_after_redis_lost_its_data_rebuilds_the_queues_first(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 3)
    queue_index.reconcile(ctx)  # as at start-up: the epoch mark is set
    assert claims.claim_next(ctx, people["alice"], "FACT")["id"] == ids[0]
    ctx.redis.flushall()  # mid-session
    claimed = r2k_json("--as", "bob", "queue", "claim", "--horn-type", "FACT")
    assert claimed["id"] == ids[1]
    assert queue_index.queue(ctx).ids("FACT") == [ids[2]]


def test_a_push_that_fails_after_its_commit_loses_nothing(ctx, people, redis_operator):
    ids = add_many(ctx, people["root"], "FACT", 3)
    first = claims.claim_next(ctx, people["alice"], "FACT")
    limit = redis_operator.config_get("maxmemory")["maxmemory"]
    redis_operator.config_set("maxmemory", 1)  # Redis refuses every write for a moment
    try:
        released = candidates.release(ctx, people["alice"], first["id"])  # committed; its push is refused
    finally:
        redis_operator.config_set("maxmemory", limit)
    assert released["state"] == "PENDING" and candidate_views.get(ctx, ids[0])["state"] == "PENDING"
    assert queue_index.queue(ctx).ids("FACT") == ids[1:]  # the index missed the push ...
    # ... and knows it: the next claim rebuilds the queues first, so the released one is first again.
    assert claims.claim_next(ctx, people["bob"], "FACT")["id"] == ids[0]
    assert queue_index.queue(ctx).ids("FACT") == ids[1:]


def test_the_sweep_rebuilds_a_queue_that_missed_a_push_redis_never_heard_of(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 4)
    q = queue_index.queue(ctx)
    # A push lost while Redis was unreachable: the id is gone, and the reconcile mark stayed.
    ctx.redis.lrem(queue_key("FACT"), 0, ids[1])
    assert sweeps.sweep_claims(ctx)["rebuilt"] == []  # too fresh to call lost: its push may be on its way
    assert queue_index.repair_queues(ctx, settle=0) == ["FACT"]
    assert q.ids("FACT") == ids  # back in its place
    # Nothing missing, nothing rebuilt: an id the queue holds beyond PostgreSQL's stays until popped.
    q.push_tail("FACT", 999999)
    assert queue_index.repair_queues(ctx, settle=0) == []
    assert q.ids("FACT") == [*ids, 999999]
    # Claims racing the check only make Redis look fuller: a popped, uncommitted id still counts.
    assert q.pop("FACT").candidate_id == ids[0]
    assert queue_index.repair_queues(ctx, settle=0) == []


def test_the_missing_id_check_holds_however_often_it_runs_and_whatever_the_queue_holds(ctx, people):
    """misses_queued is planned for its ids each time (never a prepared statement's plan made without
    them, which looped over the array for each row); run past psycopg's prepare threshold, it still
    tells a queue that misses an id from one that holds them all, stale extras included."""
    ids = add_many(ctx, people["root"], "FACT", 5)
    with ctx.db.read() as tx:
        for _ in range(8):  # psycopg prepares a statement from its fifth run
            assert queue_index.misses_queued(tx, "FACT", set(ids)) is False
            assert queue_index.misses_queued(tx, "FACT", set(ids) | set(range(10**6, 10**6 + 2000))) is False
            assert queue_index.misses_queued(tx, "FACT", set(ids[1:])) is True
            assert queue_index.misses_queued(tx, "FACT", set()) is True
            assert queue_index.misses_queued(tx, "RULE", set()) is False  # nothing queued there
            assert queue_index.misses_queued(tx, "FACT", set(ids[1:]), settle=3600) is False  # all too fresh


# ----------------------------------------------------------------------------- decisions

def claimed_one(ctx, people, horn="FACT", text="A plain statement.", who="alice"):
    candidates.add(ctx, people["root"], "What holds?", text, horn)
    return claims.claim_next(ctx, people[who], horn)


@pytest.mark.parametrize("args", [["approve"], ["revise", "--text", "T"], ["reject", "--reason", "R"],
                                  ["escalate", "--reason", "R"], ["release"], ["claim"], ["show"]])
def test_a_candidate_id_that_is_not_a_number_is_a_400(ctx, people, args):
    claimed_one(ctx, people)
    before = table_counts(ctx)
    result = r2k("--as", "alice", "candidates", args[0], "first", *args[1:])
    assert result.returncode == 6
    assert error_of(result)["message"] == "a candidate id is a number, got 'first'"
    assert table_counts(ctx) == before


@pytest.mark.compat
def test_approve_publishes_to_the_registry_in_the_same_transaction(ctx, people):
    c = claimed_one(ctx, people)
    result = r2k_json("--as", "alice", "candidates", "approve", str(c["id"]), "--expected-version", str(c["version"]))
    assert result["candidate"]["state"] == "APPROVED"
    answer = result["answer"]
    assert (answer["status"], answer["text"], answer["candidate_id"]) == ("APPROVED", "A plain statement.", c["id"])
    assert [h["action"] for h in candidate_views.history(ctx, c["id"])] == ["extract", "claim", "approve"]


def test_revise_publishes_the_revised_text(ctx, people):
    c = claimed_one(ctx, people)
    result = candidates.revise(ctx, people["alice"], c["id"], "A better statement.")
    assert result["candidate"]["state"] == "REVISED"
    assert result["answer"]["text"] == "A better statement."
    with ctx.db.read() as tx:
        record = tx.one("SELECT * FROM validation_records WHERE candidate_id = %s", (c["id"],))
    assert (record["action"], record["revised_text"], record["actor"]) == ("revise", "A better statement.", "alice")


def test_reject_and_escalate(ctx, people):
    c = claimed_one(ctx, people)
    rejected = candidates.reject(ctx, people["alice"], c["id"], "duplicate of another answer")
    assert rejected["candidate"]["state"] == "REJECTED"
    c2 = claimed_one(ctx, people)
    escalated = r2k_json("--as", "alice", "candidates", "escalate", str(c2["id"]), "--reason", "needs an expert")
    assert escalated["candidate"]["state"] == "ESCALATED"
    assert (escalated["work_item"]["state"], escalated["work_item"]["candidate_id"]) == ("NEW", c2["id"])


def test_decisions_say_what_they_did_in_words(ctx, people):
    c = claimed_one(ctx, people)
    said = r2k("--as", "alice", "candidates", "escalate", str(c["id"]), "--reason", "needs an expert")
    item = workitems.list_items(ctx)[0]
    assert said.stdout.strip() == f"Escalated candidate {c['id']}: work item {item['id']} created."
    c = claimed_one(ctx, people)
    said = r2k("--as", "alice", "candidates", "release", str(c["id"]))
    assert said.stdout.strip() == f"Released candidate {c['id']}: back at the head of the FACT queue."
    c = claims.claim_next(ctx, people["alice"], "FACT")
    said = r2k("--as", "alice", "candidates", "approve", str(c["id"]))
    answer = registry.search(ctx, "")[0]
    assert said.stdout.strip() == f"Approved candidate {c['id']}: answer {answer['id']} published."
    assert "released: 0" in r2k("queue", "sweep").stdout
    candidates.add(ctx, people["root"], "What holds?", "A plain statement.", "FACT")
    stats = r2k("--as", "alice", "queue", "stats").stdout.splitlines()
    assert stats[0].split() == ["HORN_TYPE", "PENDING", "IN_REVIEW", "DISPUTED", "QUEUED", "OLDEST_PENDING"]
    assert stats[1].split() == ["FACT", "1", "0", "0", "1", "<1m"] and stats[2].split() == ["RULE", "0", "0", "0", "0", "—"]


@pytest.mark.parametrize("args,status,words", [
    (["reject", "{id}"], 6, "--reason"),
    (["reject", "{id}", "--reason", "  "], 6, "reason"),
    (["escalate", "{id}", "--reason", ""], 6, "reason"),
    (["revise", "{id}", "--text", " "], 6, "revised_text"),
])
def test_decisions_need_their_fields(ctx, people, args, status, words):
    c = claimed_one(ctx, people)
    result = r2k("--as", "alice", "candidates", *[a.format(id=c["id"]) for a in args])
    assert result.returncode == status and words in error_of(result)["message"]
    assert candidate_views.get(ctx, c["id"])["state"] == "IN_REVIEW"


def test_only_the_claimant_decides(ctx, people):
    c = claimed_one(ctx, people)
    result = r2k("--as", "bob", "candidates", "approve", str(c["id"]))
    assert result.returncode == 7 and "claimed" in error_of(result)["message"]
    assert candidate_views.get(ctx, c["id"])["state"] == "IN_REVIEW"


def test_approving_an_open_issue_is_a_422_that_says_escalate(ctx, people):
    c = claimed_one(ctx, people, "OPEN_ISSUE", "Is the yard open on Sundays?", who="vera")
    result = r2k("--as", "vera", "candidates", "approve", str(c["id"]))
    assert result.returncode == 5 and "escalate" in error_of(result)["message"]
    with pytest.raises(ValidationStateError, match="escalate"):
        candidates.revise(ctx, people["vera"], c["id"], "Yes it is.")
    assert candidate_views.get(ctx, c["id"])["state"] == "IN_REVIEW"
    assert candidates.escalate(ctx, people["vera"], c["id"], "needs an answer")["candidate"]["state"] == "ESCALATED"


def test_show_history_and_list(ctx, people):
    c = claimed_one(ctx, people)
    candidates.reject(ctx, people["alice"], c["id"], "wrong")
    shown = r2k_json("--as", "bob", "candidates", "show", str(c["id"]))
    assert shown["state"] == "REJECTED" and shown["history"][-1]["reason"] == "wrong"
    listed = r2k_json("--as", "bob", "candidates", "list", "--state", "rejected", "--horn-type", "FACT")
    assert [r["id"] for r in listed] == [c["id"]]
    bad = r2k("--as", "bob", "candidates", "list", "--state", "LIMBO")
    assert bad.returncode == 6 and "unknown candidate state" in error_of(bad)["message"]
    with pytest.raises(InvalidInput):
        candidate_views.list_candidates(ctx, limit=0)


def test_start_up_notices_a_lost_redis_and_rebuilds_the_queues(ctx, people):
    ids = add_many(ctx, people["root"], "RULE", 3)
    queue_index.reconcile(ctx)
    assert queue_index.reconcile_if_lost(ctx) is False  # nothing lost: one GET, nothing rebuilt
    ctx.redis.flushall()
    assert queue_index.reconcile_if_lost(ctx) is True
    assert queue_index.queue(ctx).ids("RULE") == ids


def test_workstations_offer_to_sweep_and_one_does_per_interval(ctx, people):
    from r2k.core.services.operations import sweeps

    first = sweeps.sweep_if_unattended(ctx, interval=30)  # no worker is running here
    assert set(first) == {"claims", "grey", "work_items", "tasks", "graph", "webhooks"}
    assert sweeps.sweep_if_unattended(ctx, interval=30) is None  # another within the interval: not needed


def test_a_worker_killed_without_a_word_does_not_stop_workstations_sweeping(ctx, people):
    """RQ lists a worker killed with kill -9 until its key lapses (minutes): the workstations' sweep
    must not wait for it, any more than their own worker start does (core/services/operations/workers_live.py)."""
    import subprocess
    import sys

    from r2k.core.adapters import jobs
    from r2k.core.services.operations import sweeps

    # A worker that registers on r2k's queues and dies without unregistering, as kill -9 leaves it.
    subprocess.run([sys.executable, "-c", (
        "import sys; from redis import Redis; from rq import Worker, Queue\n"
        "r = Redis.from_url(sys.argv[1]); qs = [Queue(q, connection=r) for q in sys.argv[2:]]\n"
        "Worker(qs, connection=r).register_birth()"), ctx.redis_url, *jobs.QUEUES.values()], check=True)
    assert len(jobs.workers(ctx.redis)) == 1  # still listed by RQ, as `r2k services status` lists workers
    assert sweeps.sweep_if_unattended(ctx, interval=30) is not None  # yet nobody serves: a workstation sweeps


def test_when_everyone_notices_a_lost_redis_at_once_one_rebuilds(ctx, people):
    import threading

    from r2k.core.bootstrap import bootstrap

    ids = add_many(ctx, people["root"], "FACT", 50)
    ctx.redis.flushall()
    start, results = threading.Barrier(4), []

    def workstation():
        own = bootstrap(ctx.settings)
        start.wait()
        results.append(queue_index.reconcile_if_lost(own))
        own.close()

    threads = [threading.Thread(target=workstation) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(results) == [False, False, False, True]
    assert queue_index.queue(ctx).ids("FACT") == ids


def test_a_read_ahead_entry_that_is_not_ours_is_ignored(ctx, people):
    ids = add_many(ctx, people["root"], "FACT", 2)
    ctx.redis.hset(heads_key("FACT"), ids[0], "garbage")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    assert (claimed["id"], claimed["state"]) == (ids[0], "IN_REVIEW")
