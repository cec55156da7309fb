"""Ingest's storing side: a document ingested again after it changed (its new version beside the old,
new and changed statements as candidates, a pending candidate whose statement is gone withdrawn, an
answer whose source changed flagged for re-review, nothing else touched), near-duplicates as one
candidate with both sources, batched writes that `audit verify` and `replay --verify` find clean,
and grey entries matched against a new document through an index."""
from __future__ import annotations

import json
import threading

import pytest

from r2k.core.services.contradictions import conflicts
from r2k.core.services.documents import ingest
from r2k.core.services.grey_entries import grey
from r2k.core.services.queue import candidate_views, claims, queue_index
from r2k.core.services.validation import candidates
from tests.conftest import r2k, r2k_json
from tests.test_grey import force_state, taken_by_a_worker

HANDBOOK = """# Yard handbook

## Gates

The north gate opens at six in the morning on weekdays.

Drivers of every truck report to the gate house before they unload.

## Forklifts

Forklift batteries are charged overnight in bay seven of the yard.

Forklift drivers carry their licence card with them on every shift.
"""

# The same handbook later: the gate's hours unchanged; the reporting rule reworded; the batteries
# moved (the approved answer's statement changed); the licence card line gone; one statement new.
HANDBOOK_LATER = """# Yard handbook

## Gates

The north gate opens at six in the morning on weekdays.

Drivers of every truck report to the gate house before they unload anything at all.

## Forklifts

Forklift batteries are charged overnight in bay nine of the yard.

Visitors to the yard wear a yellow vest from the gate onwards.
"""

OPENS = "The north gate opens at six in the morning on weekdays."
REPORT = "Drivers of every truck report to the gate house before they unload."
BATTERIES = "Forklift batteries are charged overnight in bay seven of the yard."
LICENCE = "Forklift drivers carry their licence card with them on every shift."


def by_text(ctx) -> dict[str, dict]:
    return {c["text"]: c for c in candidate_views.list_candidates(ctx, limit=500)}


def versions(ctx, table: str, column: str = "version") -> dict[int, int]:
    with ctx.db.read() as tx:
        return {r["id"]: r[column] for r in tx.all(f"SELECT id, {column} FROM {table}")}


def events_of(ctx, aggregate: str, aggregate_id) -> list[dict]:
    with ctx.db.read() as tx:
        return tx.all("SELECT type, actor, payload FROM events WHERE aggregate_type = %s AND aggregate_id = %s "
                      "ORDER BY seq", (aggregate, str(aggregate_id)))


def approve(ctx, people, candidate_id) -> dict:
    claims.claim(ctx, people["alice"], candidate_id)
    return candidates.approve(ctx, people["alice"], candidate_id)["answer"]


def queued(ctx, horn: str) -> list[int]:
    return queue_index.queue(ctx).ids(horn)


def test_a_document_ingested_again_keeps_what_stayed_withdraws_what_went_and_flags_what_changed(ctx, people, tmp_path):
    path = tmp_path / "yard.md"
    path.write_text(HANDBOOK)
    first = ingest.ingest(ctx, people["root"], [path])
    assert first["candidates_total"] == 4 and first["versions"] == []
    before = by_text(ctx)
    answer = approve(ctx, people, before[BATTERIES]["id"])
    unrelated = approve(ctx, people, candidates.add(ctx, people["root"], "Who paints the lines?",
                                                    "The yard lines are repainted every spring.", "FACT")["id"])
    licence = before[LICENCE]
    assert licence["state"] == "PENDING" and licence["id"] in queued(ctx, licence["horn_type"])
    answers_before, events_before = versions(ctx, "approved_answers", "status"), events_count(ctx)
    candidates_before = versions(ctx, "candidates")

    path.write_text(HANDBOOK_LATER)
    again = ingest.ingest(ctx, people["root"], [path])
    old_id, new_id = first["document_ids"][0], again["document_ids"][0]
    assert again["versions"] == [{"path": str(path), "document_id": new_id, "supersedes": old_id}]
    assert (again["unchanged"], again["withdrawn"], again["flagged"]) == (1, 2, 1)
    with ctx.db.read() as tx:  # the old version is kept beside the new one, which names it
        docs = {r["id"]: r for r in tx.all("SELECT id, content, supersedes_id FROM source_documents")}
        current = {r["document_id"]: r["current"] for r in tx.all("SELECT DISTINCT document_id, current FROM source_passages")}
    assert docs[old_id]["content"] == HANDBOOK and docs[new_id]["supersedes_id"] == old_id
    assert current == {old_id: False, new_id: True}  # retrieval ranks the new version's passages only

    after = by_text(ctx)
    # Unchanged: the same candidate, untouched. New and changed statements: new candidates.
    assert after[OPENS]["id"] == before[OPENS]["id"] and after[OPENS]["version"] == before[OPENS]["version"]
    new_texts = {t for t in after if t not in before and after[t]["origin"] == "extracted"}
    assert new_texts == {"Drivers of every truck report to the gate house before they unload anything at all.",
                         "Forklift batteries are charged overnight in bay nine of the yard.",
                         "Visitors to the yard wear a yellow vest from the gate onwards."}
    assert all(after[t]["state"] == "PENDING" and candidate_views.get(ctx, after[t]["id"])["document_id"] == new_id
               for t in new_texts)
    # Gone, still pending: withdrawn by the system, reason source_removed, out of its queue.
    for text in (LICENCE, REPORT):
        withdrawn = after[text]
        assert withdrawn["state"] == "REJECTED" and withdrawn["id"] not in queued(ctx, withdrawn["horn_type"])
        last = events_of(ctx, "candidate", withdrawn["id"])[-1]
        assert (last["type"], last["actor"]) == ("withdraw", "system")
        assert last["payload"]["fields"] == {"reason": "source_removed", "document_id": new_id}
    # Changed, answered: a source_changed flag naming that one answer, the statement as it now reads.
    [flag] = conflicts.list_flags(ctx)
    assert (flag["kind"], flag["answer_id"], flag["other_answer_id"], flag["status"]) == \
        ("source_changed", answer["id"], None, "OPEN")
    assert flag["source_text"] == "Forklift batteries are charged overnight in bay nine of the yard."
    assert flag["source_document_id"] == new_id and str(path) in flag["detail"]
    # Nothing else changed: every other answer as it was, the approved candidate too, and the only
    # new events are the new document's, its candidates', the withdrawals and the flag.
    assert versions(ctx, "approved_answers", "status") == answers_before
    assert after[BATTERIES]["state"] == "APPROVED"
    assert {i: v for i, v in versions(ctx, "candidates").items() if i in candidates_before} == {
        **candidates_before, **{after[t]["id"]: candidates_before[after[t]["id"]] + 1 for t in (LICENCE, REPORT)}}
    assert conflicts.show(ctx, flag["id"])["answer"]["id"] == answer["id"] != unrelated["id"]
    assert events_count(ctx) - events_before == 1 + 3 + 2 + 1

    # The same content again adds nothing; the first content again is a version of its own.
    assert ingest.ingest(ctx, people["root"], [path])["duplicates"] == [{"path": str(path), "document_id": new_id}]
    path.write_text(HANDBOOK)
    back = ingest.ingest(ctx, people["root"], [path])
    assert back["documents"] == 1 and back["versions"][0]["supersedes"] == new_id


def events_count(ctx) -> int:
    with ctx.db.read() as tx:
        return tx.scalar("SELECT count(*) FROM events")


def test_a_statement_that_vanished_flags_its_answer_and_escalating_the_flag_disputes_that_answer(ctx, people, tmp_path):
    path = tmp_path / "yard.md"
    path.write_text(HANDBOOK)
    ingest.ingest(ctx, people["root"], [path])
    answer = approve(ctx, people, by_text(ctx)[LICENCE]["id"])
    path.write_text(HANDBOOK.replace(LICENCE, ""))
    assert ingest.ingest(ctx, people["root"], [path])["flagged"] == 1
    [flag] = conflicts.list_flags(ctx)
    assert flag["source_text"] is None and "is gone" in flag["detail"]
    # Ingesting it again does not flag the answer twice while the flag is open.
    path.write_text(HANDBOOK.replace(LICENCE, "") + "\nAnother statement about the yard lights at night.\n")
    assert ingest.ingest(ctx, people["root"], [path])["flagged"] == 0
    escalated = conflicts.escalate(ctx, people["alice"], flag["id"], "re-check the licence rule")
    assert escalated["disputed"] == [answer["id"]] and escalated["status"] == "ESCALATED"
    disputed = candidate_views.get(ctx, answer["candidate_id"])
    assert disputed["state"] == "DISPUTED"  # back at the head of its queue, for re-review
    assert queued(ctx, disputed["horn_type"])[0] == disputed["id"]
    shown = r2k_json("--as", "alice", "conflicts", "show", str(flag["id"]))
    assert shown["other"] is None and shown["answer"]["id"] == answer["id"]


def test_the_same_statement_in_two_documents_is_one_candidate_with_both_sources(ctx, people, tmp_path):
    (tmp_path / "a.md").write_text("# Gates\n\nThe north gate opens at six in the morning on weekdays.\n")
    (tmp_path / "b.md").write_text("# Opening hours\n\nThe  north gate opens at **six** in the morning, on weekdays!\n")
    summary = ingest.ingest(ctx, people["root"], [tmp_path])
    assert (summary["documents"], summary["candidates_total"], summary["merged"]) == (2, 1, 1)
    [candidate] = candidate_views.list_candidates(ctx)
    refs = candidate_views.get(ctx, candidate["id"])["source_refs"]
    assert [r["document_id"] for r in refs] == summary["document_ids"]
    assert refs[0]["statement"] == refs[1]["statement"] == ingest.statement_of(OPENS)
    added = events_of(ctx, "candidate", candidate["id"])[-1]
    assert added["type"] == "source_added" and len(added["payload"]["set"]["source_refs"]) == 2
    assert queued(ctx, candidate["horn_type"]) == [candidate["id"]]  # queued once


def test_a_statement_is_its_text_normalised():
    same = ["The north gate opens at six.", "the  North gate opens at *six*", "The north gate\nopens at six!"]
    assert len({ingest.statement_of(t) for t in same}) == 1
    assert ingest.statement_of("The north gate opens at six.") != ingest.statement_of("The north gate opens at 6.")
    assert ingest.statement_of("1.5 m") != ingest.statement_of("15 m")


def test_a_withdrawn_candidate_is_never_claimed(ctx, people, tmp_path):
    from r2k.core.errors import NotFound

    path = tmp_path / "yard.md"
    path.write_text(HANDBOOK)
    ingest.ingest(ctx, people["root"], [path])
    licence = by_text(ctx)[LICENCE]
    path.write_text(HANDBOOK.replace(LICENCE, ""))
    ingest.ingest(ctx, people["root"], [path])
    assert licence["id"] not in queued(ctx, licence["horn_type"])
    queue_index.queue(ctx).push_tail(licence["horn_type"], licence["id"])  # as if its removal had been lost
    claimed = []
    while True:
        try:
            claimed.append(claims.claim_next(ctx, people["alice"], licence["horn_type"])["id"])
        except NotFound:
            break
    assert claimed and licence["id"] not in claimed  # the claim path drops it, as any id no longer PENDING
    assert candidate_views.get(ctx, licence["id"])["state"] == "REJECTED"


def test_batched_ingest_leaves_the_audit_and_the_replay_clean(ctx, people, tmp_path):
    from tests.test_audit import replay, verify

    for n in range(3):
        (tmp_path / f"doc{n}.md").write_text(HANDBOOK.replace("seven", f"seven-{n}") + "\nGate hours vary.\n")
    ingest.ingest(ctx, people["root"], [tmp_path])
    (tmp_path / "doc0.md").write_text(HANDBOOK_LATER)
    approve(ctx, people, by_text(ctx)[OPENS]["id"])
    ingest.ingest(ctx, people["root"], [tmp_path / "doc0.md"])
    code, report = verify()
    assert code == 0 and report["ok"], report
    code, replayed = replay()
    assert code == 0 and replayed["differences"] == [], replayed["differences"][:3]
    with ctx.db.read() as tx:  # one chain per entity, each starting at seq 1
        assert tx.scalar("SELECT count(*) FROM events WHERE aggregate_type = 'candidate' AND seq = 1") == \
            tx.scalar("SELECT count(*) FROM candidates")
        assert tx.scalar("SELECT count(*) FROM events WHERE aggregate_type = 'grey_entry' AND seq = 1") == \
            tx.scalar("SELECT count(*) FROM grey_entries") > 0


def test_the_ingest_summary_says_what_a_new_version_did(ctx, people, tmp_path):
    path = tmp_path / "yard.md"
    path.write_text(HANDBOOK)
    r2k("--as", "root", "ingest", str(path))
    path.write_text(HANDBOOK_LATER)
    out = r2k("--as", "root", "ingest", str(path))
    assert out.returncode == 0, out.stderr
    assert "1 new version(s) of documents read before: 1 statement(s) unchanged, 3 pending candidate(s) " \
           "withdrawn, 0 answer(s) flagged source_changed" in out.stdout


# ----------------------------------------------------------------------------- grey entries, by index

# How retrigger_for_document found entries before it had an index: every pending entry scanned.
SCAN = ("SELECT g.id FROM grey_entries g, source_documents d WHERE d.id = %s AND g.state IN ('Pending', 'Retrying') "
        "AND (SELECT count(*) FROM unnest(to_tsvector('english', g.subject)) t "
        "WHERE t.lexeme = ANY(tsvector_to_array(d.search))) >= 2 ORDER BY g.id")


def test_a_new_document_re_processes_the_entries_it_did_before(ctx, people, tmp_path):
    from r2k.core.adapters import jobs

    def entry(subject, state=None):
        made = grey.add(ctx, people["sam"], subject)
        if state:
            taken_by_a_worker(ctx, made["id"])
            force_state(ctx, made["id"], state)
        return made["id"]

    shares_two = entry("drone insurance policy", "Retrying")
    shares_one = entry("drone paint colours", "Retrying")
    shares_none = entry("yard camera owners", "Retrying")
    waiting = entry("drone insurance claims")  # Pending: its processing job waits, and will see the document
    processing = entry("drone insurance limits", "Processing")
    failed = entry("drone insurance broker", "Failed")
    (tmp_path / "drones.md").write_text("# Drone operations\n\n## Insurance\n\nThe drone insurance policy is held "
                                        "with Northsea Mutual, claims go to the finance desk.\n")
    queue = jobs.queue(ctx.redis, "generation")
    before = set(queue.get_job_ids())
    [document_id] = ingest.ingest(ctx, people["root"], [tmp_path / "drones.md"])["document_ids"]
    with ctx.db.read() as tx:
        scanned = [r["id"] for r in tx.all(SCAN, (document_id,))]
    # The scan found these; those with a job waiting were left alone then as now.
    assert scanned == [shares_two, waiting]
    assert set(queue.get_job_ids()) - before == {grey.retrigger_job_id(shares_two)}
    assert grey.retrigger_for_document(ctx, document_id) == []  # its retrigger waits: not queued twice
    for untouched in (shares_one, shares_none, processing, failed):
        assert grey.retrigger_job_id(untouched) not in queue.get_job_ids()


def test_matching_a_document_reads_only_the_entries_it_finds(ctx, people, superuser, tmp_path):
    """Through the index of the retrying entries' lexemes: the rows the query reads do not grow with the
    entries that share no term with the document, nor with the Pending ones, however many."""
    (tmp_path / "drones.md").write_text("# Drone operations\n\nThe drone insurance policy is held with Northsea "
                                        "Mutual for every flight.\n")
    [document_id] = ingest.ingest(ctx, people["root"], [tmp_path / "drones.md"])["document_ids"]

    def bulk(n, subject, state):
        superuser("INSERT INTO grey_entries (subject, state, origin, ttl_seconds, expires_at, max_attempts, created_by, "
                  "created_at, updated_at) SELECT %s || ' ' || g, %s, 'bench', 60, now(), 3, 'bulk', now(), now() "
                  "FROM generate_series(1, %s) g", (subject, state, n))

    bulk(3, "drone insurance policy number", "Retrying")  # the entries it finds
    bulk(5000, "yard camera owners", "Retrying")
    bulk(5000, "drone insurance policy number", "Pending")
    with ctx.db.read() as tx:
        terms = tx.scalar(grey.DOCUMENT_TERMS, (document_id,))
    read, indexes = rows_read(ctx, superuser, grey.MATCHING_ENTRIES, {"terms": terms})
    assert read == 3 and "grey_entries_retrying_terms" in indexes
    assert rows_read(ctx, superuser, SCAN, (document_id,))[0] >= 10003  # the scan it replaces read them all
    with ctx.db.read() as tx:
        assert len(grey.entries_matching(tx, document_id)) == 3


def rows_read(ctx, superuser, sql: str, params) -> tuple[int, set[str]]:
    """The grey entries a query read (EXPLAIN ANALYZE), and the indexes its plan used."""
    superuser("ANALYZE grey_entries")
    with ctx.db.read() as tx:
        [[plan]] = [list(r.values()) for r in tx.all("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params, prepare=False)]
    nodes = []

    def walk(node):
        nodes.append(node)
        for child in node.get("Plans", []):
            walk(child)

    walk((plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"])
    scans = [n for n in nodes if n.get("Relation Name") == "grey_entries"]
    read = sum(n["Actual Rows"] * n["Actual Loops"] + n.get("Rows Removed by Filter", 0)
               + n.get("Rows Removed by Index Recheck", 0) for n in scans)
    return read, {n["Index Name"] for n in nodes if "Index Name" in n}


def test_the_migration_finds_the_statements_of_candidates_extracted_before_it(ctx, people, superuser, tmp_path):
    import importlib

    import psycopg

    from r2k.core import embedded

    path = tmp_path / "yard.md"
    path.write_text(HANDBOOK)
    ingest.ingest(ctx, people["root"], [path])
    revised = by_text(ctx)[OPENS]
    claims.claim(ctx, people["alice"], revised["id"])
    candidates.revise(ctx, people["alice"], revised["id"], "The north gate opens at seven.")
    stored = superuser("SELECT * FROM document_statements ORDER BY candidate_id")
    superuser("DELETE FROM document_statements")
    migration = importlib.import_module("r2k.core.migrations.versions.0013_document_versions")
    with psycopg.connect(embedded.superuser_url(ctx.settings), autocommit=True) as conn:
        migration.statements(conn)
    # The same rows, the revised candidate's by the text it was extracted with.
    assert superuser("SELECT * FROM document_statements ORDER BY candidate_id") == stored
    assert {r["statement"] for r in stored} >= {ingest.statement_of(OPENS)}


def test_a_batch_of_candidates_is_queued_and_noticed_in_order_as_one_by_one(ctx, people, tmp_path):
    from r2k.core.notices import CHANNEL

    pubsub = ctx.redis.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(CHANNEL)
    pubsub.get_message(timeout=1)
    path = tmp_path / "yard.md"
    path.write_text(HANDBOOK)
    [document_id] = ingest.ingest(ctx, people["root"], [path])["document_ids"]
    made = sorted(c["id"] for c in candidate_views.list_candidates(ctx))
    seen = []
    while len(seen) < 5 and (message := pubsub.get_message(timeout=2)) is not None:
        if message["type"] == "message":
            seen.append(json.loads(message["data"]))
    pubsub.close()
    assert [(n["entity"], n["id"], n["action"]) for n in seen] == [
        ("source_document", document_id, "ingested"), *(("candidate", i, "extract") for i in made)]
    assert all(set(n) == {"entity", "id", "action", "state", "version", "actor"} for n in seen)
    assert sorted(queued(ctx, "FACT") + queued(ctx, "RULE") + queued(ctx, "CONSTRAINT")) == made
    for horn in ("FACT", "RULE", "CONSTRAINT"):
        assert queued(ctx, horn) == sorted(queued(ctx, horn))  # the tail in the order they were made


def test_a_candidate_in_review_whose_statement_went_is_left_to_its_validator(ctx, people, tmp_path):
    path = tmp_path / "yard.md"
    path.write_text(HANDBOOK)
    ingest.ingest(ctx, people["root"], [path])
    licence = by_text(ctx)[LICENCE]
    claims.claim(ctx, people["alice"], licence["id"])
    path.write_text(HANDBOOK.replace(LICENCE, ""))
    summary = ingest.ingest(ctx, people["root"], [path])
    assert (summary["withdrawn"], summary["flagged"]) == (0, 0)
    still = candidate_views.get(ctx, licence["id"])
    assert (still["state"], still["claimed_by"]) == ("IN_REVIEW", "alice")


def test_files_are_stored_in_their_order_while_the_next_are_read_and_a_stop_stops_the_reading(ctx, people, tmp_path):
    """Files are read and parsed a few ahead of the one stored (in a thread): each is stored in the
    order given, the progress ticks once per file in that order, a file that cannot be read is
    skipped with its reason as before, and a stop part way (ctrl+c in the progress) stops the
    reading too, leaving the files before it stored and nothing after."""
    names = [f"doc{n}.md" for n in range(7)]
    for n, name in enumerate(names):
        (tmp_path / name).write_text(f"# Bay {n}\n\nThe crane in bay {n} lifts at most {n + 2} tonnes at a time.\n")
    (tmp_path / "doc3.md").write_bytes(b"# Bay 3\n\nThe crane \xff lifts.\n")  # not UTF-8
    ticks = []
    summary = ingest.ingest(ctx, people["root"], [tmp_path], on_file=lambda path, i, n: ticks.append((path.name, i, n)))
    assert ticks == [(name, i, 7) for i, name in enumerate(names)] + [("", 7, 7)]
    assert [s["path"].rsplit("/", 1)[-1] for s in summary["skipped"]] == ["doc3.md"]
    with ctx.db.read() as tx:
        stored = [r["path"].rsplit("/", 1)[-1] for r in tx.all("SELECT path FROM source_documents ORDER BY id")]
    assert stored == [name for name in names if name != "doc3.md"]

    for name in names:
        (tmp_path / name).write_text((tmp_path / name).read_text(errors="replace") + "\nA second crane is on order.\n")
    seen = []

    def stop(path, i, n):
        seen.append(i)
        if i == 2:
            raise KeyboardInterrupt  # the operator's ctrl+c

    with pytest.raises(KeyboardInterrupt):
        ingest.ingest(ctx, people["root"], [tmp_path], on_file=stop)
    assert seen == [0, 1, 2]
    assert not [t for t in threading.enumerate() if t.name == "ingest-read-ahead"]
    with ctx.db.read() as tx:
        assert tx.scalar("SELECT count(*) FROM source_documents") == len(stored) + 2  # doc0 and doc1 again
