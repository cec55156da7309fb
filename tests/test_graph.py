"""The registry mirrored into the graph: every registry change synced through the jobs the reactions
queue (no hand-syncing), idempotent and never older over newer; a rebuild from PostgreSQL, the
sweep's catch-up after the graph server is killed, `graph status`; contradictions on one subject;
requests kept small, and long texts never in the graph. Every test runs through both adapters: FalkorDB's own protocol
(the embedded graph) and Bolt (the neo4j driver), the latter against a Bolt-enabled FalkorDB
started only for these tests (FalkorDB's Bolt port listens on every interface without asking for
a password, which is why the embedded graph never opens one)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

import pytest

from r2k.core.adapters.graph import (
    MAX_BATCH,
    MAX_REQUEST_BYTES,
    MAX_STRING,
    BoltGraph,
    FalkorGraph,
    GraphRequestTooLarge,
    GraphUnavailable,
    chunks,
    connect,
)
from r2k.core.errors import Forbidden
from r2k.core.services.answers import registry
from r2k.core.services.contradictions import conflicts, graph_sync
from r2k.core.services.operations import sweeps
from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates

from .conftest import error_of, r2k, r2k_json


@pytest.fixture(scope="module")
def bolt_url(services, tmp_path_factory):
    """A throwaway FalkorDB with its Bolt port, for the Bolt adapter's compatibility run."""
    from r2k.core.embedded import common, redis as embedded_redis

    workdir = tmp_path_factory.mktemp("bolt-graph")
    # Bolt is TCP only (its own protocol stays on a socket); FalkorDB starts no Bolt server on a
    # port above 32767, where the kernel's own picks are.
    bolt = next(port for port in range(28687, 29687) if common.port_free(port))
    binaries = embedded_redis.bin_dir()
    subprocess.run([str(binaries / "redis-server"), "--port", "0", "--unixsocket", str(workdir / "server.sock"),
                    "--unixsocketperm", "700", "--daemonize", "yes",
                    "--dir", str(workdir), "--pidfile", str(workdir / "server.pid"), "--save", "",
                    "--logfile", str(workdir / "server.log"),
                    "--loadmodule", str(binaries / "falkordb.so"), "BOLT_PORT", str(bolt)], check=True)
    url = f"bolt://127.0.0.1:{bolt}"
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", bolt)) == 0:
                break
        time.sleep(0.05)
    yield url
    common.stop_pid(int((workdir / "server.pid").read_text()), "redis-server")


@pytest.fixture(params=["falkordb", "bolt"])
def graph(request, ctx):
    """The context's graph through one adapter, emptied."""
    if request.param == "bolt":
        ctx.__dict__["graph"] = BoltGraph(request.getfixturevalue("bolt_url"))
    elif not isinstance(ctx.graph, FalkorGraph):
        pytest.skip("R2K_GRAPH_URL names a Bolt server: this run is the Bolt one")
    ctx.graph.run("MATCH (n) DETACH DELETE n")
    return ctx.graph


def publish(ctx, people, question, text):
    candidates.add(ctx, people["root"], question, text, "FACT")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    return candidates.approve(ctx, people["alice"], claimed["id"])["answer"]


def run_graph_jobs(ctx) -> None:
    """What a worker on the graph queue does with the jobs the reactions queued (r2k's own worker
    class, in this process, burst), with this test's context and so its adapter."""
    from r2k.core.adapters.jobs import QUEUES
    from r2k.workers import tasks
    from r2k.workers.main import R2KWorker

    tasks._ctx, tasks._pid = ctx, os.getpid()
    try:
        R2KWorker([QUEUES["graph"]], connection=ctx.redis).work(burst=True, logging_level="WARNING")
    finally:
        tasks._ctx = tasks._pid = None


def nodes(graph) -> dict[int, dict]:
    rows = graph.run("MATCH (a:Answer) OPTIONAL MATCH (a)-[:SUPERSEDES]->(o:Answer) "
                     "RETURN a.id AS id, a.status AS status, o.id AS supersedes")
    return {r["id"]: {"status": r["status"], "supersedes": r["supersedes"]} for r in rows}


def test_a_sync_row_for_each_registry_move():
    from r2k.core import reactions

    rows = [reactions.INDEX[("answer", action)] for action in ("publish", "supersede", "dispute", "retire")]
    # a publish queues its sync with its contradiction check, in one step (registry.graph_jobs_later)
    assert registry.graph_jobs_later in rows[0].after and graph_sync.sync_later not in rows[0].after
    assert all(graph_sync.sync_later in row.after for row in rows[1:])
    assert len({id(row) for row in rows}) == 4  # one row each
    for action in ("approve", "revise", "reject"):  # a re-review's outcome moves an answer, synced by those rows
        assert graph_sync.sync_later not in reactions.INDEX[("candidate", action)].after


def graph_jobs(ctx) -> dict[str, tuple[str, list]]:
    """The graph queue's jobs now: id -> (task, args)."""
    from r2k.core.adapters import jobs

    q = jobs.queue(ctx.redis, "graph")
    return {job_id: (q.fetch_job(job_id).func_name, q.fetch_job(job_id).args) for job_id in q.get_job_ids()}


def test_a_publish_queues_its_graph_sync_and_its_contradiction_check_together(ctx, people):
    before = graph_jobs(ctx)
    answer = publish(ctx, people, "What is established about the dock doors?", "The dock doors close at 22:00.")
    made = {job: called for job, called in graph_jobs(ctx).items() if job not in before}
    assert sorted(made.values()) == [("r2k.workers.tasks.detect_contradictions_task", [answer["id"]]),
                                     ("r2k.workers.tasks.sync_graph_task", [answer["id"]])]
    run_graph_jobs(ctx)
    assert nodes(ctx.graph)[answer["id"]]["status"] == "APPROVED" and graph_jobs(ctx) == {}


def test_a_publish_whose_jobs_redis_refuses_stays_published_and_the_sweep_mirrors_it(ctx, people, redis_operator,
                                                                                  caplog):
    """Redis refusing writes at the moment after the commit: the approval is committed, neither job
    is half queued (the two go in one MULTI … EXEC), the failure is logged, and the sweep's graph
    catch-up mirrors the answer once Redis takes writes again."""
    import logging

    ctx.graph.run("MATCH (n) DETACH DELETE n")
    candidates.add(ctx, people["root"], "When do the dock doors close?", "The dock doors close at 22:00.", "FACT")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    before = graph_jobs(ctx)
    limit = redis_operator.config_get("maxmemory")["maxmemory"]
    caplog.set_level(logging.WARNING, logger="r2k.core.adapters.postgres")
    redis_operator.config_set("maxmemory", 1)  # Redis refuses every write for a moment
    try:
        answer = candidates.approve(ctx, people["alice"], claimed["id"])["answer"]
    finally:
        redis_operator.config_set("maxmemory", limit)
    assert registry.show(ctx, answer["id"])["status"] == "APPROVED"
    assert graph_jobs(ctx) == before  # neither job: none half queued
    assert any("graph_jobs_later" in r.getMessage() for r in caplog.records)
    assert answer["id"] not in nodes(ctx.graph)
    assert sweeps.sweep_graph(ctx)["synced"] >= 1
    assert nodes(ctx.graph)[answer["id"]]["status"] == "APPROVED"


def test_a_publish_whose_jobs_were_lost_still_gets_its_contradiction_check_from_the_sweep(ctx, people, redis_operator):
    """Both of a publish's jobs lost (Redis refusing writes after the commit): the sweep's graph
    catch-up, finding the answer missing from the graph, queues its contradiction check again, so a
    contradiction it makes is still flagged. Detection read nothing lost before."""
    from r2k.core.services.contradictions import conflicts

    ctx.graph.run("MATCH (n) DETACH DELETE n")
    first = publish(ctx, people, "How many loading docks does Rotterdam have?",
                    "The Rotterdam warehouse has 14 loading docks.")
    run_graph_jobs(ctx)
    candidates.add(ctx, people["root"], "How many docks does the Rotterdam warehouse have?",
                   "The Rotterdam warehouse has 12 loading docks.", "FACT")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    limit = redis_operator.config_get("maxmemory")["maxmemory"]
    redis_operator.config_set("maxmemory", 1)
    try:
        second = candidates.approve(ctx, people["alice"], claimed["id"])["answer"]
    finally:
        redis_operator.config_set("maxmemory", limit)
    assert conflicts.list_flags(ctx) == []
    assert sweeps.sweep_graph(ctx)["synced"] >= 1
    queued = {task: args for task, args in graph_jobs(ctx).values()}
    assert queued.get("r2k.workers.tasks.detect_contradictions_task") == [second["id"]], queued
    run_graph_jobs(ctx)
    flagged = [f for f in conflicts.list_flags(ctx) if {f["answer_id"], f["other_answer_id"]} == {first["id"], second["id"]}]
    assert len(flagged) == 1, conflicts.list_flags(ctx)
    assert sweeps.sweep_graph(ctx)["synced"] == 0  # once mirrored, nothing is queued again
    assert "r2k.workers.tasks.detect_contradictions_task" not in {t for t, _ in graph_jobs(ctx).values()}


def test_the_contradiction_checks_of_answers_missing_from_the_graph_are_queued_in_one_round_trip(ctx, people):
    """A sweep may find many answers the graph never had (their publish's jobs lost together): their
    checks are queued together, one Redis transaction for the lot, not one for each."""
    published = [publish(ctx, people, f"How many bays does dock {n} have?", f"Dock {n} has {n + 2} bays.")["id"]
                 for n in range(12)]
    run_graph_jobs(ctx)
    ctx.graph.run("MATCH (n) DETACH DELETE n")
    execs = ctx.redis.info("commandstats").get("cmdstat_exec", {}).get("calls", 0)
    assert sweeps.sweep_graph(ctx)["synced"] >= 12
    queued = [args[0] for task, args in graph_jobs(ctx).values() if task.endswith("detect_contradictions_task")]
    assert sorted(queued) == sorted(published)
    assert ctx.redis.info("commandstats")["cmdstat_exec"]["calls"] - execs <= 2


def test_chunks_keep_every_request_small():
    rows = [{"id": i, "title": "t" * (i % 200)} for i in range(500)]
    runs = list(chunks("UNWIND $rows AS r MERGE (a:Answer {id: r.id})", rows))
    assert [r["id"] for run in runs for r in run] == list(range(500))
    assert all(len(run) <= MAX_BATCH and len(repr(run)) < MAX_REQUEST_BYTES for run in runs)


def test_every_registry_change_reaches_the_graph_with_no_hand_syncing(ctx, people, graph):
    first = publish(ctx, people, "What is established about visitor escort?", "Visitors need an escort at all times.")
    run_graph_jobs(ctx)
    assert nodes(graph) == {first["id"]: {"status": "APPROVED", "supersedes": None}}
    second = registry.supersede(ctx, people["alice"], first["id"], "Visitors need an escort in the server room.",
                                "scope")
    run_graph_jobs(ctx)
    assert nodes(graph) == {first["id"]: {"status": "SUPERSEDED", "supersedes": None},  # the old node too
                            second["id"]: {"status": "APPROVED", "supersedes": first["id"]}}
    registry.dispute(ctx, people["bob"], second["id"], "which server room?")
    run_graph_jobs(ctx)
    assert nodes(graph)[second["id"]]["status"] == "DISPUTED"
    registry.retire(ctx, people["alice"], second["id"], "the server room closed")
    run_graph_jobs(ctx)
    assert nodes(graph)[second["id"]]["status"] == "RETIRED"
    assert graph_sync.status(ctx)["in_step"]


@pytest.mark.parametrize("outcome", ["approve", "revise", "reject"])
def test_the_outcome_of_a_re_review_reaches_the_graph(ctx, people, graph, outcome):
    answer = publish(ctx, people, "What is established about badge renewal?", "Badges are renewed every 12 months.")
    registry.dispute(ctx, people["bob"], answer["id"], "HR says 24 months")
    run_graph_jobs(ctx)
    assert nodes(graph)[answer["id"]]["status"] == "DISPUTED"
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    if outcome == "approve":
        result = candidates.approve(ctx, people["alice"], claimed["id"])
    elif outcome == "revise":
        result = candidates.revise(ctx, people["alice"], claimed["id"], "Badges are renewed every 24 months.")
    else:
        result = candidates.reject(ctx, people["alice"], claimed["id"], "no longer true")
    run_graph_jobs(ctx)
    if outcome == "reject":
        assert nodes(graph) == {answer["id"]: {"status": "RETIRED", "supersedes": None}}
    else:
        new = result["answer"]["id"]
        assert nodes(graph) == {answer["id"]: {"status": "SUPERSEDED", "supersedes": None},
                                new: {"status": "APPROVED", "supersedes": answer["id"]}}
    assert graph_sync.status(ctx)["in_step"]


def test_a_late_sync_never_writes_an_older_status_over_a_newer_one(ctx, people, graph):
    answer = publish(ctx, people, "What is established about badge renewal?", "Badges are renewed every 12 months.")
    stale = graph_sync._read(ctx, [answer["id"]])  # what a slow job read before the dispute
    registry.dispute(ctx, people["bob"], answer["id"], "HR says 24 months")
    run_graph_jobs(ctx)
    graph_sync._write(graph, stale)  # the slow job writes last
    assert nodes(graph)[answer["id"]]["status"] == "DISPUTED"


def test_sync_all_rebuilds_a_wiped_graph_from_postgresql(ctx, people, graph):
    first = publish(ctx, people, "What is established about visitor escort?", "Visitors need an escort.")
    second = registry.supersede(ctx, people["alice"], first["id"], "Visitors need an escort indoors.", "scope")
    third = publish(ctx, people, "What is established about badge renewal?", "Badges are renewed every 12 months.")
    registry.dispute(ctx, people["bob"], third["id"], "HR says 24 months")
    graph.run("MATCH (n) DETACH DELETE n")
    graph.run("MERGE (a:Answer {id: 999}) SET a.status = 'APPROVED'")  # not PostgreSQL's: removed
    with pytest.raises(Forbidden):
        graph_sync.rebuild(ctx, people["alice"])  # a validator may not
    assert set(nodes(graph)) == {999}
    result = graph_sync.rebuild(ctx, people["sam"])
    assert result == {"synced": 3, "removed": 1, "in_step": True}
    assert nodes(graph) == {first["id"]: {"status": "SUPERSEDED", "supersedes": None},
                            second["id"]: {"status": "APPROVED", "supersedes": first["id"]},
                            third["id"]: {"status": "DISPUTED", "supersedes": None}}


def test_sync_all_rebuilds_a_graph_ahead_of_postgresql(ctx, people, graph):
    """PostgreSQL restored from a backup, or made anew, under a graph kept from before: nodes with the
    same ids at later versions. The sync never writes an older version over a newer one; the rebuild
    takes PostgreSQL's word for it all the same."""
    answer = publish(ctx, people, "What is established about visitor escort?", "Visitors need an escort.")
    graph.run("MERGE (a:Answer {id: $id}) SET a.status = 'RETIRED', a.version = 7, a.title = 'From before'",
              id=answer["id"])
    assert graph_sync.status(ctx)["in_step"] is False
    result = graph_sync.rebuild(ctx, people["sam"])
    assert result["in_step"] is True
    assert nodes(graph) == {answer["id"]: {"status": "APPROVED", "supersedes": None}}


def test_graph_sync_all_on_the_command_line(ctx, people):
    publish(ctx, people, "What is established about visitor escort?", "Visitors need an escort.")
    ctx.graph.run("MATCH (n) DETACH DELETE n")
    refused = r2k("--as", "alice", "graph", "sync", "--all")
    assert refused.returncode == 7 and "only a specialist or an admin" in error_of(refused)["message"]
    assert ctx.graph.run("MATCH (a:Answer) RETURN count(a) AS n") == [{"n": 0}]  # nothing changed
    vague = r2k("--as", "sam", "graph", "sync")
    assert vague.returncode == 6 and "--all" in error_of(vague)["message"]
    assert r2k_json("--as", "sam", "graph", "sync", "--all") == {"synced": 1, "removed": 0, "in_step": True}
    said = r2k("--as", "root", "graph", "sync", "--all")
    assert said.returncode == 0 and said.stdout.strip() == "1 answer(s) mirrored into the graph, 0 node(s) removed; in step"


def test_graph_status_names_a_missing_node_and_a_status_mismatch(ctx, people, graph):
    kept = publish(ctx, people, "What is established about visitor escort?", "Visitors need an escort.")
    lost = publish(ctx, people, "What is established about badge renewal?", "Badges are renewed every 12 months.")
    run_graph_jobs(ctx)
    registry.dispute(ctx, people["bob"], kept["id"], "which building?")  # its job never runs
    graph.run("MATCH (a:Answer {id: $id}) DETACH DELETE a", id=lost["id"])
    report = graph_sync.status(ctx)
    assert report["in_step"] is False
    assert report["missing"] == {"count": 1, "ids": [lost["id"]]}
    assert report["mismatched"] == {"count": 1, "answers": [{"id": kept["id"], "postgres": "DISPUTED",
                                                             "graph": "APPROVED"}]}
    assert report["postgres"]["answers"] == 2 and report["graph"]["answers"] == 1


def test_graph_status_on_the_command_line(ctx, people):
    kept = publish(ctx, people, "What is established about visitor escort?", "Visitors need an escort.")
    lost = publish(ctx, people, "What is established about badge renewal?", "Badges are renewed every 12 months.")
    run_graph_jobs(ctx)
    assert r2k_json("--as", "bob", "graph", "status")["in_step"] is True
    said = r2k("--as", "bob", "graph", "status")
    assert said.returncode == 0 and "in step: the graph mirrors every answer" in said.stdout
    registry.dispute(ctx, people["bob"], kept["id"], "which building?")
    ctx.graph.run("MATCH (a:Answer {id: $id}) DETACH DELETE a", id=lost["id"])
    lines = r2k("--as", "bob", "graph", "status").stdout.splitlines()
    assert f"missing   1 answer(s) not in the graph: {lost['id']}" in lines
    assert f"status    answer {kept['id']} is DISPUTED in PostgreSQL, APPROVED in the graph" in lines
    stranger = r2k("--as", "mallory", "graph", "status")
    assert stranger.returncode == 7


def test_the_sweep_catches_up_and_moves_its_mark_only_when_nothing_lags(ctx, people, graph):
    answers = [publish(ctx, people, f"What is established about topic {i}?", f"Topic {i} is settled.")
               for i in range(3)]
    first = graph_sync.catch_up(ctx)  # no mark yet: the whole registry compared
    assert first == {"compared": 3, "whole": True, "lagging": 3, "synced": 3}
    assert graph_sync.catch_up(ctx) == {"compared": 3, "whole": False, "lagging": 0, "synced": 0}
    registry.dispute(ctx, people["bob"], answers[0]["id"], "unsure")  # its job never runs
    assert graph_sync.catch_up(ctx, limit=0)["lagging"] == 1
    assert graph_sync.catch_up(ctx)["synced"] == 1
    assert nodes(graph)[answers[0]["id"]]["status"] == "DISPUTED"
    assert graph_sync.status(ctx)["in_step"]


def test_a_graph_far_behind_is_compared_whole_once_and_its_mark_moves_with_each_sweep(ctx, people, graph):
    answers = [publish(ctx, people, f"What is established about topic {i}?", f"Topic {i} is settled.")
               for i in range(3)]
    graph.run("MATCH (n) DETACH DELETE n")  # a graph made anew: every answer lags, no mark
    first = graph_sync.catch_up(ctx, limit=1)
    assert first == {"compared": 3, "whole": True, "lagging": 3, "synced": 1}
    # The oldest change is in step: the mark moves up to the next one, so the next sweeps compare
    # what changed since, not the whole registry again.
    assert graph_sync.catch_up(ctx, limit=1)["whole"] is False
    assert graph_sync.catch_up(ctx, limit=1)["lagging"] == 1
    assert graph_sync.catch_up(ctx) == {"compared": 3, "whole": False, "lagging": 0, "synced": 0}
    assert sorted(nodes(graph)) == sorted(a["id"] for a in answers)
    assert graph_sync.status(ctx)["in_step"]


def test_a_sweep_syncs_hundreds_of_answers_the_graph_never_had_in_small_requests(ctx, people, graph):
    """More lagging answers than one small request can name (a graph restored empty under a large
    registry): the catch-up looks for their nodes in chunks, as it writes them."""
    with ctx.db.begin() as tx:  # in bulk: the registry's rows, no publish jobs
        tx.execute("WITH c AS (INSERT INTO candidates (question, text, horn_type, state, origin, created_by, "
                   "created_at, updated_at, version, queue_rank) SELECT 'What is established about item ' || g || "
                   "'?', 'Item ' || g || ' is settled.', 'FACT', 'APPROVED', 'manual', 'root', now(), now(), 1, 0 "
                   "FROM generate_series(1, 800) g RETURNING id, question, text) INSERT INTO approved_answers "
                   "(candidate_id, question, text, horn_type, status, published_by, created_at, updated_at, version) "
                   "SELECT id, question, text, 'FACT', 'APPROVED', 'root', now(), now(), 1 FROM c")
    result = graph_sync.catch_up(ctx)
    assert (result["lagging"], result["synced"]) == (800, 800)
    assert len(nodes(graph)) == 800


def test_a_whole_comparison_reads_every_node_in_windows_of_ids_whatever_the_gaps(graph):
    page = graph_sync.PAGE
    ids = [1, 2, page - 1, page, page + 1, 2 * page + 7, 5 * page + 3]  # edges, and windows with none
    graph.run("UNWIND $ids AS i CREATE (:Answer {id: i, status: 'APPROVED', version: 1, updated: 0.0})", ids=ids)
    assert sorted(graph_sync._graph_versions(graph)) == ids
    graph.run("MATCH (a:Answer) DETACH DELETE a")
    assert graph_sync._graph_versions(graph) == {}


def test_the_catch_up_reads_what_changed_by_index_on_both_sides(ctx, people, graph, superuser):
    """Cost, not time: with the mark set, PostgreSQL answers `updated_at >= …` from an index (the
    planner told not to scan), and the graph has its Answer.updated index even when the catch-up is
    the first thing to meet it."""
    with ctx.db.begin() as tx:  # a registry of answers that changed a day ago, as the planner knows it
        tx.execute("WITH c AS (INSERT INTO candidates (question, text, horn_type, state, origin, created_by, "
                   "created_at, updated_at, version, queue_rank) SELECT 'What is established about item ' || g || "
                   "'?', 'Item ' || g || ' is settled.', 'FACT', 'APPROVED', 'manual', 'root', now(), now(), 1, 0 "
                   "FROM generate_series(1, 500) g RETURNING id, question, text) INSERT INTO approved_answers "
                   "(candidate_id, question, text, horn_type, status, published_by, created_at, updated_at, version) "
                   "SELECT id, question, text, 'FACT', 'APPROVED', 'root', now() - interval '1 day', "
                   "now() - interval '1 day', 1 FROM c")
    superuser("ANALYZE approved_answers")  # without statistics the planner may walk the id index instead
    publish(ctx, people, "What is established about badge renewal?", "Badges are renewed every 12 months.")
    with ctx.db.begin() as tx:  # what a sweep asks, a minute after its mark
        tx.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(r["QUERY PLAN"] for r in tx.all(
            "EXPLAIN SELECT id, status, version, supersedes_id FROM approved_answers "
            "WHERE updated_at >= to_timestamp(%s) ORDER BY id", (time.time() - 60 - graph_sync.SLACK,)))
    assert "approved_answers_updated" in plan, plan
    if isinstance(graph, FalkorGraph):
        graph_sync.catch_up(ctx)  # in step, and the mark set
        graph.run("DROP INDEX ON :Answer(updated)")  # a graph server restarted from an older dump
        graph_sync._indexed.discard(id(graph))
        assert graph_sync.catch_up(ctx)["lagging"] == 0  # nothing to sync: only the catch-up itself
        indexed = [r for r in graph.run("CALL db.indexes() YIELD label, properties RETURN label, properties")
                   if r["label"] == "Answer"]
        assert any("updated" in r["properties"] for r in indexed), indexed


def test_sync_is_idempotent_and_a_long_answer_text_never_reaches_the_graph(ctx, people, graph):
    long_text = "Nightly database backups are kept for 30 days in Frankfurt. " * 200  # ~12,000 characters
    question = "What is established about backup retention " + "in the main data centre " * 10 + "?"
    answer = publish(ctx, people, question, long_text)
    run_graph_jobs(ctx)
    for _ in range(2):
        assert "frankfurt" in graph_sync.sync_answer(ctx, answer["id"])["subjects"]
    rows = graph.run("MATCH (a:Answer {id: $id})-[:ABOUT]->(s:Subject) RETURN a.status AS status, "
                     "a.title AS title, s.name AS subject, keys(a) AS keys", id=answer["id"])
    assert {r["status"] for r in rows} == {"APPROVED"} and len(rows) == len({r["subject"] for r in rows}) > 1
    assert rows[0]["title"].startswith("What is established about backup retention") \
        and len(rows[0]["title"]) == graph_sync.TITLE_CHARS
    assert "text" not in rows[0]["keys"]  # the graph never holds full texts
    assert graph.run("MATCH (a:Answer) RETURN count(a) AS n")[0]["n"] == 1
    strings = [v for row in graph.run("MATCH (n) RETURN properties(n) AS p") for v in row["p"].values()
               if isinstance(v, str)]
    assert strings and max(len(v) for v in strings) <= MAX_STRING
    assert not any("kept for 30 days" in v for v in strings)


def test_a_long_string_cannot_reach_the_graph(ctx, graph):
    graph.run("MERGE (a:Answer {id: -1}) SET a.title = $title", title="x" * 8000)
    stored = graph.run("MATCH (a:Answer {id: -1}) RETURN a.title AS title")[0]["title"]
    assert len(stored) == MAX_STRING
    with pytest.raises(GraphRequestTooLarge):
        graph.run("UNWIND $rows AS r MERGE (:Answer {id: r.id, t: r.t})",
                  rows=[{"id": i, "t": "y" * 150} for i in range(100)])
    assert graph.run("RETURN 1 AS ok") == [{"ok": 1}]  # the server is still up


def test_answers_on_one_subject_that_disagree_are_flagged_once(ctx, people, graph):
    a = publish(ctx, people, "What is established about backup retention?",
                "Nightly database backups are kept for 30 days in Frankfurt.")
    b = publish(ctx, people, "What is established about backup retention?",
                "Nightly database backups are kept for 14 days.")
    c = publish(ctx, people, "What is established about printer toner?",
                "Toner cartridges are replaced every 7 days.")  # another subject: no conflict
    run_graph_jobs(ctx)  # the sync jobs, and the detection each sync of an approved answer queues
    assert conflicts.detect(ctx, b["id"])["flags"] == []  # flagged once, however often run
    assert conflicts.detect(ctx, a["id"])["flags"] == []
    with ctx.db.read() as tx:
        flags = tx.all("SELECT answer_id, other_answer_id, subject, detail, status FROM conflict_flags")
    assert len(flags) == 1 and flags[0]["subject"] in graph_sync.subjects(b["question"], b["text"])
    assert {**flags[0], "subject": None} == {"answer_id": a["id"], "other_answer_id": b["id"], "subject": None,
                                             "detail": "30 days vs 14 days (nightly database backups)", "status": "OPEN"}
    assert c["id"] not in (flags[0]["answer_id"], flags[0]["other_answer_id"])


@pytest.mark.parametrize("url", ["bolt://127.0.0.1:9", "falkor://127.0.0.1:9", "unix:///nonexistent/graph.sock"])
def test_graph_connection_failure_is_a_clear_503(ctx, url):
    from r2k.core.outage import service_error

    with pytest.raises(GraphUnavailable) as raised:
        graph = connect(url, timeout=1)
        try:
            graph.ping()
        finally:
            graph.close()
    error = service_error(raised.value, ctx)
    assert error is not None and error.status == 503 and "graph" in error.message


def test_the_embedded_graph_is_falkordb_on_its_socket_with_a_password_and_no_bolt_port(ctx):
    import redis

    from r2k.core.embedded import common

    state = common.read_state(ctx.settings, "graph")
    assert ctx.graph.protocol == "FalkorDB" and ctx.graph_url.startswith("unix://")
    assert "bolt_port" not in state
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis(unix_socket_path=state["socket"]).ping()
    listening = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    assert not [line for line in listening.splitlines() if f"pid={state['pid']}," in line]  # no TCP port at all


def test_the_bolt_close_patch_applies_to_falkordb_only_and_still_fits_the_driver(ctx, bolt_url):
    """The Bolt adapter skips GOODBYE against FalkorDB (whose Bolt server hangs the next handshake
    after one) by marking the connection defunct before the driver's private close. This fails when
    a neo4j release renames that close or stops skipping GOODBYE for a defunct connection."""
    import inspect

    from neo4j._sync.io._bolt import Bolt

    import r2k.core.adapters.graph as adapter

    source = inspect.getsource(Bolt.close if not adapter._patched else Bolt.close.__closure__[0].cell_contents)
    assert "if not self._defunct" in source and "goodbye()" in source
    graph = BoltGraph(bolt_url)
    try:
        graph.ping()
        assert graph._server == "FalkorDB" and adapter._patched
    finally:
        graph.close()


def test_the_embedded_graph_keeps_its_data_in_the_data_dir(ctx):
    if ctx.settings.graph_url:
        pytest.skip("R2K_GRAPH_URL names the graph: not an embedded server of ours")
    from pathlib import Path

    from r2k.core.embedded import common

    common.read_state(ctx.settings, "graph")
    workdir = Path(ctx.settings.data_dir) / "graph"
    assert "appendonly yes" in (workdir / "server.conf").read_text().splitlines()
    ctx.graph.run("MERGE (m:Probe {id: 1})")
    files = [p for p in (workdir / "appendonlydir").iterdir()]
    assert files and all(p.stat().st_mode & 0o777 == 0o600 for p in files)


def test_a_killed_graph_server_blocks_no_registry_move_and_the_sweep_restarts_it_and_catches_up(ctx, people):
    if ctx.settings.graph_url:
        pytest.skip("R2K_GRAPH_URL names the graph: not an embedded server of ours")
    from r2k.core.embedded import common

    ctx.graph.run("MATCH (n) DETACH DELETE n")
    kept = publish(ctx, people, "What is established about visitor escort?", "Visitors need an escort.")
    moved = publish(ctx, people, "What is established about badge renewal?", "Badges are renewed every 12 months.")
    run_graph_jobs(ctx)
    assert graph_sync.catch_up(ctx)["lagging"] == 0  # the mark is set
    time.sleep(1.5)  # the append-only file is written every second
    before = common.read_state(ctx.settings, "graph")["pid"]
    os.kill(before, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while common.process_is(before, "redis-server") and time.monotonic() < deadline:
        time.sleep(0.05)
    # The registry carries on while the graph is away: its sync jobs wait in their queue.
    new = registry.supersede(ctx, people["alice"], moved["id"], "Badges are renewed every 24 months.", "HR policy")
    added = publish(ctx, people, "What is established about parking?", "Parking is free for visitors.")
    assert registry.show(ctx, moved["id"])["status"] == "SUPERSEDED"
    swept = sweeps.sweep_all(ctx)["graph"]
    after = common.read_state(ctx.settings, "graph")["pid"]
    assert after != before and common.process_is(after, "redis-server")
    # It came back with what it held (its mark too, so only the recent changes were compared), and
    # the sweep synced what changed while it was away.
    assert swept["whole"] is False and swept["lagging"] == swept["synced"] == 3, swept
    assert graph_sync.status(ctx)["in_step"]
    assert nodes(ctx.graph) == {kept["id"]: {"status": "APPROVED", "supersedes": None},
                                moved["id"]: {"status": "SUPERSEDED", "supersedes": None},
                                new["id"]: {"status": "APPROVED", "supersedes": moved["id"]},
                                added["id"]: {"status": "APPROVED", "supersedes": None}}


def test_a_graph_that_stays_away_never_fails_the_sweep(ctx, people):
    from r2k.core.bootstrap import bootstrap

    publish(ctx, people, "What is established about visitor escort?", "Visitors need an escort.")
    away = bootstrap(ctx.settings.model_copy(update={"graph_url": "falkor://127.0.0.1:9", "connect_timeout": 1}))
    try:
        swept = sweeps.sweep_all(away)
    finally:
        away.close()
    assert "does not answer" in swept["graph"]["unavailable"] and "claims" in swept


def test_a_subject_an_answer_no_longer_has_is_unlinked(ctx, people, graph):
    answer = publish(ctx, people, "What is established about visitor escort?", "Visitors need an escort.")
    run_graph_jobs(ctx)
    graph.run("MATCH (a:Answer {id: $id}) MERGE (s:Subject {name: 'stale rule'}) MERGE (a)-[:ABOUT]->(s)",
              id=answer["id"])
    graph_sync.sync_answer(ctx, answer["id"])
    about = graph.run("MATCH (:Answer {id: $id})-[:ABOUT]->(s:Subject) RETURN s.name AS name", id=answer["id"])
    assert sorted(r["name"] for r in about) == sorted(graph_sync.subjects(answer["question"], answer["text"]))
