"""`r2k export registry|decisions|tasks`: what was decided, as JSON Lines or CSV, with version
chains, sources, statuses and deciding reviewers; JSON Lines reads back through `r2k ingest`."""
from __future__ import annotations

import csv
import io
import json
import os
import stat
import subprocess
import sys

import pytest

from r2k.core.services import tasks
from r2k.core.services.answers import export, registry
from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates
from tests.conftest import error_of, r2k, r2k_json


def publish(ctx, people, question, text, horn="FACT", who="alice", revise=None):
    candidates.add(ctx, people["root"], question, text, horn)
    claimed = claims.claim_next(ctx, people[who], horn)
    if revise:
        return candidates.revise(ctx, people[who], claimed["id"], revise)["answer"]
    return candidates.approve(ctx, people[who], claimed["id"])["answer"]


def lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line]


@pytest.fixture
def decided(ctx, people):
    """Three published answers (one revised), one superseded twice, one retired, one rejection."""
    kept = publish(ctx, people, "How long are backups kept?", "Nightly backups are kept for 30 days.")
    moved = publish(ctx, people, "Where are backups stored?", "Backups are stored in Paris.",
                    revise="Backups are stored in the Frankfurt region.")
    gone = publish(ctx, people, "Who owns the forklift fleet?", "The site manager owns the forklift fleet.")
    second = registry.supersede(ctx, people["alice"], kept["id"], "Nightly backups are kept for 35 days.", "policy")
    third = registry.supersede(ctx, people["alice"], second["id"], "Nightly backups are kept for 40 days.", "again")
    registry.retire(ctx, people["alice"], gone["id"], "the fleet was sold")
    candidates.add(ctx, people["root"], "What colour is the dock?", "The dock is green.", "FACT")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    candidates.reject(ctx, people["alice"], claimed["id"], "not a business fact")
    return {"kept": kept, "second": second, "third": third, "moved": moved, "gone": gone}


def test_the_registry_export_holds_current_answers_with_their_chains_sources_and_reviewers(ctx, people, decided):
    rows = lines(r2k("--as", "bob", "export", "registry").stdout)
    by_id = {r["id"]: r for r in rows}
    assert set(by_id) == {decided["third"]["id"], decided["moved"]["id"]}  # superseded and retired left out
    newest = by_id[decided["third"]["id"]]
    chain = [decided["kept"]["id"], decided["second"]["id"], decided["third"]["id"]]
    assert (newest["chain"], newest["supersedes_id"], newest["superseded_by"]) == (chain, chain[1], None)
    assert (newest["status"], newest["answer"], newest["horn_type"]) == (
        "APPROVED", "Nightly backups are kept for 40 days.", "FACT")
    revised = by_id[decided["moved"]["id"]]
    assert revised["answer"] == "Backups are stored in the Frankfurt region." and revised["reviewers"] == ["alice"]

    everything = {r["id"]: r for r in lines(r2k("--as", "bob", "export", "registry", "--status", "ALL").stdout)}
    assert len(everything) == 5
    oldest = everything[decided["kept"]["id"]]
    assert (oldest["status"], oldest["superseded_by"], oldest["chain"]) == ("SUPERSEDED", chain[1], chain)
    assert everything[decided["gone"]["id"]]["status"] == "RETIRED"
    retired_only = lines(r2k("--as", "bob", "export", "registry", "--status", "RETIRED").stdout)
    assert [r["id"] for r in retired_only] == [decided["gone"]["id"]]


def test_the_jsonl_export_reads_back_through_ingest(ctx, people, decided, tmp_path):
    path = tmp_path / "registry.jsonl"
    summary = r2k_json("--as", "root", "export", "registry", "--output", str(path))
    assert summary == {"kind": "registry", "format": "jsonl", "rows": 2, "path": str(path),
                       "statuses": ["APPROVED", "DISPUTED"]}
    exported = lines(path.read_text(encoding="utf-8"))
    report = r2k_json("--as", "root", "ingest", str(path))
    assert report["candidates_total"] == 2 and report["skipped"] == []
    [doc] = report["document_ids"]
    with ctx.db.read() as tx:
        back = tx.all("SELECT question, text, horn_type FROM candidates WHERE document_id = %s ORDER BY id", (doc,))
    assert sorted((r["question"], r["text"], r["horn_type"]) for r in back) == sorted(
        (r["question"], r["answer"], r["horn_type"]) for r in exported)


def test_decisions_list_every_decision_with_what_it_decided(ctx, people, decided):
    refused = r2k("--as", "bob", "export", "decisions")
    assert refused.returncode == 7 and refused.stdout == "" and "only an admin may" in error_of(refused)["message"]
    rows = lines(r2k("--as", "root", "export", "decisions").stdout)
    assert [(r["action"], r["actor"]) for r in rows] == [
        ("approve", "alice"), ("revise", "alice"), ("approve", "alice"), ("reject", "alice")]
    revise = rows[1]
    assert (revise["question"], revise["answer"], revise["to_state"]) == (
        "Where are backups stored?", "Backups are stored in the Frankfurt region.", "REVISED")
    assert rows[3]["reason"] == "not a business fact"


def test_csv_has_a_header_a_row_each_and_defuses_formulas(ctx, people):
    publish(ctx, people, "What does the sheet compute?", "=HYPERLINK(\"http://evil\",\"x\")")
    out = r2k("--as", "bob", "export", "registry", "--format", "csv").stdout
    [header, *rows] = list(csv.reader(io.StringIO(out)))
    assert header == list(export.COLUMNS["registry"])
    [row] = rows
    record = dict(zip(header, row))
    assert record["answer"] == "'=HYPERLINK(\"http://evil\",\"x\")"  # a spreadsheet shows it, never runs it
    assert json.loads(record["chain"]) == [int(record["id"])] and record["superseded_by"] == ""


def test_tasks_export_marks_each_source_with_its_status_now(ctx, people):
    answer = publish(ctx, people, "How long are backups kept?", "Nightly backups are kept for 30 days.")
    task = tasks.create(ctx, people["alice"], "Backups", "# Backups\n\nNightly backups are kept for 30 days.\n")
    with ctx.db.begin() as tx:  # as analysis records them (core/services/tasks/)
        tx.execute("UPDATE durable_tasks SET sources = %s::jsonb WHERE id = %s",
                   (json.dumps([{"answer_id": answer["id"], "claims": ["Nightly backups are kept for 30 days."]}]),
                    task["id"]))
    registry.retire(ctx, people["alice"], answer["id"], "policy ended")
    [row] = lines(r2k("--as", "bob", "export", "tasks").stdout)
    assert (row["id"], row["title"], row["state"]) == (task["id"], "Backups", "DRAFT")
    assert row["sources"] == [{"answer_id": answer["id"], "claims": ["Nightly backups are kept for 30 days."],
                               "status_now": "RETIRED"}]


def test_stored_controls_never_reach_the_terminal_and_parse_back_as_stored(ctx, people, tmp_path):
    text = "Dock 4 \x1b]52;c;ZXZpbA==\x07is \u202eopen\u202c at night."
    publish(ctx, people, "When is dock 4 open?", text)
    out = r2k("--as", "bob", "export", "registry").stdout
    assert "\x1b" not in out and "\u202e" not in out and "\\u202e" in out
    assert lines(out)[0]["answer"] == text  # the same text, escaped only as JSON escapes
    # CSV on a terminal is shown with visible escapes (a file gets the text as stored).
    primary, secondary = os.openpty()
    try:
        subprocess.run([sys.executable, "-m", "r2k.app", "--as", "bob", "export", "registry", "--format", "csv"],
                       stdout=secondary, stderr=subprocess.PIPE, timeout=60, check=True)
        os.close(secondary)
        shown = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(primary)
    assert b"\x1b]52" not in shown and "\u202e".encode() not in shown and b"\\x1b]52" in shown
    path = tmp_path / "r.csv"
    r2k_json("--as", "bob", "export", "registry", "--format", "csv", "-o", str(path))
    [_, row] = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert row[2] == text


def test_bad_input_is_a_clear_400_and_leaves_the_file_as_it_was(ctx, people, decided, tmp_path):
    path = tmp_path / "registry.jsonl"
    path.write_text("the previous export\n")
    for args, words in [
        (["--status", "LOST"], "unknown answer status 'LOST'"),
        (["--format", "xml"], "invalid choice: 'xml'"),
    ]:
        result = r2k("--as", "bob", "export", "registry", *args, "-o", str(path))
        assert result.returncode == 6 and words in error_of(result)["message"]
    assert path.read_text() == "the previous export\n" and sorted(os.listdir(tmp_path)) == ["registry.jsonl"]
    for args, words in [
        (["export", "registry", "-o", str(tmp_path)], "is a folder"),
        (["export", "registry", "-o", str(tmp_path / "nowhere" / "x.jsonl")], "its folder does not exist"),
        (["export", "registry", "--json"], "--json prints a summary"),
        (["export", "registry", "--status", "ALL", "--format", "tsv"], "invalid choice: 'tsv'"),
    ]:
        result = r2k("--as", "bob", *args)
        assert result.returncode == 6 and words in error_of(result)["message"], result.stderr
    result = r2k("--as", "nobody", "export", "registry")
    assert result.returncode == 7 and result.stdout == ""
    with pytest.raises(Exception, match="unknown export"):
        export.export(ctx, people["root"], "answers", "jsonl", print)


def test_only_a_regular_file_is_replaced_and_a_link_keeps_pointing_at_it(ctx, people, decided, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = r2k("--as", "bob", "export", "registry", "-o", str(fifo))
    assert result.returncode == 6 and "is a FIFO, not a regular file" in error_of(result)["message"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO, nothing renamed over it
    real = tmp_path / "exports" / "registry.jsonl"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(real)
    r2k_json("--as", "bob", "export", "registry", "-o", str(link))
    assert link.is_symlink() and len(lines(real.read_text())) == 2
    assert sorted(os.listdir(real.parent)) == ["registry.jsonl"]  # no partial file left


def test_a_large_export_streams_in_batches_with_progress(ctx, people, monkeypatch):
    for n in range(5):
        publish(ctx, people, f"How many pallets fit in bay {n}?", f"Bay {n} holds {n + 10} pallets.")
    monkeypatch.setattr(export, "BATCH", 2)
    seen, written = [], []
    summary = export.export(ctx, people["bob"], "registry", "jsonl", written.append, progress=lambda d, t: seen.append((d, t)))
    assert summary.rows == 5 and len(written) == 5
    assert seen == [(2, 5), (4, 5), (5, 5)]


def test_the_http_export_streams_what_the_cli_writes_and_refuses_as_it_does(ctx, people, decided):
    from fastapi.testclient import TestClient

    from r2k.app.api import create_app
    from r2k.core.services.people import tokens

    def bearer(name: str) -> dict:
        return {"Authorization": f"Bearer {tokens.create(ctx, people[name])['token']}"}

    bob, root = bearer("bob"), bearer("root")
    with TestClient(create_app(ctx), raise_server_exceptions=False) as api:
        got = api.get("/v1/export/registry", headers=bob)
        assert got.status_code == 200 and got.headers["content-type"].startswith("application/x-ndjson")
        assert lines(got.text) == lines(r2k("--as", "bob", "export", "registry").stdout)
        every = api.get("/v1/export/registry", headers=bob, params={"status": "ALL"})
        assert len(lines(every.text)) == 5
        as_csv = api.get("/v1/export/decisions", headers=root, params={"format": "csv"})
        assert as_csv.headers["content-type"].startswith("text/csv")
        # (the CLI is read here as text, whose newline translation reads CSV's \r\n as \n)
        assert as_csv.text.replace("\r\n", "\n") == r2k("--as", "root", "export", "decisions", "--format", "csv").stdout
        for response, status in ((api.get("/v1/export/decisions", headers=bob), 403),
                                 (api.get("/v1/export/tasks", headers=bob, params={"status": "ALL"}), 400),
                                 (api.get("/v1/export/planets", headers=bob), 400),
                                 (api.get("/v1/export/registry", headers=bob, params={"format": "xml"}), 400),
                                 (api.get("/v1/export/registry"), 401)):
            assert response.status_code == status and response.json()["status"] == status, response.text
