"""Mirror the registry into the graph (docs/architecture.md, "Graph").

The graph is a projection of PostgreSQL: ids, status, version, Horn type, subject names and short
titles, never full texts. Every statement is a small auto-commit `UNWIND … MERGE` over at most
MAX_BATCH rows (core/adapters/graph.py), so a rerun is harmless and a Bolt server never sees a
large request. An answer node carries the version of the row it mirrors, and a sync writes status
only over an older version: two jobs for one answer finishing out of order never leave the older
status behind.

- `sync_answer` / `sync_answers`: what `sync_graph_task` runs after every registry move (the rows of
  core/reactions.py);
- `catch_up`: the sweep's pass, cheap when nothing lags: the graph holds a mark (the newest
  `updated_at` it is known to mirror), and only answers changed since the mark (less SLACK) are
  compared; a graph with no mark (new, wiped, or restarted empty) is compared whole;
- `status`: PostgreSQL and the graph side by side (counts, missing nodes, status mismatches);
- `rebuild`: `r2k graph sync --all`.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable

from ...domain import Actor
from ...errors import Forbidden
from ...knowledge.subjects import subjects_of, topic_of
from .. import jobs

if TYPE_CHECKING:
    from ...context import Context

TITLE_CHARS = 80          # a node's title: the question, cut short (the graph never holds full texts)
READ_CHUNK = 500          # answers read from PostgreSQL at a time
PAGE = 2000               # graph rows read per request when comparing
SLACK = 300.0             # seconds before the mark still compared: transactions that committed late
CATCH_UP_LIMIT = 1000     # answers one sweep syncs at most; the next sweep goes on
SHOWN = 50                # ids listed by `graph status` per kind of difference (all are counted)
MARK = "registry"


def subject_of(question: str) -> str:
    """The subject a question asks about: the topic of a templated question, else the question."""
    topic = topic_of(question)
    return re.sub(r"\s+", " ", (question.strip().rstrip("?") if topic is None else topic).lower())[:120]


def subjects(question: str, text: str) -> list[str]:
    """What an answer is about, for one PostgreSQL does not hold subjects of (`answer_subjects`,
    written at publish, is what the graph mirrors): its key terms (core/knowledge/subjects.py), else the
    subject of its question."""
    return subjects_of(question, text) or [subject_of(question)]


def sync_later(ctx: Context, event) -> None:
    """After commit: mirror the answer a registry move changed into the graph (RQ). One of these per
    row of core/reactions.py: publish, supersede (the old answer; the new one is published),
    dispute, retire, and through those the outcomes of a re-review."""
    jobs.enqueue(ctx, "graph", "sync_graph_task", event.aggregate_id)


# ----------------------------------------------------------------------------- statements

_ANSWERS = ("UNWIND $rows AS r MERGE (a:Answer {id: r.id}) WITH a, r WHERE coalesce(a.version, 0) <= r.version "
            "SET a.status = r.status, a.horn_type = r.horn, a.title = r.title, a.version = r.version, "
            "a.updated = r.updated")
# An answer's subjects in one statement: ABOUT edges to subjects it no longer has removed (the rules
# of core/knowledge/subjects.py may change), then one MERGE per subject it has.
_SUBJECTS = ("UNWIND $rows AS r MATCH (a:Answer {id: r.id}) "
             "OPTIONAL MATCH (a)-[e:ABOUT]->(gone:Subject) WHERE NOT gone.name IN r.names DELETE e "
             "WITH a, r, count(e) AS removed "
             "UNWIND r.names AS name MERGE (s:Subject {name: name}) MERGE (a)-[:ABOUT]->(s)")
_SOURCES = ("UNWIND $rows AS r MATCH (a:Answer {id: r.id}) MERGE (d:Source {id: r.doc}) SET d.title = r.title "
            "MERGE (a)-[:CITES]->(d)")
_SUPERSEDES = ("UNWIND $rows AS r MATCH (a:Answer {id: r.id}) MERGE (o:Answer {id: r.old}) "
               "MERGE (a)-[:SUPERSEDES]->(o)")
_INDEXES = (("Answer", "id"), ("Answer", "updated"), ("Subject", "name"), ("Source", "id"))
_indexed: set[int] = set()


def ensure_indexes(graph) -> None:
    """The lookups every MERGE makes, indexed (once per graph client; an existing index stays)."""
    if id(graph) in _indexed:
        return
    for label, prop in _INDEXES:
        graph.index(label, prop)
    _indexed.add(id(graph))


def _read(ctx: Context, ids: list[int]) -> list[dict]:
    with ctx.db.read() as tx:
        return tx.all("SELECT id, question, text, status, horn_type, supersedes_id, source_refs, version, "
                      "extract(epoch FROM updated_at)::float8 AS updated, (SELECT array_agg(s.subject ORDER BY "
                      "s.rank) FROM answer_subjects s WHERE s.answer_id = a.id) AS subjects FROM approved_answers a "
                      "WHERE id = ANY(%s) ORDER BY id", (ids,))


def _title(question: str) -> str:
    question = re.sub(r"\s+", " ", question).strip()
    return question if len(question) <= TITLE_CHARS else question[:TITLE_CHARS - 1] + "…"


def _write(graph, answers: list[dict]) -> dict[int, list[str]]:
    """Mirror these rows (as read from PostgreSQL); their subjects by id."""
    about = {a["id"]: a.get("subjects") or subjects(a["question"], a["text"]) for a in answers}
    graph.run_rows(_ANSWERS, [{"id": a["id"], "status": a["status"], "horn": a["horn_type"],
                               "title": _title(a["question"]), "version": a["version"], "updated": a["updated"]}
                              for a in answers])
    graph.run_rows(_SUBJECTS, [{"id": i, "names": names} for i, names in about.items()])
    cites = [{"id": a["id"], "doc": ref["document_id"], "title": _title(str(ref.get("title") or ""))}
             for a in answers for ref in a["source_refs"] or [] if ref.get("document_id") is not None]
    if cites:
        graph.run_rows(_SOURCES, cites)
    links = [{"id": a["id"], "old": a["supersedes_id"]} for a in answers if a["supersedes_id"]]
    if links:
        graph.run_rows(_SUPERSEDES, links)
    return about


def _sync(ctx: Context, ids: list[int], detect: bool, progress: Callable[[int], None] | None) -> dict[int, list[str]]:
    graph = ctx.graph
    ensure_indexes(graph)
    about: dict[int, list[str]] = {}
    ids = sorted(set(int(i) for i in ids))
    for start in range(0, len(ids), READ_CHUNK):
        answers = _read(ctx, ids[start:start + READ_CHUNK])
        if answers:
            about.update(_write(graph, answers))
        if detect:  # one round trip for the chunk's jobs (a sweep may catch a thousand up at once)
            jobs.enqueue_all(ctx, "graph", "detect_contradictions_task",
                             [((a["id"],), None) for a in answers if a["status"] == "APPROVED"])
        if progress:
            progress(len(answers))
    return about


def sync_answers(ctx: Context, ids: list[int], *, detect: bool = False,
                 progress: Callable[[int], None] | None = None) -> list[int]:
    """Mirror these answers (status, version, subjects, sources, supersede link); the ids synced.
    Contradiction detection follows a publish on its own (core/reactions.py, core/services/contradictions/conflicts.py)
    and reads PostgreSQL, not the graph; with `detect`, the approved ones are queued for it again."""
    return list(_sync(ctx, ids, detect, progress))


def sync_answer(ctx: Context, answer_id: int) -> dict:
    """`sync_graph_task`: mirror one answer as PostgreSQL holds it now."""
    about = _sync(ctx, [answer_id], False, None).get(int(answer_id))
    if about is None:
        return {"answer": answer_id, "synced": False}
    return {"answer": answer_id, "synced": True, "subject": about[0], "subjects": about}


# ----------------------------------------------------------------------------- comparing

def _graph_versions(graph, where: str = "", **params) -> dict[int, dict]:
    """Answer nodes (id → status, version, the id it supersedes), read a page at a time.

    The whole graph is read in windows of ids (`a.id > lo AND a.id <= lo + PAGE`, the id index's
    range), not `a.id > $after ORDER BY a.id LIMIT PAGE`: that sorts every node after `after` for
    each page, which made a whole comparison quadratic (14 minutes at 1,000,000 answers). What
    changed since the mark (`where`) is few nodes, found by their own index and paged by id."""
    found: dict[int, dict] = {}
    ret = ("OPTIONAL MATCH (a)-[:SUPERSEDES]->(o:Answer) "
           "RETURN a.id AS id, a.status AS status, a.version AS version, o.id AS old")
    if not where:
        span = graph.run("MATCH (a:Answer) RETURN min(a.id) AS lo, max(a.id) AS hi")
        if not span or span[0]["lo"] is None:
            return found
        for lo in range(span[0]["lo"] - 1, span[0]["hi"], PAGE):
            for row in graph.run(f"MATCH (a:Answer) WHERE a.id > $lo AND a.id <= $hi {ret}", lo=lo, hi=lo + PAGE):
                found[row["id"]] = row
        return found
    after = -1
    while True:
        rows = graph.run(f"MATCH (a:Answer) WHERE a.id > $after AND {where} {ret} ORDER BY a.id LIMIT {PAGE}",
                         after=after, **params)
        for row in rows:
            found[row["id"]] = row
        if len(rows) < PAGE:
            return found
        after = rows[-1]["id"]


def _pg_versions(ctx: Context, since: float | None = None) -> list[dict]:
    where = "" if since is None else "WHERE updated_at >= to_timestamp(%s)"
    with ctx.db.read() as tx:
        return tx.all("SELECT id, status, version, supersedes_id, extract(epoch FROM updated_at)::float8 AS updated "
                      f"FROM approved_answers {where} ORDER BY id", () if since is None else (since,))


def _lagging(pg: list[dict], graph: dict[int, dict]) -> list[int]:
    """Answers whose node is missing, older than the row, or lacks the row's supersede link."""
    lag = []
    for row in pg:
        node = graph.get(row["id"])
        if (node is None or (node["version"] or 0) < row["version"] or node["status"] != row["status"]
                or (row["supersedes_id"] and node["old"] != row["supersedes_id"])):
            lag.append(row["id"])
    return lag


def _without_node(graph, ids: list[int]) -> set[int]:
    """Those of `ids` with no Answer node at all."""
    if not ids:
        return set()
    # In small requests, as every statement here: a sweep may look for a thousand at once.
    have = {r["id"] for r in graph.run_rows("UNWIND $rows AS r MATCH (a:Answer {id: r.id}) RETURN a.id AS id",
                                            [{"id": i} for i in ids])}
    return set(ids) - have


def read_mark(graph) -> float | None:
    rows = graph.run("MATCH (m:SyncMark {id: $id}) RETURN m.at AS at", id=MARK)
    return rows[0]["at"] if rows else None


def _set_mark(graph, at: float) -> None:
    graph.run("MERGE (m:SyncMark {id: $id}) SET m.at = $at", id=MARK, at=at)


def catch_up(ctx: Context, *, limit: int = CATCH_UP_LIMIT) -> dict:
    """Sync what the graph lags on: answers changed since its mark, or all of them without one; at
    most `limit` per call, the oldest changes first. Both sides read by index (PostgreSQL's
    `approved_answers_updated`, the graph's Answer.updated), so a sweep costs what changed since the
    mark. The mark moves past every answer now in step: to the newest change when nothing lags,
    else to the oldest change still lagging, so a graph far behind (or with no mark) is compared
    whole once, not at every sweep until it has caught up."""
    graph = ctx.graph
    ensure_indexes(graph)  # the graph's side of "changed since the mark" is an index read
    mark = read_mark(graph)
    since = None if mark is None else mark - SLACK
    pg = _pg_versions(ctx, since)
    nodes = _graph_versions(graph) if since is None else _graph_versions(graph, "a.updated >= $since", since=since)
    updated = {r["id"]: r["updated"] for r in pg}
    lag = sorted(_lagging(pg, nodes), key=lambda i: (updated[i], i))
    todo = lag[:limit]
    # An answer the graph never had lost its publish's jobs together (one MULTI, core/reactions.py):
    # its contradiction check goes again with its sync. One the graph has only changed.
    unseen = _without_node(graph, todo)
    synced = (sync_answers(ctx, [i for i in todo if i not in unseen]) + sync_answers(ctx, sorted(unseen), detect=True)
              if todo else [])
    if pg:
        moved = max(updated.values()) if len(lag) <= limit else updated[lag[limit]]
        if mark is None or moved > mark:
            _set_mark(graph, moved)
    return {"compared": len(pg), "whole": mark is None, "lagging": len(lag), "synced": len(synced)}


def status(ctx: Context) -> dict:
    """PostgreSQL and the graph compared: counts by status, answers missing from the graph, nodes
    whose status (or supersede link) differs, nodes PostgreSQL does not hold."""
    graph = ctx.graph
    pg = _pg_versions(ctx)
    nodes = _graph_versions(graph)
    counts: dict[str, int] = {}
    for row in pg:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    missing = [r["id"] for r in pg if r["id"] not in nodes]
    mismatched = [{"id": r["id"], "postgres": r["status"], "graph": nodes[r["id"]]["status"]}
                  for r in pg if r["id"] in nodes and nodes[r["id"]]["status"] != r["status"]]
    unlinked = [{"id": r["id"], "supersedes": r["supersedes_id"], "graph": nodes[r["id"]]["old"]}
                for r in pg if r["id"] in nodes and r["supersedes_id"] and nodes[r["id"]]["old"] != r["supersedes_id"]]
    known = {r["id"] for r in pg}
    extra = sorted(i for i in nodes if i not in known)
    other = {label: graph.run(f"MATCH (n:{label}) RETURN count(n) AS n")[0]["n"] for label in ("Subject", "Source")}
    mark = read_mark(graph)
    return {
        "postgres": {"answers": len(pg), "by_status": dict(sorted(counts.items()))},
        "graph": {"answers": len(nodes), "subjects": other["Subject"], "sources": other["Source"],
                  "mark": mark},
        "missing": {"count": len(missing), "ids": missing[:SHOWN]},
        "mismatched": {"count": len(mismatched), "answers": mismatched[:SHOWN]},
        "unlinked": {"count": len(unlinked), "answers": unlinked[:SHOWN]},
        "extra": {"count": len(extra), "ids": extra[:SHOWN]},
        "in_step": not (missing or mismatched or unlinked or extra),
    }


def rebuild(ctx: Context, actor: Actor, progress: Callable[[int, int], None] | None = None) -> dict:
    """`r2k graph sync --all`: every answer mirrored from PostgreSQL, nodes it does not hold removed,
    the mark set. A specialist or an admin may: it rewrites what every reviewer's graph views read."""
    if actor.role not in ("admin", "specialist"):
        raise Forbidden(f"{actor.name} ({actor.role}) may not rebuild the graph: only a specialist or an "
                        f"admin may")
    graph = ctx.graph
    ensure_indexes(graph)
    pg = _pg_versions(ctx)
    total, done = len(pg), 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    # Nodes PostgreSQL does not hold go, and so do nodes ahead of their row (a database restored from
    # a backup, or made anew, under a graph kept from before): a sync never writes an older version
    # over a newer one, and here PostgreSQL's word is final.
    versions = {r["id"]: r["version"] for r in pg}
    in_graph = _graph_versions(graph)
    extra = [i for i in in_graph if i not in versions]
    ahead = [i for i, node in in_graph.items() if i in versions and (node.get("version") or 0) > versions[i]]
    graph.run_rows("UNWIND $rows AS r MATCH (a:Answer {id: r.id}) DETACH DELETE a",
                   [{"id": i} for i in extra + ahead])
    synced = sync_answers(ctx, [r["id"] for r in pg], progress=step)
    if pg:
        _set_mark(graph, max(r["updated"] for r in pg))
    return {"synced": len(synced), "removed": len(extra), "in_step": status(ctx)["in_step"]}
