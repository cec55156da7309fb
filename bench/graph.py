"""Graph sync throughput, the sweep's catch-up cost, and contradiction detection per subject
(issue: knowledge that holds together, item 9).

With 10,000 approved answers in PostgreSQL (500 subjects asked about, 200 cited documents),
the bench times `graph_sync.sync_answers` mirroring all of them into an emptied graph (what
`r2k graph sync --all` and the sweep run), and in the same run the floor: bare `UNWIND … MERGE`
statements writing the same nodes and edges (answers, subjects and ABOUT, sources and CITES) from
rows already in memory, in the same small requests (at most 20 rows, 3,000 bytes: the Bolt
discipline of docs/architecture.md, "Graph"). Ours also reads PostgreSQL, extracts each answer's
subjects (core/subjects.py), guards each status by version and unlinks stale subjects. Target:
ours at least 50% of the floor's answers per second. The two take turns (`--rounds`), as the
speed of a shared machine's cores drifts.

It also prints what the sweep's catch-up costs when nothing lags (it compares only the answers
changed since the graph's mark) next to a whole comparison (`graph status`), and the median time
of contradiction detection for one answer, over `--subjects` subjects.

    python bench/graph.py [--answers 10000] [--rounds 2] [--subjects 50]
"""
from __future__ import annotations

import argparse
import time

from _common import bench_env, median, verdict

ADJECTIVES = ["backup", "badge", "visitor", "pallet", "forklift", "freezer", "laptop", "printer", "vehicle",
              "contractor", "invoice", "password", "ladder", "chemical", "battery", "loading", "archive",
              "fire", "parking", "canteen"]
NOUNS = ["retention", "renewal", "escort", "inspection", "storage", "charging", "disposal", "access", "training",
         "rotation", "audit", "approval", "labelling", "cleaning", "testing", "handover", "booking", "logging",
         "insurance", "calibration", "maintenance", "transport", "reporting", "cover", "signage"]
PLACES = ["Frankfurt", "Rotterdam warehouse", "cold room", "Quay WMS", "main office"]


def topic(g: int) -> str:
    return f"{ADJECTIVES[g % 20]} {NOUNS[(g // 20) % 25]}"


def setup(ctx, answers: int) -> list[int]:
    """`answers` approved answers published by 'bench' (written in bulk: setup speed, no events), one
    a minute over the last week or so, as a registry grows."""
    with ctx.db.begin() as tx:
        have = tx.scalar("SELECT count(*) FROM approved_answers WHERE published_by = 'bench'")
        if have < answers:
            rows = [(f"What is established about {topic(g)}?",
                     f"The {topic(g)} at the {PLACES[g % 5]} is done every {g % 30 + 1} days by {g % 7 + 2} people.",
                     g % 200 + 1) for g in range(have, answers)]
            with tx.conn.cursor() as cur:
                cur.executemany(
                    "WITH c AS (INSERT INTO candidates (question, text, horn_type, state, origin, source_refs, "
                    "created_by, created_at, updated_at, version, queue_rank) VALUES (%(q)s, %(t)s, 'FACT', "
                    "'APPROVED', 'manual', %(refs)s, 'bench', now(), now(), 1, 0) RETURNING id, question, text, "
                    "source_refs) INSERT INTO approved_answers (candidate_id, question, text, horn_type, status, "
                    "source_refs, published_by, created_at, updated_at, version) SELECT id, question, text, "
                    "'FACT', 'APPROVED', source_refs, 'bench', now() - make_interval(mins => %(age)s), "
                    "now() - make_interval(mins => %(age)s), 1 FROM c",
                    [{"q": q, "t": t, "refs": f'[{{"document_id": {d}, "title": "Handbook part {d}"}}]',
                      "age": answers - g} for g, (q, t, d) in enumerate(rows, start=have)])
        # Subjects stored beside each answer, as a publish writes them: what detection compares by.
        from r2k.core.subjects import subjects_of

        lacking = tx.all("SELECT id, question, text FROM approved_answers a WHERE published_by = 'bench' "
                         "AND NOT EXISTS (SELECT 1 FROM answer_subjects s WHERE s.answer_id = a.id)")
        pairs = [(a["id"], name, rank) for a in lacking
                 for rank, name in enumerate(subjects_of(a["question"], a["text"]))]
        if pairs:
            tx.execute("INSERT INTO answer_subjects (answer_id, subject, rank) SELECT * FROM unnest("
                       "%s::bigint[], %s::text[], %s::smallint[]) ON CONFLICT DO NOTHING",
                       ([p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs]))
        return [r["id"] for r in tx.all("SELECT id FROM approved_answers WHERE published_by = 'bench' "
                                        "ORDER BY id LIMIT %s", (answers,))]


def wipe(graph) -> None:
    while graph.run("MATCH (n) WITH n LIMIT 5000 DETACH DELETE n RETURN count(n) AS n")[0]["n"]:
        pass


def floor_rows(ctx, ids: list[int]) -> list[dict]:
    from r2k.core.services import graph_sync

    rows = []
    for start in range(0, len(ids), graph_sync.READ_CHUNK):
        for a in graph_sync._read(ctx, ids[start:start + graph_sync.READ_CHUNK]):
            rows.append({"id": a["id"], "status": a["status"], "title": graph_sync._title(a["question"]),
                         "names": a["subjects"] or graph_sync.subjects(a["question"], a["text"]),
                         "cites": [{"id": a["id"], "doc": r["document_id"], "title": r.get("title", "")}
                                   for r in a["source_refs"]]})
    return rows


def bare_merge(graph, rows: list[dict]) -> None:
    """The floor: the same nodes and edges, bare MERGEs, the same request sizes."""
    for start in range(0, len(rows), 500):
        part = rows[start:start + 500]
        graph.run_rows("UNWIND $rows AS r MERGE (a:Answer {id: r.id}) SET a.status = r.status, a.title = r.title",
                       [{"id": r["id"], "status": r["status"], "title": r["title"]} for r in part])
        graph.run_rows("UNWIND $rows AS r MATCH (a:Answer {id: r.id}) UNWIND r.names AS name "
                       "MERGE (s:Subject {name: name}) MERGE (a)-[:ABOUT]->(s)",
                       [{"id": r["id"], "names": r["names"]} for r in part])
        graph.run_rows("UNWIND $rows AS r MATCH (a:Answer {id: r.id}) MERGE (d:Source {id: r.doc}) "
                       "SET d.title = r.title MERGE (a)-[:CITES]->(d)", [c for r in part for c in r["cites"]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--subjects", type=int, default=50)
    args = parser.parse_args()
    bench_env("graph")

    from r2k.core.context import Context
    from r2k.core.services import conflicts, graph_sync

    ctx = Context()
    ids = setup(ctx, args.answers)
    graph = ctx.graph
    graph_sync.ensure_indexes(graph)
    rows = floor_rows(ctx, ids)
    print(f"{len(ids):,} answers, {len({t for r in rows for t in r['names']}):,} subjects, graph over "
          f"{graph.protocol} ({graph.url.split('@')[-1]})")
    ours_s = floor_s = 0.0
    for _ in range(args.rounds):
        wipe(graph)
        t = time.perf_counter()
        bare_merge(graph, rows)
        floor_s += time.perf_counter() - t
        wipe(graph)
        t = time.perf_counter()
        graph_sync.sync_answers(ctx, ids, detect=False)
        ours_s += time.perf_counter() - t
    n = len(ids) * args.rounds
    ours, floor = n / ours_s, n / floor_s
    print(f"sync          {ours:10,.0f} answers/s   (graph_sync.sync_answers: PostgreSQL read, subjects, "
          f"version guard)")
    print(f"floor         {floor:10,.0f} answers/s   (bare UNWIND MERGE of the same nodes and edges, same requests)")
    print(f"ratio         {ours / floor:10.0%}   target >= 50%: {verdict(ours / floor, 0.5, lower_is_better=False)}")

    graph_sync.catch_up(ctx)  # sets the mark
    quiet, whole = [], []
    for _ in range(5):
        t = time.perf_counter()
        result = graph_sync.catch_up(ctx)
        quiet.append(time.perf_counter() - t)
        t = time.perf_counter()
        graph_sync.status(ctx)
        whole.append(time.perf_counter() - t)
    assert result["lagging"] == 0, result
    print(f"catch-up      {median(quiet) * 1000:10.1f} ms per sweep with nothing lagging "
          f"(compared {result['compared']} changed since the mark)")
    print(f"whole compare {median(whole) * 1000:10.1f} ms (graph status: every answer, both sides)")

    seen, sample = set(), []
    for r in rows:
        if r["names"] and r["names"][0] not in seen:
            seen.add(r["names"][0])
            sample.append(r["id"])
        if len(sample) >= args.subjects:
            break
    times = []
    for answer_id in sample:
        t = time.perf_counter()
        conflicts.detect(ctx, answer_id)
        times.append(time.perf_counter() - t)
    print(f"detection     {median(times) * 1000:10.1f} ms median per subject (conflicts.detect, one answer against the "
          f"others on its subjects, {len(sample)} subjects)")
    ctx.close()


if __name__ == "__main__":
    main()
