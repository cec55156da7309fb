"""The registry mirrored into the graph: idempotent sync, supersede links, contradictions on one
subject, and requests kept small. Every test runs through both adapters: FalkorDB's own protocol
(the embedded graph) and Bolt (the neo4j driver), the latter against a Bolt-enabled FalkorDB
started only for these tests (FalkorDB's Bolt port listens on every interface without asking for
a password, which is why the embedded graph never opens one)."""
from __future__ import annotations

import subprocess
import time

import pytest

from r2k.core.adapters.graph import MAX_STRING, BoltGraph, FalkorGraph, GraphRequestTooLarge, GraphUnavailable, connect
from r2k.core.services import candidates, claims, graph_sync, registry


@pytest.fixture(scope="module")
def bolt_url(services, tmp_path_factory):
    """A throwaway FalkorDB with its Bolt port, for the Bolt adapter's compatibility run."""
    from r2k.core.embedded import common, redis as embedded_redis

    workdir = tmp_path_factory.mktemp("bolt-graph")
    port = common.free_port(28379)
    bolt = common.free_port(28687, {port})
    binaries = embedded_redis.bin_dir()
    subprocess.run([str(binaries / "redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--daemonize", "yes",
                    "--dir", str(workdir), "--pidfile", str(workdir / "server.pid"), "--save", "",
                    "--logfile", str(workdir / "server.log"),
                    "--loadmodule", str(binaries / "falkordb.so"), "BOLT_PORT", str(bolt)], check=True)
    url = f"bolt://127.0.0.1:{bolt}"
    deadline = time.monotonic() + 15
    while not common.answers_tcp(bolt) and time.monotonic() < deadline:
        time.sleep(0.05)
    yield url
    common.stop_pid(int((workdir / "server.pid").read_text()), "redis-server")


@pytest.fixture(params=["falkordb", "bolt"])
def graph(request, ctx):
    """The context's graph through one adapter, emptied."""
    if request.param == "bolt":
        ctx.__dict__["graph"] = BoltGraph(request.getfixturevalue("bolt_url"))
    assert isinstance(ctx.graph, BoltGraph if request.param == "bolt" else FalkorGraph)
    ctx.graph.run("MATCH (n) DETACH DELETE n")
    return ctx.graph


def publish(ctx, people, question, text):
    candidates.add(ctx, people["root"], question, text, "FACT")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    return candidates.approve(ctx, people["alice"], claimed["id"])["answer"]


def test_sync_is_idempotent_and_holds_structure_not_texts(ctx, people, graph):
    long_text = "Nightly database backups are kept for 30 days. " * 200  # ~9,600 characters
    answer = publish(ctx, people, "What is established about backup retention?", long_text)
    for _ in range(2):
        assert graph_sync.sync_answer(ctx, answer["id"])["subject"] == "backup retention"
    rows = graph.run("MATCH (a:Answer {id: $id})-[:ABOUT]->(s:Subject) RETURN a.status AS status, "
                     "a.title AS title, s.name AS subject, keys(a) AS keys", id=answer["id"])
    assert rows == [{"status": "APPROVED", "title": "What is established about backup retention?",
                     "subject": "backup retention", "keys": rows[0]["keys"]}]
    assert "text" not in rows[0]["keys"]  # the graph never holds full texts
    assert graph.run("MATCH (a:Answer) RETURN count(a) AS n")[0]["n"] == 1


def test_a_long_string_cannot_reach_the_graph(ctx, graph):
    graph.run("MERGE (a:Answer {id: -1}) SET a.title = $title", title="x" * 8000)
    stored = graph.run("MATCH (a:Answer {id: -1}) RETURN a.title AS title")[0]["title"]
    assert len(stored) == MAX_STRING
    with pytest.raises(GraphRequestTooLarge):
        graph.run("UNWIND $rows AS r MERGE (:Answer {id: r.id, t: r.t})",
                  rows=[{"id": i, "t": "y" * 150} for i in range(100)])
    assert graph.run("RETURN 1 AS ok") == [{"ok": 1}]  # the server is still up


def test_supersede_is_mirrored_as_a_link(ctx, people, graph):
    old = publish(ctx, people, "What is established about visitor escort?", "Visitors need an escort at all times.")
    new = registry.supersede(ctx, people["alice"], old["id"], "Visitors need an escort in the server room.", "scope")
    graph_sync.sync_answer(ctx, old["id"])
    graph_sync.sync_answer(ctx, new["id"])
    links = graph.run("MATCH (n:Answer)-[:SUPERSEDES]->(o:Answer) RETURN n.id AS new, o.id AS old, "
                      "o.status AS status")
    assert links == [{"new": new["id"], "old": old["id"], "status": "SUPERSEDED"}]


def test_answers_on_one_subject_that_disagree_are_flagged_once(ctx, people, graph):
    a = publish(ctx, people, "What is established about backup retention?",
                "Nightly database backups are kept for 30 days in Frankfurt.")
    b = publish(ctx, people, "What is established about backup retention?",
                "Nightly database backups are kept for 14 days.")
    c = publish(ctx, people, "What is established about backup storage?",
                "Backups are kept for 7 days on the local array.")  # another subject: no conflict
    for answer in (a, b, c):
        graph_sync.sync_answer(ctx, answer["id"])
    found = graph_sync.detect_contradictions(ctx, b["id"])
    again = graph_sync.detect_contradictions(ctx, a["id"])
    assert len(found["flags"]) == 1 and again["flags"] == []
    with ctx.db.read() as tx:
        flags = tx.all("SELECT answer_id, other_answer_id, subject, detail, status FROM conflict_flags")
    assert flags == [{"answer_id": a["id"], "other_answer_id": b["id"], "subject": "backup retention",
                      "detail": "30 vs 14 day(s)", "status": "OPEN"}]


@pytest.mark.parametrize("url", ["bolt://127.0.0.1:9", "falkor://127.0.0.1:9"])
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


def test_the_embedded_graph_is_falkordb_with_a_password_and_no_bolt_port(ctx):
    import redis

    from r2k.core.embedded import common

    state = common.read_state(ctx.settings, "graph")
    assert ctx.graph.protocol == "FalkorDB" and ctx.graph_url.startswith("falkor://")
    assert "bolt_port" not in state
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis(port=state["port"]).ping()
    listening = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    mine = [line for line in listening.splitlines() if f"pid={state['pid']}," in line]
    assert mine and all("127.0.0.1:" in line.split()[3] for line in mine), mine


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
