"""registry: search, read and move published answers. The command tree; the handlers are
app/handlers/registry.py, imported when one runs."""
from __future__ import annotations

from r2k.core.domain import limits

from ..bulk import add_ids
from ..cli import bounded_int


def register(commands) -> None:
    reg = commands.group("registry", "the registry of approved answers (never deletes)")
    p = reg.command("search", "answers ranked by their words and their meaning (APPROVED only unless --status)",
                    "registry:search")
    p.add_argument("query", nargs="?", default="", help="words or a phrase; none lists the newest answers "
                                                        f"(at most {limits.QUERY:,} characters)")
    p.add_argument("--status", help="comma-separated statuses to include, or ALL")
    p.add_argument("--explain", action="store_true",
                   help="show each hit's rank by words and by meaning, its similarity and its score")
    p.add_argument("--limit", type=bounded_int("--limit", limits.SEARCH_LIMIT), default=20,
                   help=f"at most this many (default 20; {limits.said(limits.SEARCH_LIMIT)})")
    p.add_argument("--offset", type=bounded_int("--offset", limits.OFFSET), default=0,
                   help=f"skip this many results (the next page; {limits.said(limits.OFFSET)})")
    p = reg.command("show", "one answer by id, whatever its status", "registry:show")
    p.add_argument("id", help="the answer's id")
    p = reg.command("chain", "the whole supersede chain of an answer, oldest first", "registry:chain")
    p.add_argument("id", help="the id of any answer in the chain")
    p = reg.command("readout", "what the registry answers: disputed answers flagged, retired never", "registry:readout")
    p.add_argument("query", help=f"words or a phrase (at most {limits.QUERY:,} characters)")
    p.add_argument("--limit", type=bounded_int("--limit", limits.SEARCH_LIMIT), default=20,
                   help=f"at most this many (default 20; {limits.said(limits.SEARCH_LIMIT)})")
    p = reg.command("supersede", "publish a new version of an answer", "registry:supersede", mutates=True)
    p.add_argument("id", help="the id of an APPROVED or DISPUTED answer")
    p.add_argument("--text", required=True, help=f"the new version's text (at most {limits.ANSWER:,} characters)")
    p.add_argument("--reason", required=True, help=f"why the answer changes (at most {limits.REASON:,} characters)")
    for name, what in [("dispute", "dispute an answer: its candidate returns for re-review"),
                       ("retire", "retire an answer: out of all search and readout, kept for audit")]:
        p = reg.command(name, what, "registry:move", mutates=True)
        add_ids(p, "answer")
        p.add_argument("--reason", required=True, help="why, in words the next reader understands "
                                                       f"(at most {limits.REASON:,} characters)")
