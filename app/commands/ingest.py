"""ingest: documents from files or folders, read by their parsers, in. The command tree; the
handlers are app/handlers/ingest.py, imported when one runs."""
from __future__ import annotations

from r2k.core.domain import limits
from r2k.core.domain.formats import JSONL_RECORD, LISTED as SUFFIXES


def register(commands) -> None:
    ingest = commands.command("ingest", "ingest documents from files or folders: Markdown, HTML, reStructuredText, "
                              "PDF, Word (.docx), plain text and JSON Lines", "ingest:ingest_cmd", mutates=False)
    ingest.epilog = (
        "A JSON Lines file holds one record a line: " + JSONL_RECORD + "; a malformed line is skipped with its "
        "line number and the others go in. What states nothing (markup, navigation, a heading without a body) "
        "is dropped and counted; a part over a limit (a huge table) is skipped with its line; a file r2k cannot "
        "read (another type, an encrypted PDF, a PDF with no text layer, a FIFO) is skipped with the reason.")
    ingest.add_argument("paths", nargs="+", metavar="PATH",
                        help=f"a file ({SUFFIXES}) or a folder of them (searched recursively; any other file in it is "
                             f"listed as skipped); a text file is at most {limits.DOCUMENT_BYTES // 2**20} MB, an HTML, "
                             f"PDF or Word file {limits.PACKED_DOCUMENT_BYTES // 2**20} MB")
