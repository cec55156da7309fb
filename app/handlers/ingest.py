"""ingest: documents from files or folders, read by their parsers, in. The handlers of the tree in
app/commands/ingest.py."""
from __future__ import annotations

import sys

from r2k.core.errors import InvalidInput
from r2k.core.services.documents import ingest

from ..output import Text
from ..safe import visible


def ingest_lines(summary: dict, skips: bool = True) -> list[str]:
    """An ingest summary in words: what went in, by Horn type, what was dropped as stating nothing,
    and (unless `skips` is False: the command prints them on stderr) what was skipped and why."""
    lines = [f"{summary['documents']} document(s), {summary['candidates_total']} candidate(s): " +
             ", ".join(f"{h} {n}" for h, n in summary["candidates"].items()),
             f"{summary['fragments']} fragment(s) sent to the grey queue"]
    if summary.get("dropped"):
        lines.append(f"{summary['dropped_total']} piece(s) dropped as stating nothing: " +
                     ", ".join(f"{reason} {n}" for reason, n in summary["dropped"].items()))
    if summary["duplicates"]:
        lines.append(f"{len(summary['duplicates'])} already ingested (same content), skipped")
    if summary.get("versions"):
        lines.append(f"{len(summary['versions'])} new version(s) of documents read before: "
                     f"{summary['unchanged']} statement(s) unchanged, {summary['withdrawn']} pending candidate(s) "
                     f"withdrawn, {summary['flagged']} answer(s) flagged source_changed")
    if summary.get("merged"):
        lines.append(f"{summary['merged']} statement(s) another document states too: a source more for their candidate")
    if summary["skipped"] and not skips:
        lines.append(f"{len(summary['skipped'])} skipped (listed above)")
    for s in summary["skipped"] if skips else ():
        where = s["path"] + (f":{s['line']}" if s.get("line") else "")
        lines.append(f"skipped {where}: {s['reason']}")
    return lines


def ingest_cmd(cli, args):
    progress = cli.progress().start("ingesting", None)

    def on_file(path, index, total):
        progress.update(index, total, f"ingesting {visible(path.name)}" if path.name else "done")

    try:
        summary = ingest.ingest(cli.ctx, cli.actor, args.paths, on_file=on_file)
    finally:
        progress.stop()
    lines = ingest_lines(summary, skips=False)  # each skip is said once, on stderr
    for s in summary["skipped"]:
        # A file name, or a reason quoting the file, may hold controls.
        print(visible(f"r2k: skipped {s['path']}{':' + str(s['line']) if s.get('line') else ''}: {s['reason']}"),
              file=sys.stderr)
    if summary["skipped"] and not summary["documents"] and not summary["duplicates"]:
        raise InvalidInput(f"nothing was ingested: all {len(summary['skipped'])} file(s) were skipped")
    return Text(summary, "\n".join(lines))
