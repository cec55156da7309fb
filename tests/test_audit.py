"""An audit log a database writer cannot fool: every damage an insider with SQL access as the database
superuser can do to the event log is named by `audit verify` or `replay --verify`, run as a user runs
them. Every tampering goes through the `superuser` fixture, never through the application's connection.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from types import SimpleNamespace

import pytest

from r2k.core import audit, events
from r2k.core.services.queue import claims, queue_index
from r2k.core.services.validation import candidates
from tests.conftest import ROOT, error_of, r2k, r2k_json, scratch_databases

# ----------------------------------------------------------------------------- helpers

def world(ctx, people) -> None:
    """Three FACT candidates; candidate 1 claimed and approved (answer 1, validation record 1),
    candidate 2 claimed: chains candidate 1 (create, claim, approve), candidate 2 (create, claim),
    candidate 3 (create), answer 1, validation_record 1, and the five users."""
    for i in range(3):
        candidates.add(ctx, people["root"], f"Q{i}?", f"Fact {i}.", "FACT")
    claims.claim_next(ctx, people["alice"], "FACT")
    candidates.approve(ctx, people["alice"], 1)
    claims.claim_next(ctx, people["alice"], "FACT")


def chain(superuser, aggregate_type: str, aggregate_id) -> list[dict]:
    return superuser("SELECT * FROM events WHERE aggregate_type = %s AND aggregate_id = %s ORDER BY seq",
                     (aggregate_type, str(aggregate_id)))


def tamper(superuser, *statements) -> None:
    """Statements run as the database superuser with the event log's append-only trigger off."""
    superuser("ALTER TABLE events DISABLE TRIGGER events_append_only")
    try:
        for statement in statements:
            sql, params = statement if isinstance(statement, tuple) else (statement, None)
            superuser(sql, params)
    finally:
        superuser("ALTER TABLE events ENABLE TRIGGER events_append_only")


def verify(*extra: str, env: dict | None = None) -> tuple[int, dict]:
    result = r2k("--json", "audit", "verify", "--as", "root", *extra, env=env)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def verify_text(*extra: str) -> str:
    return r2k("audit", "verify", "--as", "root", *extra).stdout


def anchor() -> dict:
    return r2k_json("audit", "anchor", "--as", "root")


def replay() -> tuple[int, dict]:
    result = r2k("--json", "replay", "--verify", "--as", "root")
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def damaged(report: dict) -> list[tuple[str, str, str]]:
    return [(d["aggregate_type"], d["aggregate_id"], d["problem"]) for d in report["damaged_chains"]]


def broken(report: dict) -> list[tuple[str, str, int, str]]:
    return [(b["aggregate_type"], b["aggregate_id"], b["seq"], b["problem"]) for b in report["broken"]]


def file_lines(ctx) -> list[dict]:
    path = audit.checkpoint_file(ctx.settings)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# ----------------------------------------------------------------------------- chains altered

def test_a_changed_middle_event_is_named(ctx, people, superuser):
    world(ctx, people)
    assert verify()[1]["ok"] is True
    middle = chain(superuser, "candidate", 1)[1]
    tamper(superuser, ("UPDATE events SET actor = 'mallory' WHERE id = %s", (middle["id"],)))
    code, report = verify()
    assert code == 1 and report["ok"] is False
    assert [b["event_id"] for b in report["broken"]] == [middle["id"]]
    assert broken(report) == [("candidate", "1", 2, "content does not match its hash (altered after it was written)")]
    assert f"event {middle['id']} (candidate 1 seq 2): content does not match its hash" in verify_text()


def test_a_deleted_middle_event_is_named(ctx, people, superuser):
    world(ctx, people)
    middle = chain(superuser, "candidate", 1)[1]
    tamper(superuser, ("DELETE FROM events WHERE id = %s", (middle["id"],)))
    code, report = verify()
    assert code == 1
    assert broken(report) == [("candidate", "1", 3, "sequence gap: expected seq 2, found 3")]


def test_a_deleted_tail_event_is_named_against_the_checkpoint(ctx, people, superuser):
    world(ctx, people)
    written = anchor()
    assert (written["number"], written["chains"]) == (1, 10)  # 3 candidates, answer, record, 5 users
    tail = chain(superuser, "candidate", 1)[-1]
    tamper(superuser, ("DELETE FROM events WHERE id = %s", (tail["id"],)))
    code, report = verify()
    assert code == 1
    assert report["broken"] == []  # what is left of the chain is well-formed: only the checkpoint knows
    assert damaged(report) == [("candidate", "1", "shorter than anchored: it ends at seq 2, "
                                                  "checkpoint 1 anchored seq 3")]
    assert report["anchor"]["number"] == 1 and report["anchor"]["source"] == "database and file"
    assert "  chain candidate 1: shorter than anchored: it ends at seq 2, checkpoint 1 anchored seq 3" \
        in verify_text().splitlines()


def test_two_swapped_events_are_named(ctx, people, superuser):
    world(ctx, people)
    second, third = chain(superuser, "candidate", 1)[1:3]
    tamper(superuser,
           ("UPDATE events SET seq = -1 WHERE id = %s", (second["id"],)),
           ("UPDATE events SET seq = 2 WHERE id = %s", (third["id"],)),
           ("UPDATE events SET seq = 3 WHERE id = %s", (second["id"],)))
    code, report = verify()
    assert code == 1
    assert [(b["event_id"], b["seq"], b["problem"]) for b in report["broken"]] == [
        (third["id"], 2, "prev_hash does not match the previous event's hash")]


# ----------------------------------------------------------------------------- projections altered

def test_an_answer_text_changed_behind_its_trigger_is_found_by_replay(ctx, people, superuser):
    world(ctx, people)
    assert replay()[0] == 0
    superuser("ALTER TABLE approved_answers DISABLE TRIGGER approved_answers_immutable")
    try:
        superuser("UPDATE approved_answers SET text = 'A forged fact.' WHERE id = 1")
    finally:
        superuser("ALTER TABLE approved_answers ENABLE TRIGGER approved_answers_immutable")
    code, report = replay()
    assert code == 1
    assert report["differences"] == [{"aggregate_type": "answer", "id": "1", "column": "text",
                                      "from_events": "Fact 0.", "in_table": "A forged fact."}]
    assert verify()[0] == 0  # the log itself is whole: the table lies about it


def test_a_changed_state_column_is_found_by_replay(ctx, people, superuser):
    world(ctx, people)
    superuser("UPDATE candidates SET state = 'APPROVED' WHERE id = 3")
    code, report = replay()
    assert code == 1
    assert report["differences"] == [{"aggregate_type": "candidate", "id": "3", "column": "state",
                                      "from_events": "PENDING", "in_table": "APPROVED"}]
    lines = r2k("replay", "--verify", "--as", "root").stdout.splitlines()
    assert "  candidate 3.state: events say 'PENDING', table has 'APPROVED'" in lines


def test_replay_names_events_whose_row_is_missing(ctx, people, superuser):
    world(ctx, people)
    bob_id = superuser("SELECT id FROM users WHERE name = 'bob'")[0]["id"]
    superuser("DELETE FROM users WHERE id = %s", (bob_id,))
    code, report = replay()
    assert code == 1
    assert report["differences"] == [{"aggregate_type": "user", "id": str(bob_id), "column": None,
                                      "problem": "events exist but the row is missing"}]


# ----------------------------------------------------------------------------- removals

def test_an_undone_approval_is_named_though_replay_agrees(ctx, people, superuser):
    for i in range(2):
        candidates.add(ctx, people["root"], f"Q{i}?", f"Fact {i}.", "FACT")
    claims.claim_next(ctx, people["alice"], "FACT")
    before = superuser("SELECT * FROM candidates WHERE id = 1")[0]
    last_before = superuser("SELECT max(id) AS id FROM events")[0]["id"]
    candidates.approve(ctx, people["alice"], 1)
    assert anchor()["number"] == 1
    added = superuser("SELECT aggregate_type, aggregate_id FROM events WHERE id > %s ORDER BY id", (last_before,))
    assert sorted({(e["aggregate_type"], e["aggregate_id"]) for e in added}) == [
        ("answer", "1"), ("candidate", "1"), ("validation_record", "1")]

    # The insider erases the approval: its events, the answer, the record, and the row rolled back.
    tamper(superuser, ("DELETE FROM events WHERE id > %s", (last_before,)))
    superuser("DELETE FROM answer_subjects WHERE answer_id = 1")  # the subjects indexed at its publish
    superuser("ALTER TABLE approved_answers DISABLE TRIGGER approved_answers_immutable")
    try:
        superuser("DELETE FROM approved_answers WHERE id = 1")
    finally:
        superuser("ALTER TABLE approved_answers ENABLE TRIGGER approved_answers_immutable")
    superuser("DELETE FROM validation_records WHERE id = 1")
    superuser("UPDATE candidates SET state = %s, version = %s, updated_at = %s, claimed_by = %s, "
              "lease_expires_at = %s WHERE id = 1", (before["state"], before["version"], before["updated_at"],
                                                     before["claimed_by"], before["lease_expires_at"]))

    assert replay()[0] == 0  # the projections agree with what is left of the log
    code, report = verify()
    assert code == 1 and report["broken"] == []
    assert damaged(report) == [
        ("answer", "1", "missing: checkpoint 1 anchored it at seq 1, the database has no event of it"),
        ("candidate", "1", "shorter than anchored: it ends at seq 2, checkpoint 1 anchored seq 3"),
        ("validation_record", "1", "missing: checkpoint 1 anchored it at seq 1, the database has no event of it")]
    text = verify_text().splitlines()
    assert "  chain answer 1: missing: checkpoint 1 anchored it at seq 1, the database has no event of it" in text
    assert "  chain candidate 1: shorter than anchored: it ends at seq 2, checkpoint 1 anchored seq 3" in text


def test_a_record_deleted_with_its_whole_chain_is_named(ctx, people, superuser):
    world(ctx, people)
    anchor()
    tamper(superuser, "DELETE FROM events WHERE aggregate_type = 'candidate' AND aggregate_id = '3'")
    superuser("DELETE FROM candidates WHERE id = 3")
    assert replay()[0] == 0
    code, report = verify()
    assert code == 1 and report["broken"] == []
    assert damaged(report) == [("candidate", "3", "missing: checkpoint 1 anchored it at seq 1, the database "
                                                  "has no event of it")]


def test_the_anchor_kept_off_the_host_names_what_both_copies_on_it_lost(ctx, people, superuser, tmp_path):
    world(ctx, people)
    kept = tmp_path / "anchor.json"
    kept.write_text(r2k("--json", "audit", "anchor", "--as", "root").stdout)
    # An insider with the host too: the tail, the checkpoint rows and the data dir's file, all gone.
    tamper(superuser, "DELETE FROM events WHERE aggregate_type = 'candidate' AND aggregate_id = '1' AND seq = 3")
    superuser("ALTER TABLE audit_checkpoints DISABLE TRIGGER audit_checkpoints_append_only")
    superuser("DELETE FROM audit_checkpoints")
    superuser("ALTER TABLE audit_checkpoints ENABLE TRIGGER audit_checkpoints_append_only")
    superuser("DELETE FROM audit_heads")
    superuser("DELETE FROM audit_buckets")
    audit.checkpoint_file(ctx.settings).unlink()
    assert verify()[0] == 0  # nothing on the host remembers
    code, report = verify("--anchor", str(kept))
    assert code == 1
    assert [p["problem"] for p in report["checkpoints"]["problems"]] == [
        f"the --anchor {kept} checkpoint 1 is missing from the database and {audit.checkpoint_file(ctx.settings)}"]


# ----------------------------------------------------------------------------- keys

def _resign(superuser, event: dict, actor: str, key) -> str:
    """Re-hash and re-sign an event under `actor` with `key`, registering the key in signing_keys."""
    from cryptography.hazmat.primitives import serialization

    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    key_id = events.key_id_of(public)
    superuser("INSERT INTO signing_keys (key_id, public_key) VALUES (%s, %s)", (key_id, public))
    digest = events.event_hash(events.hashed_fields(
        event["aggregate_type"], event["aggregate_id"], event["seq"], event["type"], actor, event["payload"],
        event["created_at"], event["idempotency_key"], event["prev_hash"]))
    tamper(superuser, ("UPDATE events SET actor = %s, hash = %s, signature = %s, key_id = %s WHERE id = %s",
                       (actor, digest, key.sign(digest.encode()), key_id, event["id"])))
    return key_id


def test_an_approval_resigned_by_a_key_added_to_signing_keys_is_untrusted(ctx, people, superuser):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    world(ctx, people)
    anchor()
    approval = chain(superuser, "candidate", 1)[-1]
    assert (approval["type"], approval["actor"]) == ("approve", "alice")
    key_id = _resign(superuser, approval, "mallory", Ed25519PrivateKey.generate())
    code, report = verify()
    assert code == 1
    assert broken(report) == [("candidate", "1", 3, f"signed by untrusted key {key_id}: it is in signing_keys "
                                                    f"but not in the trust store")]
    assert report["untrusted_keys"] == [key_id]
    assert damaged(report) == [("candidate", "1", "different head: its event seq 3 is not the one checkpoint 1 "
                                                  "anchored")]
    assert f"signed by untrusted key {key_id}" in verify_text()


def test_a_key_in_the_trusted_keys_file_is_trusted_and_a_bad_line_is_a_400(ctx, people, superuser, tmp_path):
    import base64

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    world(ctx, people)
    remote = Ed25519PrivateKey.generate()
    key_id = _resign(superuser, chain(superuser, "candidate", 3)[-1], "remote-signer", remote)
    public = remote.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    trusted = tmp_path / "trusted_keys"
    trusted.write_text(f"# the ops-2 host, rotated 2026-11\n\n{base64.b64encode(public).decode()}  ops-2\n"
                       f"{'ab' * 32} an old key, hex\n")
    assert verify()[0] == 1
    code, report = verify(env={"R2K_TRUSTED_KEYS": str(trusted)})
    assert code == 0 and report["broken"] == [] and key_id in report["trusted_keys"]

    trusted.write_text(f"{base64.b64encode(public).decode()}\n# fine so far\nnot-a-key  oops\n")
    result = r2k("--json", "audit", "verify", "--as", "root", env={"R2K_TRUSTED_KEYS": str(trusted)})
    assert result.returncode == 6
    error = error_of(result)
    assert error["status"] == 400 and f"{trusted} line 3: 'not-a-key' is not an Ed25519 public key" in error["message"]


# ----------------------------------------------------------------------------- checkpoints

def test_checkpoint_problems_are_named(ctx, people, superuser):
    world(ctx, people)
    anchor()
    claims.claim_next(ctx, people["alice"], "FACT")
    second = anchor()
    assert second["number"] == 2 and len(file_lines(ctx)) == 2
    path = audit.checkpoint_file(ctx.settings)

    # Checkpoint 2 removed from the database: the file still has it, and still anchors candidate 3's claim.
    superuser("ALTER TABLE audit_checkpoints DISABLE TRIGGER audit_checkpoints_append_only")
    try:
        superuser("DELETE FROM audit_checkpoints WHERE number = 2")
        tamper(superuser, "DELETE FROM events WHERE aggregate_type = 'candidate' AND aggregate_id = '3' AND seq = 2")
        code, report = verify()
        assert code == 1
        assert [p["problem"] for p in report["checkpoints"]["problems"]] == [
            f"checkpoint 2 is in {path} but missing from the database"]
        assert (report["anchor"]["number"], report["anchor"]["source"]) == (2, "file")
        assert damaged(report) == [("candidate", "3", "shorter than anchored: it ends at seq 1, "
                                                      "checkpoint 2 anchored seq 2")]

        # Checkpoint 1 altered in the database: it no longer matches its hash, nor the file.
        superuser("UPDATE audit_checkpoints SET record = jsonb_set(record, '{events}', '1') WHERE number = 1")
        problems = [p["problem"] for p in verify()[1]["checkpoints"]["problems"]]
        assert f"checkpoint 1 differs between the database and {path}" in problems
        assert "checkpoint 1 in the database: its content does not match its hash (altered after it was signed)" \
            in problems
    finally:
        superuser("ALTER TABLE audit_checkpoints ENABLE TRIGGER audit_checkpoints_append_only")


def test_a_checkpoint_signed_by_an_untrusted_key_or_with_a_wrong_root_is_named(ctx, people, superuser):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from psycopg.types.json import Jsonb

    world(ctx, people)
    first = anchor()
    path = audit.checkpoint_file(ctx.settings)

    def forge(sign, root: str) -> dict:
        record = {**first, "number": 2, "prev_hash": first["hash"], "root": root, "delta": [],
                  "delta_digest": audit.delta_digest([])}
        record["key_id"], signature = sign(record)
        record["hash"] = audit.record_hash(record)
        record["signature"] = signature(record["hash"]).hex()
        return record

    mallory = Ed25519PrivateKey.generate()
    untrusted = forge(lambda r: ("deadbeefdeadbeef", lambda h: mallory.sign(h.encode())), first["root"])
    superuser("INSERT INTO audit_checkpoints (number, watermark, created_at, hash, record, delta) "
              "VALUES (2, %s, now(), %s, %s, '[]')", (untrusted["watermark"], untrusted["hash"],
                                                      Jsonb(audit.header(untrusted))))
    code, report = verify()
    assert code == 1
    assert [p["problem"] for p in report["checkpoints"]["problems"]] == [
        "checkpoint 2 in the database: it is signed by untrusted key deadbeefdeadbeef: not in the trust store"]
    assert report["anchor"]["number"] == 1  # the newest checkpoint it trusts

    # Signed by the data dir's own key (a writer gone wrong), but the heads it lists are not its root.
    wrong = forge(lambda r: (ctx.signer.key_id, ctx.signer.sign), "00" * 32)
    with open(path, "a") as handle:
        handle.write(json.dumps({**wrong, "number": 3, "prev_hash": wrong["hash"]}) + "\n")
    with open(path, "a") as handle:
        handle.write(json.dumps(wrong) + "\n")
    problems = [p["problem"] for p in verify()[1]["checkpoints"]["problems"]]
    assert "checkpoint 2: its recorded heads do not match its signed root" in problems
    assert f"checkpoint 2 differs between the database and {path}" in problems


def test_the_writer_never_signs_a_chain_cut_back(ctx, people, superuser):
    world(ctx, people)
    anchor()
    # Candidate 2's claim erased and its row put back in the queue; then it is claimed again.
    claim = chain(superuser, "candidate", 2)[-1]
    tamper(superuser, ("DELETE FROM events WHERE id = %s", (claim["id"],)))
    superuser("UPDATE candidates SET state = 'PENDING', claimed_by = NULL, lease_expires_at = NULL, version = 1 "
              "WHERE id = 2")
    queue_index.reconcile(ctx)
    assert claims.claim_next(ctx, people["bob"], "FACT")["id"] == 2
    result = r2k("audit", "anchor", "--as", "root")
    assert result.returncode == 1
    assert "NOT a fresh checkpoint" in result.stdout
    assert ("chain candidate 2 is shorter than anchored: a new event has seq 2, checkpoint 1 anchored seq 2"
            in result.stdout)
    assert superuser("SELECT count(*) AS n FROM audit_checkpoints")[0]["n"] == 1
    code, report = verify()
    assert code == 1
    assert damaged(report) == [("candidate", "2", "different head: its event seq 2 is not the one checkpoint 1 "
                                                  "anchored")]


def test_ordinary_commands_write_a_checkpoint_every_n_events(ctx, people):
    few = {"R2K_CHECKPOINT_EVENTS": "1000"}
    r2k_json("candidates", "add", "--question", "Q0?", "--text", "Fact 0.", "--horn-type", "FACT", "--as", "root",
             env=few)
    assert file_lines(ctx) == []  # 6 events: none due
    env = {"R2K_CHECKPOINT_EVENTS": "8"}
    for i in range(1, 4):
        r2k_json("candidates", "add", "--question", f"Q{i}?", "--text", f"Fact {i}.", "--horn-type", "FACT",
                 "--as", "root", env=env)
    with ctx.db.read() as tx:
        rows = tx.all("SELECT number, watermark, record FROM audit_checkpoints ORDER BY number")
        total = tx.scalar("SELECT count(*) FROM events")
    # 5 users + 1 candidate, then one candidate a command: the command that wrote event 8 checkpointed
    # it; the next one's event 9 is not due yet.
    assert [(r["number"], r["watermark"], r["record"]["events"]) for r in rows] == [(1, 8, 8)]
    assert total == 9
    assert [line["number"] for line in file_lines(ctx)] == [1]
    assert file_lines(ctx)[0]["delta"] == sorted(file_lines(ctx)[0]["delta"])
    mode = audit.checkpoint_file(ctx.settings).stat().st_mode & 0o777
    assert (mode, audit.checkpoint_file(ctx.settings).parent.stat().st_mode & 0o777) == (0o600, 0o700)
    assert verify()[1]["anchor"]["number"] == 1


def test_processes_checkpointing_at_once_never_write_the_same_number(ctx, people):
    env = {"R2K_CHECKPOINT_EVENTS": "1"}  # every command that writes an event checkpoints
    for round_ in range(3):
        procs = [subprocess.Popen([sys.executable, "-m", "r2k.app", "--json", "--as", "root", *args], cwd=ROOT,
                                  env={**os.environ, **env}, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for args in [["audit", "anchor"]] * 3 + [
                     ["candidates", "add", "--question", f"Q{round_}-{k}?", "--text", f"Fact {round_}-{k}.",
                      "--horn-type", "FACT"] for k in range(3)]]
        outs = [p.communicate(timeout=120) for p in procs]
        assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
        assert not [err for _, err in outs if "checkpoint" in err]  # a failed one after a commit is only logged
    with ctx.db.read() as tx:
        numbers = [r["number"] for r in tx.all("SELECT number FROM audit_checkpoints ORDER BY number")]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 3
    assert sorted(line["number"] for line in file_lines(ctx)) == numbers
    code, report = verify()
    assert code == 0, report
    assert report["checkpoints"]["checked"] == len(numbers) and report["anchor"]["events"] <= report["events"]


def test_a_line_torn_by_a_writer_that_died_does_not_stop_the_checkpoints(ctx, people, caplog):
    """Found by the claims bench: a process that ended while its checkpoint thread wrote the file's
    line left half a line. Every later checkpoint was refused ('cannot be read'), for good."""
    world(ctx, people)
    assert audit.write_checkpoint(ctx, force=True).written["number"] == 1
    path = audit.checkpoint_file(ctx.settings)
    whole = path.read_bytes()
    candidates.add(ctx, people["root"], "Q9?", "Fact 9.", "FACT")
    assert audit.write_checkpoint(ctx, force=True).written["number"] == 2
    second = path.read_bytes()[len(whole):]
    path.write_bytes(whole + second[: len(second) // 2])  # checkpoint 2's line, cut short
    assert verify()[0] == 0  # the database holds 2; the file is only behind

    candidates.add(ctx, people["root"], "Q10?", "Fact 10.", "FACT")
    outcome = audit.write_checkpoint(ctx)  # the after-commit kind, not forced: it must not refuse
    assert outcome.refused == [] and audit.write_checkpoint(ctx, force=True).written["number"] == 3
    assert "ended in a partly written line" in caplog.text
    assert [line["number"] for line in file_lines(ctx)] == [1, 3]  # the fragment is gone, every line whole
    code, report = verify()
    assert code == 0, report


def test_a_checkpoint_due_while_another_process_writes_one_is_left_to_it(ctx, people):
    import time

    import psycopg

    world(ctx, people)
    other = psycopg.connect(ctx.database_url)  # another process, in the middle of writing one
    other.execute("SELECT pg_advisory_xact_lock(%s)", (audit.LOCK_KEY,))
    try:
        started = time.monotonic()
        assert audit.write_checkpoint(ctx).skipped == "another process is writing a checkpoint"
        assert time.monotonic() - started < 1  # it did not wait for the other
    finally:
        other.rollback()
        other.close()
    assert audit.write_checkpoint(ctx, force=True).written["number"] == 1  # asked for, it waits its turn


def test_a_checkpoint_after_a_commit_never_holds_up_a_commands_connection(ctx, people, services):
    """A command has one connection. The checkpoint its commit may start (up to a second at 100,000
    chains) is written on a connection of its own, so the command's next claim does not wait for it."""
    import threading

    import psycopg

    from r2k.core import embedded
    from r2k.core.bootstrap import bootstrap

    world(ctx, people)
    command = bootstrap(services.model_copy(update={"checkpoint_events": 1}))  # one is due
    blocker = psycopg.connect(embedded.superuser_url(ctx.settings))
    try:
        assert command.checkpoint_db is not command.db
        blocker.execute("LOCK TABLE audit_heads IN ACCESS EXCLUSIVE MODE")  # the checkpoint is slow
        checkpoint = threading.Thread(target=audit.checkpoint_if_due, args=(command,), daemon=True)
        checkpoint.start()
        checkpoint.join(0.5)
        assert checkpoint.is_alive()  # inside its transaction, waiting
        claimed = []
        claimer = threading.Thread(target=lambda: claimed.append(claims.claim_next(command, people["bob"], "FACT")),
                                   daemon=True)
        claimer.start()
        claimer.join(5)
        assert claimed and claimed[0]["id"] == 3
    finally:
        blocker.rollback()
        blocker.close()
        checkpoint.join(10)
        command.close()


def test_a_checkpoint_is_written_when_an_event_waited_m_seconds_by_a_command_or_the_sweep(ctx, people):
    import time

    from r2k.core.bootstrap import bootstrap
    from r2k.core.services.operations import sweeps

    time.sleep(1.2)  # the people's events are now older than a second
    r2k_json("users", "list", "--as", "root", env={"R2K_CHECKPOINT_SECONDS": "1"})
    assert file_lines(ctx) == []  # a command that writes no event does not look
    r2k_json("candidates", "add", "--question", "Q?", "--text", "Fact.", "--horn-type", "FACT", "--as", "root",
             env={"R2K_CHECKPOINT_SECONDS": "1"})
    assert [(c["number"], c["events"]) for c in file_lines(ctx)] == [(1, 6)]

    candidates.add(ctx, people["root"], "Q2?", "Fact 2.", "FACT")
    time.sleep(1.2)
    quick = bootstrap(ctx.settings.model_copy(update={"checkpoint_seconds": 1.0}))
    try:
        sweeps.sweep_all(quick)
    finally:
        quick.close()
    assert [(c["number"], c["events"]) for c in file_lines(ctx)] == [(1, 6), (2, 7)]


def test_the_database_reports_committed_events_once_per_outermost_unit(ctx, people):
    from r2k.core.adapters.postgres import Database

    seen = []

    def fail(count):
        seen.append(count)
        raise RuntimeError("a checkpoint that fails")

    db = Database(ctx.database_url, signer=ctx.signer, on_events_committed=fail)
    try:
        with db.begin() as tx:
            events.append(tx, tx.signer, "probe", 1, "one", "root", {})
            events.append(tx, tx.signer, "probe", 2, "two", "root", {})
        assert seen == [2]  # the failure was logged; the unit's events are committed
        with db.begin() as outer:
            with db.begin() as inner:  # the same connection: a savepoint, not a commit
                events.append(inner, inner.signer, "probe", 3, "three", "root", {})
            assert seen == [2]
            events.append(outer, outer.signer, "probe", 4, "four", "root", {})
        assert seen == [2, 1]
        with db.read() as tx:
            assert tx.scalar("SELECT count(*) FROM events WHERE aggregate_type = 'probe'") == 4
    finally:
        db.close()


# ----------------------------------------------------------------------------- counting

def test_chains_are_counted_once_when_some_are_broken(ctx, people, superuser):
    world(ctx, people)
    code, report = verify()
    assert (code, report["chains"], report["events"]) == (0, 10, 13)
    # Candidate 1 breaks after its first good event, candidate 3 at its first.
    tamper(superuser,
           ("UPDATE events SET actor = 'mallory' WHERE id = %s", (chain(superuser, "candidate", 1)[1]["id"],)),
           ("UPDATE events SET actor = 'mallory' WHERE id = %s", (chain(superuser, "candidate", 3)[0]["id"],)))
    code, report = verify()
    assert (code, report["chains"], report["events"], len(report["broken"])) == (1, 10, 13, 2)
    assert audit.verify(ctx.db)["chains"] == 10
    assert r2k("audit", "verify", "--as", "root").stdout.startswith("BROKEN: 2 chain(s) of 10 damaged")


def test_anchor_prints_the_latest_checkpoint_in_words(ctx, request):
    assert error_of(r2k("audit", "anchor"))["status"] == 404  # no event yet, no checkpoint
    world(ctx, request.getfixturevalue("people"))
    text = r2k("audit", "anchor", "--as", "root").stdout.splitlines()
    assert text[0].startswith("checkpoint 1 (written now): 13 events in 10 chains, up to event ")
    again = anchor()
    assert again["number"] == 1 and set(again) == {*audit.HEADER, "format", "hash", "signature"}
    assert again["format"] == audit.FORMAT
    assert datetime.fromisoformat(again["created_at"]).tzinfo is not None
    assert r2k("audit", "anchor", "--as", "root").stdout.splitlines()[0].startswith("checkpoint 1: 13 events")


@pytest.mark.parametrize("content,words", [("{", "is not JSON"), ('{"a": 1}', "holds no checkpoint")])
def test_a_bad_anchor_file_is_a_400_naming_it(ctx, people, tmp_path, content, words):
    bad = tmp_path / "anchor.json"
    bad.write_text(content)
    result = r2k("audit", "verify", "--as", "root", "--anchor", str(bad))
    assert result.returncode == 6
    assert error_of(result)["status"] == 400 and f"the anchor file {bad} {words}" in error_of(result)["message"]


def test_a_stored_id_cannot_print_a_line_of_its_own(ctx, people, superuser):
    key_id = superuser("SELECT key_id FROM signing_keys")[0]["key_id"]
    superuser("INSERT INTO events (aggregate_type, aggregate_id, seq, type, actor, payload, created_at, prev_hash, "
              "hash, signature, key_id) VALUES ('candidate', %s, 1, 'create', 'x', '{}', now(), '', 'h', 'x', %s)",
              ("9\nok: every hash and signature verifies\x1b[2J", key_id))
    lines = verify_text().splitlines()
    assert lines[0].startswith("BROKEN: 1 chain(s) of 6 damaged")
    assert len(lines) == 2 and lines[1].startswith("  event 6 (candidate 9\\nok: every hash and signature verifies"
                                                   "\\x1b[2J seq 1): content does not match its hash")


def test_a_refused_checkpoint_logs_a_bounded_line(ctx, people, superuser, caplog, monkeypatch):
    """Thousands of broken chains (a bench's hand-made rows, a restore gone wrong) are named by
    `audit verify`; the log line the refusal writes names the first few and counts the rest."""
    for i in range(12):
        candidates.add(ctx, people["root"], f"Q{i}?", f"Fact {i}.", "FACT")
    audit.write_checkpoint(ctx, force=True)
    tamper(superuser, "DELETE FROM events WHERE aggregate_type = 'candidate' AND seq = 1")
    for _ in range(12):  # each damaged chain gains an event after the checkpoint
        claims.claim_next(ctx, people["alice"], "FACT")
    monkeypatch.setattr(ctx.settings, "checkpoint_events", 1)
    monkeypatch.setattr(audit.scheduling, "_refused_until", 0.0)
    with caplog.at_level("ERROR", logger=audit.log.name):
        outcome = audit.checkpoint_if_due(ctx)
    assert outcome is not None and len(outcome["refused"]) >= 12
    [line] = [r.getMessage() for r in caplog.records if "no audit checkpoint written" in r.getMessage()]
    assert line.count("chain candidate") == 5
    assert f"and {len(outcome['refused']) - 5} more (r2k audit verify lists them all)" in line
    assert verify()[0] == 1  # the refusal changed nothing: verify still names the damage


# ----------------------------------------------------------------------------- the prefix tree (format 2)

def reference_root(heads: dict) -> bytes:
    """Format 2's root straight from its definition (core/audit/merkle.py, PrefixTree), by recursion."""
    import hashlib

    leaves = {audit.chain_key(*c): audit.leaf_hash(*c, seq, digest) for c, (seq, digest) in heads.items()}

    def digest(prefix: str, keys: list[str], root: bool = False) -> bytes:
        if not root and not keys:
            return bytes(32)
        if not root and len(keys) == 1:
            return leaves[keys[0]]
        return hashlib.sha256(b"\x01" + b"".join(
            digest(prefix + d, [k for k in keys if k[len(prefix)] == d]) for d in "0123456789abcdef")).digest()

    return digest("", list(leaves), True)


def test_the_prefix_tree_root_is_its_heads_whatever_the_order_they_came_in():
    import random

    rng = random.Random(31)
    heads: dict = {}
    tree = audit.PrefixTree()
    assert tree.root() == reference_root({})
    for batch in range(6):  # new chains and moved ones, in batches as checkpoints take them
        for _ in range(400):
            chain_ = (rng.choice(["candidate", "answer"]), str(rng.randrange(1500)))
            seq = heads.get(chain_, (0, ""))[0] + 1
            heads[chain_] = (seq, f"{batch}-{seq}")
            tree.put(chain_, audit.chain_key(*chain_), audit.leaf_hash(*chain_, *heads[chain_]))
        assert tree.root() == reference_root(heads)
    other = audit.PrefixTree()
    for chain_ in rng.sample(sorted(heads), len(heads)):
        other.put(chain_, audit.chain_key(*chain_), audit.leaf_hash(*chain_, *heads[chain_]))
    assert other.root() == tree.root()
    assert len(heads) > 1000 and max(map(len, tree.nodes)) >= 3  # deep enough that paths split


def checkpoints_file_of(tmp_path, content: bytes):
    settings = SimpleNamespace(data_dir=str(tmp_path))
    path = audit.checkpoint_file(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return settings


@pytest.mark.parametrize("content,number", [
    (b"", None),
    (b'{"number": 1}', None),                                       # one torn line: no whole record
    (b'{"number": 1}\n', 1),
    (b'{"number": 1}\n{"number": 2}\n', 2),
    (b'{"number": 1}\n{"number": 2}\n{"numb', 2),                 # a writer died mid-line
    (b'{"number": 1}\n\n\n', 1),
    (b'{"number": 1}\n{"number": 2, "pad": "' + b"x" * 3_000_000 + b'"}\n{"nu', 2),  # lines past a chunk
    (b'{"number": 1, "pad": "' + b"x" * 3_000_000 + b'"}\n' + b"\n" * 5, 1),
], ids=["empty", "torn only", "one", "two", "torn tail", "blank lines", "long lines", "long line, blank lines"])
def test_the_files_last_record_is_its_last_whole_line(tmp_path, content, number):
    record = audit.last_file_record(checkpoints_file_of(tmp_path, content))
    assert (record or {}).get("number") == number


def test_the_files_last_record_costs_about_parsing_it_however_long_the_line(tmp_path):
    """The line after a whole tree was built holds every chain's head: 95 MiB at a million chains.
    Read back by a buffer grown chunk by chunk it took 54 s of the first checkpoint after a build at
    1M chains (bench/audit.py), about 5 s at the 300,000 here where parsing it takes 0.3 s."""
    line = json.dumps({"number": 7, "delta": [["bench_chain", f"{i:08d}", 1, "ab" * 32] for i in range(300_000)]})
    settings = checkpoints_file_of(tmp_path, b'{"number": 6}\n' + line.encode() + b"\n")
    t0 = time.perf_counter()
    json.loads(line)
    floor = time.perf_counter() - t0
    t0 = time.perf_counter()
    record = audit.last_file_record(settings)
    spent = time.perf_counter() - t0
    assert record["number"] == 7 and len(record["delta"]) == 300_000
    assert spent < 3 * floor + 0.5, (spent, floor)


def test_a_long_stretch_of_events_is_checkpointed_in_steps_that_verify(ctx, people, monkeypatch):
    """More events since the last checkpoint than one record may anchor (a log loaded in bulk: one
    delta must stay under jsonb's 256 MB) are anchored in steps of STEP_EVENTS, each signed and
    linked to the one before, without the caller stepping."""
    world(ctx, people)
    audit.wait_pending()
    with ctx.db.read() as tx:
        before = tx.scalar("SELECT coalesce(max(watermark), 0) FROM audit_checkpoints")
        top = tx.scalar("SELECT max(id) FROM events")
    monkeypatch.setattr(audit.writing, "STEP_EVENTS", 4)
    outcome = audit.write_checkpoint(ctx, force=True)
    with ctx.db.read() as tx:
        marks = [r["watermark"] for r in tx.all("SELECT watermark FROM audit_checkpoints WHERE watermark > %s "
                                                 "ORDER BY number", (before,))]
    assert top - before > 8 and len(marks) == outcome.steps >= 3
    assert marks[-1] == top == outcome.written["watermark"]
    assert all(0 < b - a <= 4 for a, b in zip([before, *marks], marks))
    assert [r["watermark"] for r in file_lines(ctx)][-len(marks):] == marks
    code, report = verify()
    assert code == 0 and report["anchor"]["watermark"] == top, report


def test_new_checkpoints_are_format_2_and_keep_only_the_nodes_of_their_tree(ctx, people):
    world(ctx, people)
    first = anchor()
    assert first["format"] == audit.FORMAT and first["buckets"] is None
    claims.claim_next(ctx, people["alice"], "FACT")
    second = anchor()
    with ctx.db.read() as tx:
        heads = {(r["aggregate_type"], r["aggregate_id"]): (r["seq"], r["hash"])
                 for r in tx.all("SELECT aggregate_type, aggregate_id, seq, hash FROM audit_heads")}
        root_row = tx.one("SELECT children FROM audit_nodes WHERE path = ''")
    assert second["root"] == reference_root(heads).hex() == audit.node_digest(bytes(root_row["children"])).hex()
    assert verify()[0] == 0


def extend(ctx, superuser, aggregate_type: str, aggregate_id: str) -> None:
    """One more well-linked, signed event on a chain, as an insider holding the host's key would add it."""
    head = chain(superuser, aggregate_type, aggregate_id)[-1]
    at = datetime.fromisoformat("2026-12-02T00:00:00+00:00")
    digest = events.event_hash(events.hashed_fields(aggregate_type, aggregate_id, head["seq"] + 1, "note", "x", {},
                                                    at, None, head["hash"]))
    superuser("INSERT INTO events (aggregate_type, aggregate_id, seq, type, actor, payload, created_at, prev_hash, "
              "hash, signature, key_id) VALUES (%s, %s, %s, 'note', 'x', '{}', %s, %s, %s, %s, %s)",
              (aggregate_type, aggregate_id, head["seq"] + 1, at, head["hash"], digest, ctx.signer.sign(digest),
               ctx.signer.key_id))


def test_a_stored_tree_node_rewritten_by_an_insider_is_refused_and_verify_never_reads_it(ctx, people, superuser):
    world(ctx, people)
    for i in range(3, 40):  # enough chains that some paths go below the root
        candidates.add(ctx, people["root"], f"Q{i}?", f"Fact {i}.", "FACT")
    anchor()
    heads = superuser("SELECT aggregate_type, aggregate_id FROM audit_heads")
    [path] = [r["path"] for r in superuser("SELECT path FROM audit_nodes WHERE path <> '' ORDER BY path LIMIT 1")]
    [below] = [(h["aggregate_type"], h["aggregate_id"]) for h in heads
               if audit.chain_key(h["aggregate_type"], h["aggregate_id"]).startswith(path)][:1]

    # A node below the root rewritten: the slot above it no longer matches it.
    superuser("UPDATE audit_nodes SET children = overlay(children placing '\\xff'::bytea from 1 for 1) "
              "WHERE path = %s", (path,))
    extend(ctx, superuser, *below)  # its chain moves: the next checkpoint reads that node
    result = r2k("audit", "anchor", "--as", "root")
    assert result.returncode == 1 and "NOT a fresh checkpoint" in result.stdout
    assert f"the stored tree node {path} in audit_nodes was changed" in result.stdout
    assert verify()[0] == 0  # the log itself is whole: verify rebuilds the tree from the checkpoints

    # The root rewritten too, to agree with the node: it no longer matches the signed root.
    superuser("UPDATE audit_nodes SET children = overlay(children placing %s from %s for 32) WHERE path = ''",
              (audit.node_digest(bytes(superuser("SELECT children FROM audit_nodes WHERE path = %s",
                                                              (path,))[0]["children"])),
               int(path[0], 16) * 32 + 1))
    result = r2k("audit", "anchor", "--as", "root")
    assert result.returncode == 1
    assert "the stored tree's root in audit_nodes does not match checkpoint 1's signed root" in result.stdout
    assert superuser("SELECT count(*) AS n FROM audit_checkpoints")[0]["n"] == 1
    assert verify()[0] == 0


def test_a_tail_cut_with_its_stored_head_moved_back_is_refused_by_the_writer(ctx, people, superuser):
    world(ctx, people)
    anchor()
    # The insider cuts candidate 1's approval and makes audit_heads agree, so the links check out.
    approve, claim = chain(superuser, "candidate", 1)[-1], chain(superuser, "candidate", 1)[-2]
    tamper(superuser, ("DELETE FROM events WHERE id = %s", (approve["id"],)))
    superuser("UPDATE audit_heads SET seq = 2, hash = %s WHERE aggregate_type = 'candidate' AND aggregate_id = '1'",
              (claim["hash"],))
    superuser("UPDATE candidates SET state = 'CLAIMED', version = version WHERE id = 1")
    digest = events.event_hash(events.hashed_fields("candidate", "1", 3, "note", "mallory", {}, approve["created_at"],
                                                    None, claim["hash"]))
    superuser("INSERT INTO events (aggregate_type, aggregate_id, seq, type, actor, payload, created_at, prev_hash, "
              "hash, signature, key_id) VALUES ('candidate', '1', 3, 'note', 'mallory', '{}', %s, %s, %s, %s, %s)",
              (approve["created_at"], claim["hash"], digest, ctx.signer.sign(digest), ctx.signer.key_id))
    result = r2k("audit", "anchor", "--as", "root")
    assert result.returncode == 1
    assert "chain candidate 1: its anchored head in audit_heads was changed" in result.stdout
    code, report = verify()
    assert code == 1 and damaged(report) == [
        ("candidate", "1", "different head: its event seq 3 is not the one checkpoint 1 anchored")]


def test_a_chain_dropped_with_its_stored_head_is_refused_by_the_writer_and_named_by_verify(ctx, people, superuser):
    world(ctx, people)
    anchor()
    tamper(superuser, "DELETE FROM events WHERE aggregate_type = 'candidate' AND aggregate_id = '3'")
    superuser("DELETE FROM audit_heads WHERE aggregate_type = 'candidate' AND aggregate_id = '3'")
    # The chain starts again from nothing: its first event links to nothing, as a new chain's does.
    digest = events.event_hash(events.hashed_fields("candidate", "3", 1, "create", "mallory", {},
                                                    datetime.fromisoformat("2026-12-01T00:00:00+00:00"), None,
                                                    events.GENESIS))
    superuser("INSERT INTO events (aggregate_type, aggregate_id, seq, type, actor, payload, created_at, prev_hash, "
              "hash, signature, key_id) VALUES ('candidate', '3', 1, 'create', 'mallory', '{}', "
              "'2026-12-01T00:00:00+00:00', %s, %s, %s, %s)",
              (events.GENESIS, digest, ctx.signer.sign(digest), ctx.signer.key_id))
    result = r2k("audit", "anchor", "--as", "root")
    assert result.returncode == 1
    assert "is missing from audit_heads" in result.stdout
    code, report = verify()
    assert code == 1 and damaged(report) == [
        ("candidate", "3", "different head: its event seq 1 is not the one checkpoint 1 anchored")]


def test_a_stored_head_added_for_a_chain_no_checkpoint_anchored_is_refused(ctx, people, superuser):
    world(ctx, people)
    anchor()
    # An insider gives candidate 4, which does not exist yet, a head: its first events would then be
    # taken to continue from it (a chain's start cut off and hidden).
    key = audit.chain_key("candidate", "4")
    superuser("INSERT INTO audit_heads (aggregate_type, aggregate_id, seq, hash, bucket, leaf, key) "
              "VALUES ('candidate', '4', 1, 'made up', 0, '\\x00', decode(%s, 'hex'))", (key,))
    candidates.add(ctx, people["root"], "Q4?", "Fact 4.", "FACT")
    result = r2k("audit", "anchor", "--as", "root")
    assert result.returncode == 1
    assert ("chain candidate 4: audit_heads holds a head for it that no checkpoint anchored" in result.stdout
            or "audit_heads holds more than one head in tree slot" in result.stdout)


# ----------------------------------------------------------------------------- format 1 logs

def write_format1(ctx) -> dict:
    """A checkpoint of every event so far as r2k wrote them before format 2: heads in
    audit.BUCKETS buckets, a bucket's digest the RFC 6962 hash of its sorted leaves, the root the
    tree hash of the bucket digests; no "format" field; stored in audit_heads and audit_buckets as
    that writer did (the key column as migration 0027 fills it), and in the data dir's file."""
    from psycopg.types.json import Jsonb

    with ctx.db.begin() as tx:
        ctx.signer.register(tx)
        last = tx.one("SELECT record FROM audit_checkpoints ORDER BY number DESC LIMIT 1")
        last = last["record"] if last else None
        watermark = tx.scalar("SELECT max(id) FROM events")
        heads = {(r["aggregate_type"], r["aggregate_id"]): (r["seq"], r["hash"]) for r in tx.all(
            "SELECT DISTINCT ON (aggregate_type, aggregate_id) aggregate_type, aggregate_id, seq, hash FROM events "
            "WHERE id <= %s ORDER BY aggregate_type, aggregate_id, seq DESC", (watermark,))}
        before = {(r["aggregate_type"], r["aggregate_id"]): (r["seq"], r["hash"])
                  for r in tx.all("SELECT aggregate_type, aggregate_id, seq, hash FROM audit_heads")}
        delta = sorted([t, i, seq, h] for (t, i), (seq, h) in heads.items() if before.get((t, i)) != (seq, h))
        leaves: dict = {}
        for (t, i), (seq, h) in heads.items():
            leaves.setdefault(audit.bucket_of(t, i), {})[(t, i)] = audit.leaf_hash(t, i, seq, h)
        digests = {b: audit.bucket_digest(ls) for b, ls in leaves.items()}
        record = {"number": (last["number"] if last else 0) + 1, "watermark": watermark,
                  "events": sum(seq for seq, _ in heads.values()), "chains": len(heads), "buckets": audit.BUCKETS,
                  "root": audit.BucketTree(digests).root, "prev_hash": last["hash"] if last else events.GENESIS,
                  "delta_digest": audit.delta_digest(delta), "created_at": datetime.now().astimezone().isoformat(),
                  "key_id": ctx.signer.key_id}
        record["hash"] = audit.record_hash(record)
        record["signature"] = ctx.signer.sign(record["hash"]).hex()
        for (t, i), (seq, h) in heads.items():
            tx.execute("INSERT INTO audit_heads (aggregate_type, aggregate_id, seq, hash, bucket, leaf, key) "
                       "VALUES (%s, %s, %s, %s, %s, %s, decode(%s, 'hex')) ON CONFLICT (aggregate_type, aggregate_id) "
                       "DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash, leaf = EXCLUDED.leaf",
                       (t, i, seq, h, audit.bucket_of(t, i), audit.leaf_hash(t, i, seq, h), audit.chain_key(t, i)))
        for b, d in digests.items():
            tx.execute("INSERT INTO audit_buckets (bucket, digest) VALUES (%s, %s) ON CONFLICT (bucket) "
                       "DO UPDATE SET digest = EXCLUDED.digest", (b, d))
        tx.execute("INSERT INTO audit_checkpoints (number, watermark, created_at, hash, record, delta) "
                   "VALUES (%s, %s, %s, %s, %s, %s)", (record["number"], watermark, record["created_at"],
                                                      record["hash"], Jsonb(record), Jsonb(delta)))
    audit.append_to_file(ctx.settings, {**record, "delta": delta})
    return record


def test_a_format_1_log_still_verifies_and_names_a_cut_tail(ctx, people, superuser):
    world(ctx, people)
    first = write_format1(ctx)
    claims.claim_next(ctx, people["alice"], "FACT")
    write_format1(ctx)
    assert "format" not in first
    code, report = verify()
    assert code == 0, report
    assert (report["anchor"]["number"], report["checkpoints"]["checked"]) == (2, 2)
    tail = chain(superuser, "candidate", 3)[-1]
    tamper(superuser, ("DELETE FROM events WHERE id = %s", (tail["id"],)))
    code, report = verify()
    assert code == 1 and damaged(report) == [
        ("candidate", "3", "shorter than anchored: it ends at seq 1, checkpoint 2 anchored seq 2")]


def test_a_log_whose_format_changes_midway_verifies(ctx, people, superuser):
    world(ctx, people)
    write_format1(ctx)
    claims.claim_next(ctx, people["alice"], "FACT")
    write_format1(ctx)
    candidates.approve(ctx, people["alice"], 2)  # moves candidate 2 and makes answer 2, record 2
    third = anchor()  # the writer builds the prefix tree from format 1's heads, once, and goes on
    assert (third["number"], third["format"]) == (3, audit.FORMAT)
    candidates.add(ctx, people["root"], "Q9?", "Fact 9.", "FACT")
    fourth = anchor()
    assert fourth["number"] == 4
    code, report = verify()
    assert code == 0, report
    assert (report["anchor"]["number"], report["checkpoints"]["checked"]) == (4, 4)
    # Damage anchored by a format 1 checkpoint is still named after the switch.
    tail = chain(superuser, "candidate", 3)[-1]
    tamper(superuser, ("DELETE FROM events WHERE id = %s", (tail["id"],)))
    assert damaged(verify()[1]) == [
        ("candidate", "3", "shorter than anchored: it ends at seq 1, checkpoint 4 anchored seq 2")]


def test_the_switch_from_format_1_refuses_heads_that_do_not_match_its_signed_root(ctx, people, superuser):
    world(ctx, people)
    write_format1(ctx)
    superuser("UPDATE audit_heads SET seq = 1 WHERE aggregate_type = 'candidate' AND aggregate_id = '1'")
    claims.claim_next(ctx, people["alice"], "FACT")
    result = r2k("audit", "anchor", "--as", "root")
    assert result.returncode == 1
    assert "the anchored heads in the database (audit_heads) do not match checkpoint 1's signed root" in result.stdout


def test_migration_0027_gives_the_heads_a_database_holds_their_key_in_the_tree(services):
    """An installation with format 1 checkpoints: the migration fills each stored head's key as the
    writer computes it (SHA-256 of type, 0x00, id), non-ASCII ids too, so the first format 2
    checkpoint finds every head at the end of its path."""
    import psycopg

    from r2k.core import migrations

    heads = [("candidate", "1"), ("user", "zoë"), ("answer", "12345678901234567890")]
    with scratch_databases(services, f"r2k_before_0027_{os.getpid()}") as (url,):
        migrations.upgrade(url, "0025")
        with psycopg.connect(url) as conn:
            for t, i in heads:
                conn.execute("INSERT INTO audit_heads (aggregate_type, aggregate_id, seq, hash, bucket, leaf) "
                             "VALUES (%s, %s, 1, 'h', %s, '\\x00')", (t, i, audit.bucket_of(t, i)))
        migrations.upgrade(url, "head")
        with psycopg.connect(url) as conn:
            keys = {(t, i): bytes(k).hex() for t, i, k in conn.execute(
                "SELECT aggregate_type, aggregate_id, key FROM audit_heads").fetchall()}
    assert keys == {(t, i): audit.chain_key(t, i) for t, i in heads}
