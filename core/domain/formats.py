"""The document formats `r2k ingest` reads, by file suffix (docs/architecture.md, "Documents and
extraction"): data the command line's help and the readers share (core/knowledge/extract.py)."""
from __future__ import annotations

SUFFIXES = (".md", ".markdown", ".html", ".htm", ".xhtml", ".rst", ".rest", ".pdf", ".docx", ".txt", ".text",
            ".jsonl")
BINARY = frozenset({".html", ".htm", ".xhtml", ".pdf", ".docx"})  # read from bytes: their text is a rendering
LISTED = ", ".join(SUFFIXES)
JSONL_RECORD = ('{"question": "…", "answer": "…", "horn_type": "FACT"} (horn_type optional: FACT, RULE, '
                'CONSTRAINT, PROCEDURE or OPEN_ISSUE; "text" for "answer" too)')
