"""`r2k ingest` of every format end to end on real services (docs/architecture.md, "Documents and
extraction"): each file read by its reader into candidates whose spans point into the stored text,
what states nothing dropped and counted, and each file that cannot be read skipped once with its
reason, storing nothing."""
from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from r2k.core.services.documents import ingest
from r2k.core.services.queue import candidate_views
from tests import documents
from tests.conftest import TABLES, r2k
from tests.test_documents import SPHINX


def cli(*argv: str) -> tuple[int, str, str]:
    from r2k.app.cli import run

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = run(list(argv))
    return code, out.getvalue(), err.getvalue()


def counts(ctx) -> dict:
    with ctx.db.read() as tx:
        return {t: tx.scalar(f"SELECT count(*) FROM {t}") for t in TABLES}


RST = """=====
Gates
=====

Opening
=======

Visitors must sign in at the gatehouse before they enter the yard.

Badge
   A card that opens every gate on the site.
"""


def word_file(d):
    d.add_heading("Gate manual", 0)
    d.add_heading("Rules", 1)
    d.add_paragraph("Visitors must not open the gate alone at night.")


def test_every_format_goes_in_with_spans_into_its_stored_text(ctx, people, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "manual.md").write_text(documents.MARKDOWN)
    (folder / "guide.html").write_bytes(SPHINX)
    (folder / "gates.rst").write_text(RST)
    (folder / "gates.pdf").write_bytes(documents.pdf([["3 Rules", "Forklifts must never carry people on their forks."]]))
    (folder / "gates.docx").write_bytes(documents.docx(word_file))
    (folder / "notes.txt").write_text("NOTES\n\nThe night lead writes the handover log at six.\n")
    (folder / "faq.jsonl").write_text('{"question": "Who signs refunds?", "answer": "The support lead signs refunds."}\n')
    summary = ingest.ingest(ctx, people["root"], [folder])
    assert summary["skipped"] == [] and summary["documents"] == 7
    assert summary["dropped"]["navigation"] >= 4 and summary["dropped_total"] == sum(summary["dropped"].values())
    with ctx.db.read() as tx:
        stored = {Path(r["path"]).suffix: r for r in tx.all("SELECT id, path, media_type, content FROM source_documents")}
        assert {s: r["media_type"] for s, r in stored.items()} == {
            ".md": "text/markdown", ".html": "text/html", ".rst": "text/x-rst", ".pdf": "application/pdf",
            ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            ".txt": "text/plain", ".jsonl": "application/jsonl"}
        assert "Skip to main content" not in stored[".html"]["content"]  # the stored text is the main content
        passages = tx.scalar("SELECT count(*) FROM source_passages")
    assert passages >= 7
    rows = candidate_views.list_candidates(ctx, limit=1_000)
    by_text = {r["text"]: r for r in rows}
    assert by_text["Forklifts must never carry people on their forks."]["horn_type"] == "CONSTRAINT"  # from the PDF
    assert by_text["Visitors must not open the gate alone at night."]["horn_type"] == "CONSTRAINT"  # from Word
    assert by_text["Visitors must sign in at the gatehouse before they enter the yard."]["horn_type"] == "RULE"
    for row in rows:  # the review screen highlights each candidate in the text stored for its document
        ref = candidate_views.get(ctx, row["id"])["source_refs"][0]
        content = next(r["content"] for r in stored.values() if r["id"] == ref["document_id"])
        shown = content[ref["span"][0]:ref["span"][1]]
        assert shown and (shown in row["text"] or all(cell in shown for cell in row["text"].split(": ", 1)))


def test_files_that_cannot_be_read_are_skipped_once_each_and_store_nothing(ctx, people, tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "scan.pdf").write_bytes(documents.blank_pdf())
    (folder / "locked.pdf").write_bytes(documents.encrypted(documents.pdf([["A statement about the gates."]])))
    (folder / "broken.docx").write_bytes(b"PK\x03\x04 broken")
    (folder / "binary.md").write_bytes(bytes(range(256)))
    (folder / "empty.txt").write_bytes(b"")
    (folder / "latin.txt").write_bytes("caf\u00e9 opens at seven".encode("latin-1"))
    (folder / "sheet.odt").write_bytes(b"x")
    os.mkfifo(folder / "pipe.md")  # never read: opening it would wait for a writer
    before = counts(ctx)
    code, out, err = cli("--as", "root", "ingest", str(folder))
    assert code == 6 and "nothing was ingested" in err
    reasons = {Path(line.split(": ", 2)[1].split(":")[0]).name: line for line in err.splitlines()
               if line.startswith("r2k: skipped ")}
    assert set(reasons) == {"scan.pdf", "locked.pdf", "broken.docx", "binary.md", "empty.txt", "latin.txt",
                            "sheet.odt", "pipe.md"}
    assert "no text layer" in reasons["scan.pdf"] and "encrypted" in reasons["locked.pdf"]
    assert "not a readable zip" in reasons["broken.docx"] and "not UTF-8" in reasons["binary.md"]
    assert "nothing to review" in reasons["empty.txt"] and "unsupported file type .odt" in reasons["sheet.odt"]
    assert reasons["pipe.md"].endswith("pipe.md: a FIFO, not a regular file: not read")
    assert all(err.count(name) == 1 for name in reasons)  # each skip said once
    assert counts(ctx) == before
    single = cli("--as", "root", "ingest", str(folder / "pipe.md"))  # a FIFO named alone, too
    assert single[0] == 6 and "pipe.md: a FIFO, not a file or folder" in single[2]


def test_text_mode_says_each_skip_once_and_json_lines_keep_their_good_lines(ctx, people, tmp_path):
    path = tmp_path / "faq.jsonl"
    path.write_text('{"question": "Who signs refunds?", "answer": "The support lead signs refunds."}\n'
                    '{"question": "Broken"\n')
    code, out, err = cli("--as", "root", "ingest", str(path))
    assert code == 0, err
    assert err.count("faq.jsonl:2") == 1 and "faq.jsonl:2" not in out
    assert "1 document(s), 1 candidate(s)" in out and "1 skipped (listed above)" in out
    code, out, err = cli("--json", "--as", "root", "ingest", str(tmp_path / "nowhere.md"), str(path))
    summary = json.loads(out)
    assert summary["duplicates"] and [s["path"] for s in summary["skipped"]] == [str(tmp_path / "nowhere.md")]


def test_ingest_help_documents_the_formats_and_the_json_lines_record():
    shown = r2k("ingest", "-h")
    assert shown.returncode == 0, shown.stderr
    words = " ".join(shown.stdout.split())
    for said in ('{"question": "…", "answer": "…", "horn_type": "FACT"}', ".html", ".rst", ".pdf", ".docx",
                 "malformed line is skipped with its line number"):
        assert said in words, said


def paragraphs(section: str, count: int) -> str:
    """`count` paragraphs of about 15,000 characters, each one claim (no sentence stop inside), distinct."""
    words = "dock gate yard belt crane truck pallet shift lead bay ramp scale seal lock badge".split()
    return "\n\n".join(f"In the {section} section record {n} says that " +
                       " ".join(f"{words[(n * 7 + i) % len(words)]}{n}x{i}" for i in range(1_400)) + "."
                       for n in range(count))


def test_a_document_over_the_limit_goes_in_by_section_and_a_huge_section_is_skipped_with_its_line(
        ctx, people, tmp_path):
    from r2k.core.domain import limits

    table = "| key | value |\n|---|---|\n" + "".join(f"| k{i} | the value of key number {i} |\n" for i in range(70_000))
    lines = ["# Yard manual", ""]
    for name in ("North", "South", "Huge table", "East"):
        lines += [f"## {name}", "", table if name == "Huge table" else paragraphs(name, 60), ""]
    text = "\n".join(lines)
    huge_at = text[:text.index("## Huge table")].count("\n") + 1  # the line of its heading
    path = tmp_path / "yard-manual.md"
    path.write_text(text)
    assert path.stat().st_size > 2 * limits.DOCUMENT_BYTES  # once refused whole
    before = counts(ctx)

    code, out, err = cli("--json", "--as", "root", "ingest", str(path))

    assert code == 0, err
    summary = json.loads(out)
    # The table's section breaks the limit alone: skipped with its line and why; the rest went in.
    assert [(s["line"], s["path"]) for s in summary["skipped"]] == [(huge_at, str(path))]
    assert "the section \u201cHuge table\u201d alone has" in summary["skipped"][0]["reason"]
    assert f"{path}:{huge_at}" in err
    with ctx.db.read() as tx:
        docs = tx.all("SELECT id, path, title, content FROM source_documents ORDER BY id")
        texts = [r["text"] for r in tx.all("SELECT text FROM candidates WHERE origin = 'extracted'")]
    assert summary["documents"] == len(docs) == 2 and counts(ctx)["source_documents"] == before["source_documents"] + 2
    # Parts of whole sections, each within the limit, named after the file.
    assert [d["path"] for d in docs] == [f"{path}#part-1", f"{path}#part-2"]
    assert [d["title"] for d in docs] == ["Yard manual (part 1 of 2)", "Yard manual (part 2 of 2)"]
    assert all(len(d["content"].encode()) <= limits.DOCUMENT_BYTES for d in docs)
    assert "## South" in docs[0]["content"] and docs[1]["content"].lstrip().startswith("## East")
    assert not any("the value of key number" in d["content"] for d in docs)
    # Every statement of the three sections is a candidate, each span inside its part's stored text.
    assert len(texts) == 180 and {t.split(" section")[0] for t in texts} == {"In the North", "In the South", "In the East"}
    for row in candidate_views.list_candidates(ctx, limit=1_000):
        ref = candidate_views.get(ctx, row["id"])["source_refs"][0]
        content = next(d["content"] for d in docs if d["id"] == ref["document_id"])
        assert content[ref["span"][0]:ref["span"][1]] == row["text"]
