"""export: the registry, the decisions and the article tasks as JSON Lines or CSV
(core/services/answers/export.py), on stdout or into a file. The command tree; the handlers are app/handlers/export.py, imported when one runs."""
from __future__ import annotations


def register(commands) -> None:
    group = commands.group("export", "what was decided, as JSON Lines or CSV: the registry, the decisions, "
                           "the article tasks")
    for kind, what in [("registry", "the registry's answers (APPROVED and DISPUTED unless --status), each with "
                                    "its version chain, sources, status and deciding reviewers"),
                       ("decisions", "every validator decision: who, what, when, from and to which state, why "
                                     "(an admin)"),
                       ("tasks", "every article task with its state, reviewers, approvals and each source's "
                                 "status now")]:
        p = group.command(kind, what, "export:run")
        p.set_defaults(kind=kind)
        p.add_argument("--format", default="jsonl", choices=["jsonl", "csv"],
                       help="jsonl (the default: one JSON object a line, which `r2k ingest` reads back for the "
                            "registry and the decisions) or csv (a header, then one row a record)")
        p.add_argument("--output", "-o", metavar="FILE",
                       help="write into FILE (replaced whole only once the export is complete) instead of stdout")
        if kind == "registry":
            p.add_argument("--status", help="comma-separated statuses to include (APPROVED, DISPUTED, "
                                            "SUPERSEDED, RETIRED), or ALL")
