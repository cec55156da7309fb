"""Graph sync throughput, the sweep's catch-up cost, and contradiction detection per subject
(issue: knowledge that holds together, item 9).

With 10,000 approved answers in PostgreSQL (500 subjects asked about, 200 cited documents),
the bench times `graph_sync.sync_answers` mirroring all of them into an emptied graph (what
`r2k graph sync --all` and the sweep run), and in the same run the floor: bare `UNWIND … MERGE`
statements writing the same nodes and edges (answers, subjects and ABOUT, sources and CITES) from
rows already in memory, in the same small requests (at most 20 rows, 3,000 bytes: the Bolt
discipline of docs/architecture.md, "Graph"). Ours also reads PostgreSQL, extracts each answer's
subjects (core/knowledge/subjects.py), guards each status by version and unlinks stale subjects. Target:
ours at least 50% of the floor's answers per second. The two take turns (`--rounds`), as the
speed of a shared machine's cores drifts.

It also prints what the sweep's catch-up costs when nothing lags (it compares only the answers
changed since the graph's mark) next to a whole comparison (`graph status`), and the median time
of contradiction detection for one answer, over `--subjects` subjects.

    python bench/graph.py [--answers 10000] [--rounds 2] [--subjects 50]

`--catch-up N` instead measures the sweep's catch-up at N answers (100,000 and 1,000,000 for issue
31), in a data dir of its own per N: the answers written in bulk by SQL (`INSERT … SELECT` over
`generate_series`, not the service layer, one a minute back from now) and their graph nodes by bare
`UNWIND … CREATE` (what a sync would leave: id, status, version, updated). It prints the whole
comparison with no mark (the once-only path), then every round of a catch-up with nothing changed
and with K = 1,000 answers published since the mark (K rows in bulk again, their nodes missing),
each beside its floor in the same round: the bare indexed reads of what changed since the mark on
both sides (PostgreSQL `updated_at >= …`, the graph's `a.updated >= …`), plus, with K changed, the
bare MERGEs of those K answers. The load average is printed with every round.

    python bench/graph.py --catch-up 100000 [--catch-up-rounds 5] [--changed 1000]
"""
from __future__ import annotations

import argparse
import os
import time

from _common import bench_env, median, vacuum, verdict

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
        from r2k.core.knowledge.subjects import subjects_of

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
    from r2k.core.services.contradictions import graph_sync

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


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def bulk_answers(ctx, n: int, label: str, age_minutes: bool = True) -> None:
    """`n` approved answers (and their candidates) in two SQL statements, published by `label`."""
    with ctx.db.begin() as tx:
        age = "make_interval(mins => g)" if age_minutes else "interval '0'"
        tx.execute(
            "WITH c AS (INSERT INTO candidates (question, text, horn_type, state, origin, created_by, created_at, "
            "updated_at, version, queue_rank) SELECT 'What is established about item ' || g || '?', "
            "'Item ' || g || ' is checked every ' || (g %% 30 + 1) || ' days.', 'FACT', 'APPROVED', 'manual', "
            f"%(label)s, now() - {age}, now() - {age}, 1, 0 FROM generate_series(1, %(n)s) g "
            "RETURNING id, question, text, created_at) "
            "INSERT INTO approved_answers (candidate_id, question, text, horn_type, status, published_by, created_at, "
            "updated_at, version) SELECT id, question, text, 'FACT', 'APPROVED', %(label)s, created_at, created_at, 1 "
            "FROM c", {"n": n, "label": label})


def bulk_nodes(ctx, graph, label: str) -> None:
    """Graph nodes for the answers `label` published, as a sync leaves them, by bare CREATE."""
    with ctx.db.read() as tx:
        rows = tx.all("SELECT id, status, version, extract(epoch FROM updated_at)::float8 AS updated "
                      "FROM approved_answers WHERE published_by = %s ORDER BY id", (label,))
    query = "UNWIND $rows AS r CREATE (:Answer {id: r.id, status: r.status, version: r.version, updated: r.updated})"
    bare = getattr(graph, "_graph", None)  # FalkorDB's own client: setup in large requests
    for start in range(0, len(rows), 10000):
        if bare is not None:
            bare.query(query, {"rows": rows[start:start + 10000]})
        else:
            graph.run_rows(query, rows[start:start + 10000])


def changed_floor(ctx, graph, since: float) -> tuple[int, int]:
    """The bare indexed reads of what changed since `since`, both sides."""
    with ctx.db.read() as tx:
        pg = tx.all("SELECT id, status, version, supersedes_id FROM approved_answers "
                    "WHERE updated_at >= to_timestamp(%s)", (since,))
    nodes = graph.run("MATCH (a:Answer) WHERE a.updated >= $since RETURN a.id AS id, a.status AS status, "
                      "a.version AS version", since=since)
    return len(pg), len(nodes)


def catch_up_bench(n: int, rounds: int, changed: int) -> None:
    os.environ.setdefault("R2K_DATA_DIR", f"/tmp/r2k-bench-graph-catch-up-{n}")
    bench_env("graph")
    from r2k.core.bootstrap import bootstrap
    from r2k.core.services.contradictions import graph_sync

    ctx = bootstrap()
    graph = ctx.graph
    graph_sync.ensure_indexes(graph)
    print(f"data dir {os.environ['R2K_DATA_DIR']}; {load()}")
    with ctx.db.read() as tx:
        have = tx.scalar("SELECT count(*) FROM approved_answers")
    t = time.perf_counter()
    if have < n:
        bulk_answers(ctx, n - have, "bench")
        vacuum("approved_answers")
    if graph.run("MATCH (a:Answer) RETURN count(a) AS n")[0]["n"] < n:
        wipe(graph)
        bulk_nodes(ctx, graph, "bench")
    with ctx.db.read() as tx:
        total = tx.scalar("SELECT count(*) FROM approved_answers")
    nodes = graph.run("MATCH (a:Answer) RETURN count(a) AS n")[0]["n"]
    print(f"{total:,} answers in PostgreSQL, {nodes:,} Answer nodes (bulk SQL and bare CREATE, "
          f"{time.perf_counter() - t:.1f} s)")

    graph.run("MATCH (m:SyncMark) DELETE m")
    t = time.perf_counter()
    whole = graph_sync.catch_up(ctx)
    print(f"no mark: the whole comparison, once: {(time.perf_counter() - t) * 1000:,.0f} ms ({whole})")
    print(f"{'answers':>9} {'changed':>7} {'round':>5} {'catch-up ms':>12} {'floor ms':>9} {'ratio':>6}")
    for k in (0, changed):
        ours, floors = [], []
        for r in range(1, rounds + 1):
            since = graph_sync.read_mark(graph) - graph_sync.SLACK
            if k:
                label = f"bench-new-{time.time_ns()}"
                bulk_answers(ctx, k, label, age_minutes=False)
                with ctx.db.read() as tx:
                    ids = [row["id"] for row in tx.all("SELECT id FROM approved_answers WHERE published_by = %s",
                                                       (label,))]
            t = time.perf_counter()
            result = graph_sync.catch_up(ctx, limit=max(k, 1))
            ours.append(time.perf_counter() - t)
            assert result["synced"] == k and not result["whole"], result
            t = time.perf_counter()
            changed_floor(ctx, graph, since)
            if k:
                bare_merge(graph, floor_rows(ctx, ids))
            floors.append(time.perf_counter() - t)
            print(f"{total:>9,} {k:>7} {r:>5} {ours[-1] * 1000:>12.1f} {floors[-1] * 1000:>9.1f} "
                  f"{ours[-1] / floors[-1]:>6.1f}   compared {result['compared']}   {load()}")
        print(f"{total:>9,} {k:>7} {'med':>5} {median(ours) * 1000:>12.1f} {median(floors) * 1000:>9.1f} "
              f"{median(ours) / median(floors):>6.1f}   (median of {rounds}; the sweep runs every 15 s)")
    ctx.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--subjects", type=int, default=50)
    parser.add_argument("--catch-up", type=int, default=0, help="measure the catch-up at this many answers")
    parser.add_argument("--changed", type=int, default=1000)
    parser.add_argument("--catch-up-rounds", type=int, default=5)
    args = parser.parse_args()
    if args.catch_up:
        return catch_up_bench(args.catch_up, args.catch_up_rounds, args.changed)
    bench_env("graph")

    from r2k.core.bootstrap import bootstrap
    from r2k.core.services.contradictions import conflicts, graph_sync

    ctx = bootstrap()
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
