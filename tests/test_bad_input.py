"""Bad input is a 400 (or, in a folder ingest, a skipped file with its reason), never a 500, and it
changes nothing: texts too long for their limit, characters PostgreSQL refuses, JSON nested too
deep, numbers out of range, filters that would have been patterns, ids too large to be ids.

Commands run in-process (`app.cli.run`), as the fuzz test does.
"""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import unicodedata
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from r2k.core.domain import limits
from r2k.core.errors import InvalidInput
from r2k.core.services.answering import generation, workitems
from r2k.core.services.answers import registry
from r2k.core.services.documents import ingest
from r2k.core.services.grey_entries import grey
from r2k.core.services.queue import candidate_views, claims
from r2k.core.services.validation import candidates
from tests.conftest import ROOT, TABLES, error_of, r2k_process, redis_snapshot, within


def cli(*argv: str) -> tuple[int, str, str]:
    """Run `r2k ARGV` in this process: (exit code, stdout, stderr)."""
    from r2k.app.cli import run

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = run(list(argv))
    return code, out.getvalue(), err.getvalue()


def error(err: str) -> dict:
    return error_of(err)  # the JSON of --json, or the one readable line without it


def refused(code: int, err: str, status: int = 400) -> str:
    """The message of the error a command ended with, after checking it is the one expected."""
    assert code == {400: 6, 403: 7}[status], err
    shape = error(err)
    assert shape["status"] == status and set(shape) == {"error", "status", "message"}
    return shape["message"]


def counts(ctx) -> dict:
    with ctx.db.read() as tx:
        return {t: tx.scalar(f"SELECT count(*) FROM {t}") for t in TABLES}


# Text whose search index is as large as text can make it: hyphenated pairs of distinct four-byte
# letters ("𐐀-𐐁 ...") give about 10.5 bytes of tsvector per character, against PostgreSQL's 1 MB.
LETTERS = [chr(c) for c in range(0x10000, 0x30000) if unicodedata.category(chr(c)).startswith("L")]


def dense(chars: int, start: int = 0) -> str:
    words = (f"{LETTERS[(start + 2 * i) % len(LETTERS)]}-{LETTERS[(start + 2 * i + 1) % len(LETTERS)]}"
             for i in range(chars // 4 + 1))
    return " ".join(words)[:chars].strip()


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


GOOD = "# Yard\n\n## Gates\n\nGate 4 closes at ten every night of the week.\n"
LATER = "# Parking\n\n## Bays\n\nVisitors park in bays one to six beside the gatehouse.\n"


# ----------------------------------------------------------------------------- ingest

def test_a_folder_ingest_skips_each_bad_file_with_its_reason_and_reads_the_rest(ctx, people, tmp_path):
    folder = tmp_path / "docs"
    write(folder / "a-good.md", GOOD)
    write(folder / "b-nul.md", "# Notes\n\nThe first line is fine.\n\nThe second \x00 is not.\n")
    write(folder / "c-deep.jsonl", '{"question": "Who?", "answer": "The yard lead does it."}\n'
                                   + "[" * 100_000 + "]" * 100_000 + "\n")
    paragraph = " ".join(f"word{i}" for i in range(120_000))  # 1.2 MB of distinct words
    write(folder / "d-one-paragraph.md", paragraph)
    write(folder / "e-too-large.txt", ("Forklifts are charged overnight in bay nine. " * 48_000))  # > 2 MB
    write(folder / "f-escapes.jsonl", '{"question": "Who signs?", "answer": "The lead signs."}\n'
                                      '{"question": "Why\\u0000?", "answer": "No reason at all."}\n')
    write(folder / "g-surrogate.jsonl", '{"question": "When?", "answer": "At \\ud800 noon every day."}\n')
    write(folder / "h-encoded-surrogate.md", b"# Odd\n\nA surrogate \xed\xa0\x80 encoded as UTF-8.\n")
    write(folder / "i-long-heading.md", "# Manual\n\n## " + "very " * 1_000 + "long heading\n\n"
                                        "The text under it is short enough to review here.\n")
    write(folder / "z-later.md", LATER)
    before = counts(ctx)

    code, out, err = cli("--json", "--as", "root", "ingest", str(folder))

    assert code == 0, err
    summary = json.loads(out)
    skipped = {Path(s["path"]).name: s for s in summary["skipped"]}
    assert sorted(skipped) == ["b-nul.md", "c-deep.jsonl", "d-one-paragraph.md", "e-too-large.txt",
                               "f-escapes.jsonl", "g-surrogate.jsonl", "h-encoded-surrogate.md",
                               "i-long-heading.md"]
    assert skipped["b-nul.md"]["line"] == 5 and "NUL" in skipped["b-nul.md"]["reason"]
    assert skipped["c-deep.jsonl"]["line"] == 2
    assert f"nested deeper than {limits.JSON_DEPTH} levels" in skipped["c-deep.jsonl"]["reason"]
    assert skipped["d-one-paragraph.md"]["line"] == 1
    assert skipped["d-one-paragraph.md"]["reason"] == (f"an answer is at most 20,000 characters; "
                                                       f"this one has {len(paragraph):,}")
    assert "a document is at most 2 MB" in skipped["e-too-large.txt"]["reason"]
    assert skipped["f-escapes.jsonl"]["line"] == 2 and "NUL" in skipped["f-escapes.jsonl"]["reason"]
    assert skipped["g-surrogate.jsonl"]["line"] == 1 and "surrogate" in skipped["g-surrogate.jsonl"]["reason"]
    assert "not UTF-8" in skipped["h-encoded-surrogate.md"]["reason"]
    assert skipped["i-long-heading.md"]["line"] == 3
    assert "a heading is at most 2,000 characters" in skipped["i-long-heading.md"]["reason"]
    assert err.count("c-deep.jsonl:2") == 1 and "RecursionError" not in err
    # The files after the bad ones were read. A file that cannot be read leaves nothing; a JSON Lines file
    # keeps its good lines; a heading over its limit is left out, and the text under it goes in.
    assert summary["documents"] == 5
    with ctx.db.read() as tx:
        assert sorted(Path(r["path"]).name for r in tx.all("SELECT path FROM source_documents")) == [
            "a-good.md", "c-deep.jsonl", "f-escapes.jsonl", "i-long-heading.md", "z-later.md"]
        assert tx.scalar("SELECT count(*) FROM candidates WHERE question IN ('Who?', 'Who signs?')") == 2
        assert tx.scalar("SELECT count(*) FROM candidates WHERE question LIKE 'Why%'") == 0
    after = counts(ctx)
    assert after["source_documents"] == before["source_documents"] + 5


def test_a_single_bad_file_is_a_400_and_changes_nothing(ctx, people, tmp_path):
    path = write(tmp_path / "deep.jsonl", "{" * 50_000 + "\n")
    before = counts(ctx)
    code, _, err = cli("--as", "root", "ingest", str(path))
    assert "nothing was ingested" in refused(code, err)
    assert "deep.jsonl:1" in err
    assert counts(ctx) == before


def test_a_file_name_that_is_not_utf8_is_ingested_under_a_visible_name(ctx, people, tmp_path):
    path = tmp_path / os.fsdecode(b"caf\xe9-hours.md")
    write(path, "# Caf\u00e9\n\n## Hours\n\nThe caf\u00e9 opens at seven on every weekday morning.\n")
    summary = ingest.ingest(ctx, people["root"], [tmp_path])
    assert summary["documents"] == 1 and summary["skipped"] == []
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT path FROM source_documents").endswith("caf\\xe9-hours.md")


def test_a_dense_document_of_nearly_2_mb_goes_in_and_is_searchable(ctx, people, tmp_path):
    # Its whole text would make a tsvector of about 8 MB; the index reads a bounded prefix.
    paragraphs = [dense(15_000, start=i * 7_000) for i in range(48)]
    path = write(tmp_path / "dense.md", "# Dense\n\n" + "\n\n".join(paragraphs) + "\n")
    assert 1_500_000 < path.stat().st_size < limits.DOCUMENT_BYTES
    summary = ingest.ingest(ctx, people["root"], [path])
    assert summary["skipped"] == [] and summary["documents"] == 1 and summary["candidates_total"] == 48
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT count(*) FROM source_passages WHERE search @@ to_tsquery('simple', %s)",
                         (LETTERS[0].lower(),)) >= 1


# ----------------------------------------------------------------------------- texts

@pytest.mark.parametrize("field,value,words", [
    ("--question", "Why\x00?", "NUL"),
    ("--question", "Why \ud800?", "surrogate"),
    ("--question", "x" * 5_013, "a question is at most 2,000 characters; this one has 5,013"),
    ("--text", "A" * 20_001, "an answer is at most 20,000 characters; this one has 20,001"),
    ("--text", "A fact\x00.", "NUL"),
    ("--source-ref", "ref\x00", "NUL"),
    ("--source-ref", "r" * 2_001, "a source reference is at most 2,000 characters"),
])
def test_candidates_add_refuses_what_cannot_be_stored(ctx, people, field, value, words):
    args = {"--question": "Who opens the gate?", "--text": "The yard lead opens the gate.", field: value}
    before = counts(ctx)
    code, _, err = cli("--as", "root", "candidates", "add", *[x for kv in args.items() for x in kv])
    assert words in refused(code, err)
    assert counts(ctx) == before
    with pytest.raises(InvalidInput, match=words.split(";")[0]):
        candidates.add(ctx, people["root"], args["--question"], args["--text"], "FACT", args.get("--source-ref"))
    assert counts(ctx) == before


def test_a_question_and_answer_at_their_limits_can_be_claimed_and_approved(ctx, people):
    question, text = dense(limits.QUESTION), dense(limits.ANSWER, start=30_000)
    added = candidates.add(ctx, people["root"], question, text, "FACT")
    code, _, err = cli("--as", "alice", "candidates", "claim", str(added["id"]))
    assert code == 0, err
    code, out, err = cli("--json", "--as", "alice", "candidates", "approve", str(added["id"]))
    assert code == 0, err
    assert json.loads(out)["answer"]["question"] == question


def test_a_question_longer_than_the_index_reads_can_still_be_approved(ctx, people):
    # A candidate stored before the limits (or by a path that bypasses them): 300,000 characters of
    # question. The registry's search column reads a bounded prefix, so publishing it cannot overflow.
    with ctx.db.begin() as tx:
        row = candidates.create_candidate(tx, people["root"], dense(300_000), "The yard lead opens it.", "FACT",
                                          [], origin="manual")
    claims.claim(ctx, people["alice"], row["id"])
    decided = candidates.approve(ctx, people["alice"], row["id"])
    assert decided["answer"]["status"] == "APPROVED"
    assert registry.search(ctx, "yard lead")[0]["id"] == decided["answer"]["id"]


def claimed(ctx, people) -> dict:
    added = candidates.add(ctx, people["root"], "Who opens the gate?", "The yard lead opens the gate.", "FACT")
    return claims.claim(ctx, people["alice"], added["id"])


@pytest.mark.parametrize("argv,words", [
    (["revise", "--text", "B" * 20_001], "an answer is at most 20,000 characters"),
    (["revise", "--text", "B\x00"], "NUL"),
    (["reject", "--reason", "r" * 2_001], "a reason is at most 2,000 characters; this one has 2,001"),
    (["escalate", "--reason", "why\udfff"], "surrogate"),
])
def test_a_decision_with_bad_text_is_a_400_and_the_claim_stands(ctx, people, argv, words):
    row = claimed(ctx, people)
    before = counts(ctx)
    code, _, err = cli("--as", "alice", "candidates", argv[0], str(row["id"]), *argv[1:])
    assert words in refused(code, err)
    assert counts(ctx) == before
    now = candidate_views.get(ctx, row["id"])
    assert (now["state"], now["version"], now["claimed_by"]) == ("IN_REVIEW", row["version"], "alice")


def test_registry_moves_with_bad_text_are_a_400(ctx, people):
    row = claimed(ctx, people)
    answer = candidates.approve(ctx, people["alice"], row["id"])["answer"]
    before = counts(ctx)
    for argv, words in [(["supersede", "--text", "C" * 20_001, "--reason", "new"], "an answer is at most"),
                        (["supersede", "--text", "New.", "--reason", "x\x00"], "NUL"),
                        (["dispute", "--reason", "d" * 2_001], "a reason is at most"),
                        (["retire", "--reason", "\ud83d"], "surrogate")]:
        code, _, err = cli("--as", "alice", "registry", argv[0], str(answer["id"]), *argv[1:])
        assert words in refused(code, err)
    assert counts(ctx) == before
    assert registry.show(ctx, answer["id"])["status"] == "APPROVED"


def test_work_items_and_grey_entries_with_bad_text_are_a_400(ctx, people):
    entry = grey.add(ctx, people["sam"], "Who owns the cameras?")
    item = workitems.create(ctx, people["sam"], "Who owns the cameras?")
    before = counts(ctx)
    for argv, words in [
            (["workitems", "create", "--question", "q" * 2_001], "a question is at most 2,000 characters"),
            (["workitems", "close", str(item["id"]), "--reason", "\x00"], "NUL"),
            (["grey", "add", "--subject", "s" * 2_001], "a grey subject is at most 2,000 characters"),
            (["grey", "add", "--subject", "S", "--detail", "d" * 20_001], "a grey detail is at most 20,000"),
            (["grey", "add", "--subject", "S\x00"], "NUL"),
            (["grey", "assign", str(entry["id"]), "--assignee", "sam\x00"], "NUL"),
            (["grey", "assign", str(entry["id"]), "--assignee", "sam", "--notes", "n" * 2_001], "at most 2,000"),
            (["grey", "dismiss", str(entry["id"]), "--reason", "\udc80"], "surrogate"),
            (["grey", "list", "--text", "\x00"], "NUL"),
            (["grey", "list", "--assignee", "\x00"], "NUL"),
            (["candidates", "list", "--claimed-by", "a\x00"], "NUL")]:
        code, _, err = cli("--as", "sam", *argv)
        assert words in refused(code, err), argv
    assert counts(ctx) == before


def test_a_generated_answer_too_long_escalates_its_work_item(ctx, people):
    from r2k.core.adapters.llm import Generation
    from r2k.core.bootstrap import bootstrap

    class Verbose:
        def complete(self, prompt):
            return Generation(text="The yard lead opens it. " * 1_000, model="chatty\x00")

    with ctx.db.begin() as tx:  # two sources that share the question's terms
        for n in range(2):
            document = tx.one("INSERT INTO source_documents (path, title, media_type, content, content_hash, "
                              "created_by, created_at, updated_at) VALUES (%s, 't', 'text/plain', 'yard gate', %s, "
                              "'root', now(), now()) RETURNING id", (f"s{n}", f"h{n}"))
            tx.execute("INSERT INTO source_passages (document_id, ordinal, span_start, span_end, text) "
                       "VALUES (%s, 0, 0, 20, 'The yard lead opens the gate every day.')", (document["id"],))
    item = workitems.create(ctx, people["sam"], "Who opens the yard gate?")
    with_llm = bootstrap(ctx.settings.model_copy(update={"llm_url": "http://127.0.0.1:9/v1"}), pool_size=2)
    try:
        outcome = generation.generate_answer(with_llm, item["id"], llm=Verbose())
    finally:
        with_llm.close()
    assert outcome["outcome"] == "escalated"
    assert "an answer is at most 20,000 characters" in outcome["reason"]
    assert workitems.get(ctx, item["id"])["state"] == "ESCALATED"


# ----------------------------------------------------------------------------- numbers

@pytest.mark.parametrize("argv,words", [
    (["grey", "add", "--subject", "S", "--ttl", "2147483648"], "--ttl is 1–31,536,000 seconds, got 2147483648"),
    (["grey", "add", "--subject", "S", "--ttl", "0"], "--ttl is 1–31,536,000 seconds, got 0"),
    (["grey", "add", "--subject", "S", "--max-attempts", "1" + "0" * 30], "--max-attempts is 1–100, got 1000"),
    (["grey", "add", "--subject", "S", "--ttl", "1.5"], "--ttl is a whole number"),
    (["grey", "list", "--limit", "-1"], "--limit is 1–10,000, got -1"),
    (["workitems", "list", "--limit", "-1"], "--limit is 1–10,000, got -1"),
    (["candidates", "list", "--limit", "0"], "--limit is 1–10,000, got 0"),
    (["candidates", "list", "--offset", "99999999999999999999"], "--offset is 0 or more, at most 1,000,000,000"),
    (["registry", "search", "x", "--offset", "99999999999999999999"], "--offset is 0 or more"),
    (["registry", "search", "x", "--limit", "abc"], "--limit is a whole number"),
    (["registry", "readout", "x", "--limit", "1001"], "--limit is 1–1,000, got 1001"),
    (["candidates", "claim", "1", "--expected-version", "2147483648"], "--expected-version is 1–2,147,483,647"),
    (["candidates", "show", "99999999999999999999"], "a candidate id is 1–9,223,372,036,854,775,807"),
    (["grey", "show", "-5"], "a grey entry id is 1–"),
])
def test_numbers_out_of_range_are_a_400_naming_the_option_and_its_range(ctx, people, argv, words):
    before = counts(ctx)
    code, _, err = cli("--as", "root", *argv)
    assert words in refused(code, err)
    assert counts(ctx) == before


def test_core_checks_its_numbers_too(ctx, people):
    pending = candidates.add(ctx, people["root"], "Who opens the gate?", "The yard lead opens the gate.", "FACT")
    before = counts(ctx)
    for call, words in [
            (lambda: grey.add(ctx, people["sam"], "S", ttl_seconds=2 ** 31), "--ttl is 1–31,536,000"),
            (lambda: grey.add(ctx, people["sam"], "S", max_attempts=0), "--max-attempts is 1–100"),
            (lambda: grey.list_entries(ctx, limit=-1), "--limit is 1–10,000"),
            (lambda: grey.list_entries(ctx, offset=10 ** 20), "--offset is 0 or more"),
            (lambda: workitems.list_items(ctx, limit=0), "--limit is 1–10,000"),
            (lambda: registry.search(ctx, "x", offset=10 ** 20), "--offset is 0 or more"),
            (lambda: claims.claim(ctx, people["alice"], pending["id"], expected_version=2 ** 40),
             "--expected-version"),
            (lambda: candidate_views.get(ctx, 2 ** 63), "a candidate id is 1–")]:
        with pytest.raises(InvalidInput, match=words):
            call()
    assert counts(ctx) == before


# ----------------------------------------------------------------------------- filters and search

def test_grey_text_filter_matches_text_literally(ctx, people):
    percent = grey.add(ctx, people["sam"], "Is 100% of the yard covered?")
    underscore = grey.add(ctx, people["sam"], "What is gate_4?")
    grey.add(ctx, people["sam"], "Who owns the cameras?")
    backslash = grey.add(ctx, people["sam"], "Where is C:\\yard kept?")
    in_detail = grey.add(ctx, people["sam"], "Coverage", "about 50% of it")
    for text, expected in [("%", [in_detail, percent]), ("_", [underscore]), ("\\", [backslash]),
                           ("100%", [percent]), ("e_4", [underscore])]:
        code, out, err = cli("--json", "--as", "sam", "grey", "list", "--text", text)
        assert code == 0, err
        assert [e["id"] for e in json.loads(out)] == [e["id"] for e in expected], text


@pytest.mark.parametrize("query", ['"', '"unclosed phrase', "&|!():*", "a & | b", "!!!", "(((", "\\", "\\\\'",
                                   "'", "-", "or", "-a -b", ":*", "a:* & b:*", "", "   ", "x" * 1_000,
                                   " ".join(f"w{i}" for i in range(150)), "\u202e\u0007", "日本語の検索"])
def test_registry_search_never_fails_on_what_is_typed(ctx, people, query):
    row = claimed(ctx, people)
    candidates.approve(ctx, people["alice"], row["id"])
    for argv in (["registry", "search", query], ["registry", "readout", query or "x"]):
        code, out, err = cli("--json", "--as", "bob", *argv)
        assert code == 0, err
        assert isinstance(json.loads(out), list)


def test_registry_search_refuses_what_is_not_a_query(ctx, people):
    for query, words in [("x" * 1_001, "a search is at most 1,000 characters"), ("a\x00b", "NUL"),
                         ("\ud800", "surrogate")]:
        code, _, err = cli("--as", "bob", "registry", "search", query)
        assert words in refused(code, err)


# ----------------------------------------------------------------------------- who and keys

def test_names_and_keys_that_cannot_be_stored(ctx, people):
    before = counts(ctx)
    code, _, err = cli("--as", "ro\x00ot", "queue", "stats")
    assert "unknown user" in refused(code, err, 403)
    code, _, err = cli("--as", "\ud800", "queue", "stats")
    assert "unknown user" in refused(code, err, 403)
    code, _, err = cli("--as", "root", "grey", "add", "--subject", "S", "--idempotency-key", "k\x00")
    assert "idempotency key" in refused(code, err)
    code, _, err = cli("--as", "root", "users", "add", "n\x00", "--role", "admin")
    assert "user name" in refused(code, err)
    assert counts(ctx) == before


def test_an_anchor_file_that_is_not_a_checkpoint_is_a_400(ctx, people, tmp_path):
    for name, content in [("binary", b"\xff\xfe\x00\x01"), ("deep", b"[" * 100_000),
                          ("nul", b'{"number": 1, "x": "\\u0000"}\x00')]:
        path = write(tmp_path / name, content)
        code, _, err = cli("--as", "root", "audit", "verify", "--anchor", str(path))
        assert "anchor file" in refused(code, err), name
    code, _, err = cli("--as", "root", "audit", "verify", "--anchor", "a\x00b")
    assert "anchor file" in refused(code, err)


# ----------------------------------------------------------------------------- the schema

def test_every_search_column_reads_a_bounded_prefix_and_keeps_its_index(ctx, superuser):
    columns = superuser("SELECT table_name, generation_expression FROM information_schema.columns "
                        "WHERE column_name = 'search' AND table_schema = 'public' ORDER BY table_name")
    assert [c["table_name"] for c in columns] == ["approved_answers", "grey_entries", "source_documents",
                                                 "source_passages"]
    bounded = {c["table_name"]: c["generation_expression"].replace('"', "").count("left(") for c in columns}
    assert bounded == {"approved_answers": 2, "grey_entries": 2, "source_documents": 2, "source_passages": 1}
    indexes = superuser("SELECT indexname, indexdef FROM pg_indexes WHERE indexdef LIKE '%%USING gin (search)%%' "
                        "ORDER BY indexname")
    assert [i["indexname"] for i in indexes] == ["approved_answers_search", "grey_entries_search",
                                                "source_documents_search", "source_passages_search"]


# ----------------------------------------------------------------------------- time

def test_text_that_made_patterns_backtrack_is_read_in_linear_time(ctx, people, tmp_path):
    # Each of these took minutes to hours: "first … then … finally" backtracked cubically, a step
    # line's leading blanks rescanned every blank line after it, a heading's closing #s backtracked
    # through its blanks, and a heading's words were tried as names in every length.
    import time

    started = time.monotonic()
    for text in ("first then " * 1_800, "\n" * 19_990 + "A fact.", "1." + " " * 19_990 + "x"):
        assert candidates.add(ctx, people["root"], "Which steps?", text)["horn_type"]
    write(tmp_path / "blanks.md", "# a" + " " * 20_000 + "b\n\nThe gate closes at ten every night.\n")
    write(tmp_path / "words.md", "## " + "Gate " * 19_000 + "\n\nThe Gate Team closes the north gate at ten.\n")
    summary = ingest.ingest(ctx, people["root"], [tmp_path])
    # The heading over its limit is skipped with its line; the text under it goes in.
    assert summary["documents"] == 2 and [(Path(s["path"]).name, s["line"]) for s in summary["skipped"]] == [
        ("words.md", 1)]
    assert time.monotonic() - started < 20


def test_a_path_too_long_for_the_file_system_is_skipped_with_its_reason(ctx, people, tmp_path):
    # Found by tests/test_fuzz.py: pathlib lets ENAMETOOLONG through its is_dir().
    write(tmp_path / "good.md", GOOD)
    summary = ingest.ingest(ctx, people["root"], [tmp_path / ("word " * 1_000), tmp_path / "good.md"])
    assert summary["documents"] == 1
    assert [s["reason"] for s in summary["skipped"]] == ["cannot be read: File name too long"]


# ----------------------------------------------------------------------------- JSON into the event log

def draft(ctx, people) -> dict:
    from r2k.core.services import tasks

    return tasks.create(ctx, people["vera"], "Backups", "Nightly backups are kept for 30 days.")


@pytest.mark.parametrize("metadata,field,words", [
    ('{"note": "a lone \\ud800 surrogate"}', "metadata.note", "lone surrogate (U+D800)"),
    ('{"note": "a raw \udcff byte"}', "metadata.note", "lone surrogate (U+DCFF)"),  # what argv makes of \xff
    ('{"note": "a NUL \\u0000 here"}', "metadata.note", "NUL character"),
    ('{"reason": "\\u0000"}', "metadata.reason", "NUL character"),
    ('{"flagged_claims": [{"claim": "x\\udfff"}]}', "metadata.flagged_claims[0].claim", "lone surrogate"),
    ('{"flagged_claims": ["\\u0000"]}', "metadata.flagged_claims[0]", "NUL character"),
    ('{"reviewer_ids": ["alice", "b\\u0000b"]}', "metadata.reviewer_ids[1]", "NUL character"),
    ('{"flagged_claims": [{"\\ud800": 1}]}', "metadata.flagged_claims[0]", "has a key that holds a lone surrogate"),
])
def test_metadata_text_the_event_log_cannot_hold_is_a_400_naming_the_field(ctx, people, metadata, field, words):
    task = draft(ctx, people)
    before, queues = counts(ctx), redis_snapshot(ctx.redis)
    code, _, err = cli("--json", "--as", "vera", "tasks", "transition", str(task["id"]), "--to", "AI_ANALYSIS",
                       "--idempotency-key", "k1", "--metadata", metadata)
    message = refused(code, err)
    assert message.startswith(f"invalid transition request: {field} ") and words in message, message
    assert counts(ctx) == before and redis_snapshot(ctx.redis) == queues


def test_a_raw_byte_in_the_metadata_of_a_real_process_is_a_400(ctx, people):
    # A byte that is not UTF-8 on the command line reaches Python as a lone surrogate (PEP 383).
    task = draft(ctx, people)
    before = counts(ctx)
    result = r2k_process("--as", "vera", "tasks", "transition", str(task["id"]), "--to", "AI_ANALYSIS",
                         "--idempotency-key", "k1", "--metadata", '{"note": "\udcff"}')
    assert result.returncode == 6, result.stderr
    assert "metadata.note holds a lone surrogate (U+DCFF)" in error_of(result)["message"]
    assert counts(ctx) == before


def test_the_event_log_refuses_what_it_cannot_hash_or_store_naming_where():
    # The last check before an event is hashed and written, for any path that did not check its fields.
    from r2k.core.events import canonical

    for payload, words in [({"fields": {"note": "a\x00"}}, "fields.note holds a NUL character (U+0000)"),
                           ({"fields": {"why": ["ok", "\udcff"]}}, "fields.why[1] holds a lone surrogate (U+DCFF)"),
                           ({"set": {"score": float("nan")}}, "set.score is not a finite number (nan)"),
                           ({"set": {"\ud800": 1}}, "set has a key that holds a lone surrogate")]:
        with pytest.raises(InvalidInput, match=re.escape(words)):
            canonical(payload)
    # Text that merely reads like an escape is text.
    assert canonical({"note": "\\u0000"}) == b'{"note":"\\\\u0000"}'


# ----------------------------------------------------------------------------- settings

def settings_refusal(monkeypatch, env: dict) -> str:
    """The one line get_settings() refuses `env` with (every entry point reads its settings through it)."""
    from r2k.core.config import get_settings

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    try:
        with pytest.raises(InvalidInput) as refused_:
            get_settings()
    finally:
        for name in env:
            monkeypatch.delenv(name)
        get_settings.cache_clear()
    assert "\n" not in refused_.value.message
    return refused_.value.message


BAD_SETTINGS = [
    # What the attack run found: a traceback for these …
    ("R2K_CLAIM_LEASE_SECONDS", "abc", "R2K_CLAIM_LEASE_SECONDS is a whole number of seconds, 1–604,800; got 'abc'"),
    ("R2K_CLAIM_LEASE_SECONDS", "nan", "R2K_CLAIM_LEASE_SECONDS is a whole number of seconds, 1–604,800; got 'nan'"),
    ("R2K_CLAIM_LEASE_SECONDS", "1e999", "R2K_CLAIM_LEASE_SECONDS is a whole number of seconds, 1–604,800; "
                                         "got '1e999'"),
    ("R2K_UNDO_SECONDS", "-1", "R2K_UNDO_SECONDS is a finite number of seconds, 0–86,400; got '-1'"),
    ("R2K_CHECKPOINT_SECONDS", "-1", "R2K_CHECKPOINT_SECONDS is a finite number of seconds, more than 0, "
                                     "at most 86,400; got '-1'"),
    ("R2K_TASK_CONFIDENCE_THRESHOLD", "nan", "R2K_TASK_CONFIDENCE_THRESHOLD is a finite number, 0–1; got 'nan'"),
    # … and these were taken silently.
    ("R2K_CLAIM_LEASE_SECONDS", "-1", "R2K_CLAIM_LEASE_SECONDS is a whole number of seconds, 1–604,800; got '-1'"),
    ("R2K_LLM_TIMEOUT", "nan", "R2K_LLM_TIMEOUT is a finite number of seconds, more than 0, at most 3,600; got 'nan'"),
    ("R2K_BREAKER_COOLDOWN", "nan", "R2K_BREAKER_COOLDOWN is a finite number of seconds, 0–86,400; got 'nan'"),
    ("R2K_CHECKPOINT_SECONDS", "1e999", "R2K_CHECKPOINT_SECONDS is a finite number of seconds, more than 0, "
                                        "at most 86,400; got '1e999'"),
    ("R2K_CHECKPOINT_SECONDS", "0", "R2K_CHECKPOINT_SECONDS is a finite number of seconds, more than 0, "
                                    "at most 86,400; got '0'"),
    ("R2K_TASK_CONFIDENCE_THRESHOLD", "1.5", "R2K_TASK_CONFIDENCE_THRESHOLD is a finite number, 0–1; got '1.5'"),
    ("R2K_SWEEP_INTERVAL", "0", "R2K_SWEEP_INTERVAL is a whole number of seconds, 1–3,600; got '0'"),
    ("R2K_CHECKPOINT_EVENTS", "9" * 50, "R2K_CHECKPOINT_EVENTS is a whole number of events, 1–1,000,000; got "
                                        "'" + "9" * 38 + "…"),
    ("R2K_SSH_IDLE_SECONDS", "soon", "R2K_SSH_IDLE_SECONDS is a whole number of seconds, 5–604,800; got 'soon'"),
    ("R2K_DATA_DIR", "", "R2K_DATA_DIR is the path of a folder, at most 4,096 bytes; got '', an empty path"),
    ("R2K_DATA_DIR", "/dev/null", "R2K_DATA_DIR is the path of a folder, at most 4,096 bytes; got '/dev/null', "
                                  "a character device"),
    ("R2K_TRUSTED_KEYS", "/dev/zero", "R2K_TRUSTED_KEYS is the path of a regular file, at most 4,096 bytes; "
                                      "got '/dev/zero', a character device"),
    ("R2K_SIGNING_KEY_FILE", "/", "R2K_SIGNING_KEY_FILE is the path of a regular file, at most 4,096 bytes; "
                                  "got '/', a folder"),
    ("R2K_SIGNING_KEY_FILE", "k" * 5000, "R2K_SIGNING_KEY_FILE is the path of a regular file, at most 4,096 bytes; "
                                         "got 'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk…, a path of 5,000 bytes"),
]


@pytest.mark.parametrize("name,value,message", BAD_SETTINGS, ids=[f"{n}={v[:12]}" for n, v, _ in BAD_SETTINGS])
def test_a_setting_out_of_its_range_is_one_line_naming_it_and_the_range(monkeypatch, name, value, message):
    assert settings_refusal(monkeypatch, {name: value}) == message


def test_every_number_and_path_setting_has_a_range_that_refuses_what_is_not_in_it(monkeypatch, tmp_path):
    import os

    from r2k.core.config import Settings, allowed

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    checked = []
    for field, info in Settings.model_fields.items():
        name = f"R2K_{field.upper()}"
        if info.description in ("a regular file", "a folder"):
            bad = ["", "x" * 4_097, str(fifo), "/dev/zero"] + (["/"] if info.description == "a regular file" else [])
        elif info.annotation in (int, float):
            bad = ["nan", "inf", "-inf", "1e999", "abc", "", "-1e9", "1e12", "0x10"]
        else:
            continue  # URLs, names and keys: text, checked where they are used
        for value in bad:
            message = settings_refusal(monkeypatch, {name: value})
            assert message.startswith(f"{name} is {allowed(field)}; got "), (name, value, message)
        checked.append(name)
    assert len(checked) == 21  # a new number or path setting gets its range, or this fails


def test_several_bad_settings_name_the_first_and_count_the_others(monkeypatch):
    assert settings_refusal(monkeypatch, {"R2K_LLM_RETRIES": "-3", "R2K_SWEEP_INTERVAL": "0",
                                          "R2K_SSH_IDLE_SECONDS": "x"}) == (
        "R2K_LLM_RETRIES is a whole number, 0–10; got '-3' (R2K_SWEEP_INTERVAL, R2K_SSH_IDLE_SECONDS are out "
        "of range too)")


# A database that nothing answers: were the settings not checked first, the command would fail on it (8).
NOWHERE = {"R2K_DATABASE_URL": "postgresql://r2k@127.0.0.1:9/r2k", "R2K_REDIS_URL": "redis://127.0.0.1:9/0",
           "R2K_GRAPH_URL": "falkor://127.0.0.1:9", "R2K_START_WORKER": "0"}


@pytest.mark.parametrize("entry", [
    [sys.executable, "-m", "r2k.app", "--as", "root", "queue", "stats"],
    [sys.executable, "-m", "r2k.app", "--json", "grey", "add", "--subject", "S"],
    [sys.executable, "-m", "r2k.app", "worker", "--burst"],
    [sys.executable, "-m", "r2k.app", "serve", "ssh", "--port", "0"],
    [sys.executable, "-m", "r2k.app", "serve", "web", "--port", "1", "--as", "root"],
    [sys.executable, "-m", "r2k.app"],  # the workstation
    [sys.executable, "-m", "r2k.app.remote.session", "alice"],  # an SSH session's workstation
], ids=["command", "json", "worker", "serve-ssh", "serve-web", "workstation", "ssh-session"])
def test_every_entry_point_refuses_a_bad_setting_before_it_starts_anything(tmp_path, entry):
    env = {**os.environ, **NOWHERE, "R2K_DATA_DIR": str(tmp_path / "data"), "R2K_CHECKPOINT_SECONDS": "nan"}
    result = subprocess.run(entry, capture_output=True, text=True, env=env, timeout=120, cwd=ROOT,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 6, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr
    assert error_of(result)["message"] == ("R2K_CHECKPOINT_SECONDS is a finite number of seconds, more than 0, "
                                           "at most 86,400; got 'nan'")
    assert not (tmp_path / "data").exists()  # nothing started, nothing made


# ----------------------------------------------------------------------------- files given

def special(tmp_path: Path, kind: str) -> str:
    """A path that is no regular file to read, or one too large for any kind of file argument."""
    import socket

    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")  # a read would wait for a writer for ever
        return str(tmp_path / "fifo")
    if kind == "folder":
        (tmp_path / "folder").mkdir()
        return str(tmp_path / "folder")
    if kind == "device":
        return "/dev/zero"  # a read never ends (3.2 GB in 3 s, read whole)
    if kind == "socket":
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(tmp_path / "sock"))
        listener.close()  # the socket file stays
        return str(tmp_path / "sock")
    with open(tmp_path / "huge", "wb") as handle:  # sparse: 5 GB that take no room
        handle.truncate(5 * 2**30)
    return str(tmp_path / "huge")


KIND_SAID = {"fifo": "is a FIFO, not a regular file", "folder": "is a folder, not a regular file",
             "device": "is a character device, not a regular file", "socket": "is a socket, not a regular file",
             "huge": "has 5,368,709,120 bytes; "}


def public_key_file(tmp_path: Path) -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    path = tmp_path / "ada.pub"
    path.write_bytes(Ed25519PrivateKey.generate().public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH) + b" ada@laptop\n")
    return str(path)


# (argv with X for the path, what the error calls it, what a file too large is told)
FILE_ARGUMENTS = {
    "body-file": (["--as", "vera", "tasks", "create", "--title", "T", "--body-file", "X"], "--body-file X",
                  "an article file is at most 512 KB (524,288 bytes)"),
    "resolve-body-file": (["--as", "vera", "tasks", "resolve", "1", "--note", "N", "--body-file", "X"],
                          "--body-file X", "an article file is at most 512 KB (524,288 bytes)"),
    "key-file": (["--as", "root", "users", "add-key", "alice", "--key-file", "X"], "--key-file X",
                 "a key file is at most 16 KB (16,384 bytes)"),
    "authorized-keys": (["--as", "root", "users", "add-key", "alice", "--key-file", "PUB", "--authorized-keys", "X"],
                        "the authorized keys file X", "a keys file is at most 4 MB (4,194,304 bytes)"),
    "anchor": (["--as", "root", "audit", "verify", "--anchor", "X"], "the anchor file X",
               "an anchor file is at most 16 MB (16,777,216 bytes)"),
    "serve-ssh": (["--as", "root", "serve", "ssh", "--port", "0", "--authorized-keys", "X"], "--authorized-keys X",
                  None),  # a large regular file is the server's to refuse at a login (below)
    "guidelines": (["--as", "root", "queue", "guidelines", "FACT", "--file", "X"], "--file X",
                   "an article file is at most 512 KB (524,288 bytes)"),
}
# Every bulk action's list of ids (docs/architecture.md, "Bulk actions"), with what each requires.
IDS_SAID = "an ids file is at most 4 MB (4,194,304 bytes)"
for _group, _move, _extra in [("registry", "dispute", ["--reason", "R"]), ("registry", "retire", ["--reason", "R"]),
                              ("grey", "assign", ["--assignee", "sam"]), ("grey", "unassign", []),
                              ("grey", "escalate", ["--reason", "R"]), ("grey", "deescalate", []),
                              ("grey", "reject", ["--reason", "R"]), ("grey", "reopen", []), ("grey", "resolve", []),
                              ("grey", "dismiss", []), ("grey", "reset", []), ("workitems", "close", [])]:
    FILE_ARGUMENTS[f"{_group}-{_move}-ids"] = (["--as", "root", _group, _move, "1", *_extra, "--from-file", "X"],
                                               "--from-file X", IDS_SAID)
# Written, not read: an export refuses a target that is no regular file (tests/test_export.py).
OUTPUTS = {("export", kind, "--output") for kind in ("registry", "decisions", "tasks")}


@pytest.mark.parametrize("argument,kind", [(a, k) for a in sorted(FILE_ARGUMENTS) for k in KIND_SAID
                                           if k != "huge" or FILE_ARGUMENTS[a][2]])
def test_a_file_argument_that_is_no_regular_file_or_too_large_is_refused_before_it_is_read(
        ctx, people, tmp_path, argument, kind):
    import resource

    argv, what, too_large = FILE_ARGUMENTS[argument]
    path = special(tmp_path, kind)
    argv = [path if a == "X" else public_key_file(tmp_path) if a == "PUB" else a for a in argv]
    before, queues = counts(ctx), redis_snapshot(ctx.redis)
    memory = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with within(30, f"r2k {' '.join(argv)}"):
        code, _, err = cli(*argv)
    message = refused(code, err)
    expected = what.replace("X", path) + " " + KIND_SAID[kind] + (too_large if kind == "huge" else "")
    assert message.startswith(expected), message
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - memory < 64 * 1024  # KB: nothing read whole
    assert counts(ctx) == before and redis_snapshot(ctx.redis) == queues


def test_every_file_option_of_the_command_line_is_refused_here_when_no_regular_file():
    # A new option that names a file joins FILE_ARGUMENTS (and files.read_argument), or this fails.
    import argparse

    from r2k.app.cli import build_parser

    def leaves(parser, path=()):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for action in subs:
            for name, sub in action.choices.items():
                yield from leaves(sub, (*path, name))
        if not subs:
            yield path, parser

    named = {(*path, action.option_strings[0] if action.option_strings else action.dest)
             for path, parser in leaves(build_parser()) for action in parser._actions
             if action.dest.endswith(("_file", "_keys")) or action.dest in ("paths", "anchor")
             or action.metavar in ("FILE", "F", "PATH")}
    covered = {(*argv[argv.index("--as") + 2:][:2], argv[argv.index("X") - 1])
               for argv, _, _ in FILE_ARGUMENTS.values()}
    assert named == covered | {("ingest", "paths")} | OUTPUTS  # ingest's: test_ingest_passes_by_what_is_no_regular_file…


@pytest.mark.parametrize("kind", ["fifo", "device", "socket", "huge"])
def test_ingest_passes_by_what_is_no_regular_file_or_too_large(ctx, people, tmp_path, kind):
    path = special(tmp_path, kind)
    write(tmp_path / "docs" / "good.md", GOOD)
    with within(30, "ingest"):
        summary = ingest.ingest(ctx, people["root"], [path, tmp_path / "docs"])
    reason = {"fifo": "a FIFO, not a file or folder", "device": "a character device, not a file or folder",
              "socket": "a socket, not a file or folder",
              "huge": "a file to ingest is at most 32 MB (33,554,432 bytes); this one has 5,368,709,120 bytes"}[kind]
    assert summary["skipped"] == [{"path": path, "line": None, "reason": reason}]
    assert summary["documents"] == 1


def test_a_file_swapped_for_a_fifo_after_it_was_looked_at_is_refused_not_waited_on(tmp_path, monkeypatch):
    # Between the look at the path and the open, someone puts a FIFO there: the open does not wait
    # (O_NONBLOCK), and the look through the open file refuses it.
    from r2k.core.domain import files

    path = tmp_path / "doc.md"
    path.write_text("text")
    real_stat = os.stat

    def stat_then_swap(target, *args, **kwargs):
        result = real_stat(target, *args, **kwargs)
        if str(target) == str(path):
            path.unlink()
            os.mkfifo(path)
        return result

    monkeypatch.setattr(files.os, "stat", stat_then_swap)
    with within(10, "read_bytes"), pytest.raises(files.NotARegularFile, match="a FIFO"):
        files.read_bytes(path, 1024)


def test_the_files_a_setting_or_a_login_reads_are_refused_the_same_way(tmp_path):
    from r2k.app.keymap import KeymapError, load
    from r2k.core.events import Signer, parse_trusted_keys
    from r2k.core.services.people import users

    fifo = special(tmp_path, "fifo")
    with within(10, "the keymap"), pytest.raises(KeymapError, match=f"keymap {fifo} is a FIFO, not a regular file"):
        load(Path(fifo))
    with within(10, "the trusted keys"), pytest.raises(
            InvalidInput, match=re.escape(f"the trusted keys file (R2K_TRUSTED_KEYS) {fifo} is a FIFO")):
        parse_trusted_keys(Path(fifo))
    with within(10, "the signing key"), pytest.raises(InvalidInput, match=re.escape(
            f"the signing key file (R2K_SIGNING_KEY_FILE) {fifo} is a FIFO")):
        Signer(Path(fifo))
    with within(10, "the authorized keys"), pytest.raises(InvalidInput, match=f"the authorized keys file {fifo} is a FIFO"):
        users.authorized_keys(Path(fifo))
    garbage = write(tmp_path / "garbage.pem", b"\xff\x00 not a key")
    with pytest.raises(InvalidInput, match="is not an Ed25519 private key in PEM"):
        Signer(garbage)
    huge = write(tmp_path / "keymap.toml", b"#" * (limits.KEYMAP_FILE.bytes + 1))
    with pytest.raises(KeymapError, match=re.escape("has 65,537 bytes; a keymap file is at most 64 KB")):
        load(huge)
