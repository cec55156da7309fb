"""graph: the registry's mirror in the graph, compared and rebuilt (core/services/contradictions/graph_sync.py).
The handlers of the tree in app/commands/graph.py."""
from __future__ import annotations

from r2k.core.errors import InvalidInput
from r2k.core.services.contradictions import graph_sync

from ..output import Text


def status_cmd(cli, args):
    cli.actor
    report = graph_sync.status(cli.ctx)
    return Text(report, status_text(report))


def _ids(ids: list, count: int) -> str:
    shown = ", ".join(str(i) for i in ids)
    return shown + (f" … and {count - len(ids)} more" if count > len(ids) else "")


def status_text(r: dict) -> str:
    pg, graph = r["postgres"], r["graph"]
    by_status = " · ".join(f"{k} {v}" for k, v in pg["by_status"].items()) or "none"
    lines = [f"postgres  {pg['answers']} answer(s): {by_status}",
             f"graph     {graph['answers']} answer node(s), {graph['subjects']} subject(s), "
             f"{graph['sources']} source(s)"]
    if r["in_step"]:
        lines.append("in step: the graph mirrors every answer")
        return "\n".join(lines)
    if r["missing"]["count"]:
        lines.append(f"missing   {r['missing']['count']} answer(s) not in the graph: "
                     f"{_ids(r['missing']['ids'], r['missing']['count'])}")
    for m in r["mismatched"]["answers"]:
        lines.append(f"status    answer {m['id']} is {m['postgres']} in PostgreSQL, {m['graph'] or 'without a status'} "
                     f"in the graph")
    if r["mismatched"]["count"] > len(r["mismatched"]["answers"]):
        lines.append(f"status    … and {r['mismatched']['count'] - len(r['mismatched']['answers'])} more mismatch(es)")
    for u in r["unlinked"]["answers"]:
        lines.append(f"link      answer {u['id']} supersedes {u['supersedes']}, not linked in the graph")
    if r["extra"]["count"]:
        lines.append(f"extra     {r['extra']['count']} node(s) PostgreSQL does not hold: "
                     f"{_ids(r['extra']['ids'], r['extra']['count'])}")
    lines.append("the sweep catches up what lags; `r2k graph sync --all` rebuilds the graph now")
    return "\n".join(lines)


def sync_cmd(cli, args):
    if not args.all:
        raise InvalidInput("say what to sync: `r2k graph sync --all` rebuilds the graph from PostgreSQL")
    actor = cli.actor
    progress = cli.progress().start("syncing the graph", None)
    try:
        result = graph_sync.rebuild(cli.ctx, actor, progress=lambda done, total: progress.update(done, total))
    finally:
        progress.stop()
    text = (f"{result['synced']} answer(s) mirrored into the graph, {result['removed']} node(s) removed; "
            + ("in step" if result["in_step"] else "still out of step: see `r2k graph status`"))
    return Text(result, text)
