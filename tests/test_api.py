"""The HTTP API (docs/architecture.md, "HTTP API") against real services: the seeds' paths and status
codes, the CLI's error shape, Idempotency-Key and If-Match, bearer tokens, the event stream, the
OpenAPI document, and `r2k serve api` as a server."""
from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from r2k.core.services import tasks
from r2k.core.services.answers import registry
from r2k.core.services.grey_entries import grey
from r2k.core.services.people import tokens
from r2k.core.services.queue import candidate_views
from r2k.core.services.validation import candidates
from tests.conftest import ROOT, error_of, r2k, r2k_json

ERRORS = {400: "InvalidInput", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
          422: "ValidationStateError"}


@pytest.fixture
def api(ctx):
    from r2k.app.api import create_app

    with TestClient(create_app(ctx), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def as_(ctx, people):
    """`as_("alice")`: the Authorization header of a fresh token of that user."""
    made = {}

    def header(name: str) -> dict:
        if name not in made:
            made[name] = tokens.create(ctx, people[name])["token"]
        return {"Authorization": f"Bearer {made[name]}"}

    return header


def refused(response, status: int) -> dict:
    """The response is the JSON error of `status`, in the CLI's shape."""
    body = response.json()
    assert response.status_code == status, body
    assert set(body) == {"error", "status", "message"} and body["status"] == status, body
    if status in ERRORS:
        assert body["error"] == ERRORS[status], body
    return body


def fact(ctx, people, question="How many loading docks does Rotterdam have?", text="Rotterdam has 14 loading docks."):
    return candidates.add(ctx, people["root"], question, text, "FACT")


# ----------------------------------------------------------------------------- seed 000: the validation queue

def test_get_validation_queue_claims_the_oldest_of_its_horn_type_and_is_never_cached(ctx, people, api, as_):
    first, second = fact(ctx, people), fact(ctx, people, "Opening hours?", "Rotterdam opens at 06:00.")
    rule = candidates.add(ctx, people["root"], "May forklifts enter?", "Forklifts must not enter the office.", "RULE")
    got = api.get("/v1/validation/queue", params={"horn_type": "FACT"}, headers=as_("alice"))
    assert got.status_code == 200 and got.headers["cache-control"] == "no-store"
    assert (got.json()["id"], got.json()["state"], got.json()["claimed_by"]) == (first["id"], "IN_REVIEW", "alice")
    posted = api.post("/v1/validation/queue/FACT/claim", headers=as_("bob"))
    assert posted.status_code == 200 and posted.headers["cache-control"] == "no-store"
    assert posted.json()["id"] == second["id"]  # FIFO, and never the one alice holds
    refused(api.post("/v1/validation/queue/FACT/claim", headers=as_("bob")), 404)
    # bob holds no RULE authority: a 403, and the RULE candidate is still there for alice
    assert "RULE" in refused(api.get("/v1/validation/queue?horn_type=RULE", headers=as_("bob")), 403)["message"]
    assert candidate_views.get(ctx, rule["id"])["state"] == "PENDING"
    assert api.post("/v1/validation/queue/RULE/claim", headers=as_("alice")).json()["id"] == rule["id"]
    refused(api.get("/v1/validation/queue?horn_type=NOPE", headers=as_("alice")), 400)
    refused(api.get("/v1/validation/queue", headers=as_("alice")), 400)  # horn_type is required


def test_a_decision_on_a_candidate_not_in_review_is_a_422_validation_state_error(ctx, people, api, as_):
    c = fact(ctx, people)
    before = candidate_views.get(ctx, c["id"])
    body = refused(api.post(f"/v1/candidates/{c['id']}/approve", headers=as_("alice")), 422)
    assert "PENDING" in body["message"] and "approve" in body["message"]
    assert candidate_views.get(ctx, c["id"]) == before  # nothing changed
    api.post(f"/v1/candidates/{c['id']}/claim", headers=as_("alice"))
    approved = api.post(f"/v1/candidates/{c['id']}/approve", headers=as_("alice"))
    assert approved.status_code == 200, approved.json()
    assert approved.json()["candidate"]["state"] == "APPROVED" and approved.json()["answer"]["status"] == "APPROVED"
    refused(api.post(f"/v1/candidates/{c['id']}/approve", headers=as_("alice")), 422)
    refused(api.post("/v1/candidates/999/approve", headers=as_("alice")), 404)
    refused(api.post("/v1/candidates/abc/approve", headers=as_("alice")), 400)
    refused(api.post(f"/v1/candidates/{c['id']}/approve", headers=as_("alice"), json={"colour": "red"}), 400)


def test_open_issue_candidates_cannot_be_approved_only_escalated(ctx, people, api, as_):
    c = candidates.add(ctx, people["root"], "Who owns the backlog?", "It is unclear who owns the backlog.",
                       "OPEN_ISSUE")
    assert api.post("/v1/validation/queue/OPEN_ISSUE/claim", headers=as_("vera")).json()["id"] == c["id"]
    refused(api.post(f"/v1/candidates/{c['id']}/approve", headers=as_("vera")), 422)
    refused(api.post(f"/v1/candidates/{c['id']}/escalate", headers=as_("vera"), json={}), 400)  # a reason is needed
    escalated = api.post(f"/v1/candidates/{c['id']}/escalate", headers=as_("vera"), json={"reason": "ask the PMO"})
    assert escalated.status_code == 200 and escalated.json()["work_item"]["state"] == "NEW"


def test_the_review_loop_with_next_claims_the_following_candidate(ctx, people, api, as_):
    a, b = fact(ctx, people), fact(ctx, people, "Opening hours?", "Rotterdam opens at 06:00.")
    api.post("/v1/validation/queue/FACT/claim", headers=as_("alice"))
    done = api.post(f"/v1/candidates/{a['id']}/reject", headers=as_("alice"),
                    json={"reason": "duplicate of the handbook", "next": True}).json()
    assert done["decided"]["candidate"]["state"] == "REJECTED" and done["next"]["id"] == b["id"]
    released = api.post(f"/v1/candidates/{b['id']}/release", headers=as_("alice")).json()
    assert released["state"] == "PENDING"


def test_undo_and_skip_and_resubmit_are_routes_too(ctx, people, api, as_):
    a = fact(ctx, people)
    api.post("/v1/validation/queue/FACT/claim", headers=as_("alice"))
    api.post(f"/v1/candidates/{a['id']}/approve", headers=as_("alice"))
    undone = api.post(f"/v1/candidates/{a['id']}/undo", headers=as_("alice"))
    assert undone.status_code == 200 and undone.json()["candidate"]["claimed_by"] == "alice"
    made = undone.json()["candidate"]["id"]
    skipped = api.post(f"/v1/candidates/{made}/skip", headers=as_("alice")).json()
    assert skipped["skipped"]["state"] == "PENDING"
    refused(api.post(f"/v1/candidates/{made}/resubmit", headers=as_("sam"), json={"text": "x"}), 422)


# ----------------------------------------------------------------------------- seed 000: the registry

def published(ctx, people, api, as_):
    c = fact(ctx, people)
    api.post(f"/v1/candidates/{c['id']}/claim", headers=as_("alice"))
    return api.post(f"/v1/candidates/{c['id']}/approve", headers=as_("alice")).json()["answer"]


def test_registry_supersede_retire_and_dispute(ctx, people, api, as_):
    answer = published(ctx, people, api, as_)
    refused(api.post(f"/v1/registry/answers/{answer['id']}/supersede", headers=as_("alice"), json={"text": "x"}), 400)
    assert registry.show(ctx, answer["id"])["status"] == "APPROVED"  # the 400 changed nothing
    new = api.post(f"/v1/registry/answers/{answer['id']}/supersede", headers=as_("alice"),
                   json={"text": "Rotterdam has 16 loading docks.", "reason": "two docks were added"})
    assert new.status_code == 200 and new.json()["supersedes_id"] == answer["id"]
    assert registry.show(ctx, answer["id"])["status"] == "SUPERSEDED"
    chain = api.get(f"/v1/registry/answers/{new.json()['id']}/chain", headers=as_("bob")).json()
    assert [a["id"] for a in chain] == [answer["id"], new.json()["id"]]
    refused(api.post(f"/v1/registry/answers/{answer['id']}/retire", headers=as_("alice"),
                     json={"reason": "old"}), 422)  # a superseded answer is not retired
    disputed = api.post(f"/v1/registry/answers/{new.json()['id']}/dispute", headers=as_("alice"),
                        json={"reason": "the site plan says 15"})
    assert disputed.status_code == 200 and disputed.json()["status"] == "DISPUTED"
    retired = api.post(f"/v1/registry/answers/{new.json()['id']}/retire", headers=as_("alice"),
                       json={"reason": "the site closed"})
    assert retired.json()["status"] == "RETIRED"
    assert api.get("/v1/registry/answers", params={"q": "loading docks"}, headers=as_("bob")).json() == []
    everything = api.get("/v1/registry/answers", params={"status": "ALL"}, headers=as_("bob")).json()
    assert {a["status"] for a in everything} == {"SUPERSEDED", "RETIRED"}
    refused(api.get("/v1/registry/answers", params={"limit": 0}, headers=as_("bob")), 400)


def test_if_match_is_the_expected_version_and_a_stale_one_is_a_409_that_changes_nothing(ctx, people, api, as_):
    answer = published(ctx, people, api, as_)
    body = refused(api.post(f"/v1/registry/answers/{answer['id']}/retire", headers={**as_("alice"), "If-Match": '"7"'},
                            json={"reason": "gone"}), 409)
    assert "version" in body["message"]
    assert registry.show(ctx, answer["id"])["status"] == "APPROVED"
    refused(api.post(f"/v1/registry/answers/{answer['id']}/retire", headers={**as_("alice"), "If-Match": "seven"},
                     json={"reason": "gone"}), 400)
    done = api.post(f"/v1/registry/answers/{answer['id']}/retire",
                    headers={**as_("alice"), "If-Match": f'W/"{answer["version"]}"'}, json={"reason": "gone"})
    assert done.status_code == 200 and done.json()["status"] == "RETIRED"


def test_idempotency_key_returns_the_first_result_and_another_request_under_it_is_a_409(ctx, people, api, as_):
    headers = {**as_("root"), "Idempotency-Key": "feed-42"}
    first = api.post("/v1/candidates", headers=headers, json={"question": "Docks?", "text": "There are 14 docks.",
                                                              "horn_type": "FACT"})
    again = api.post("/v1/candidates", headers=headers, json={"question": "Docks?", "text": "There are 14 docks.",
                                                              "horn_type": "FACT"})
    assert first.status_code == again.status_code == 201 and first.json() == again.json()
    assert len(candidate_views.list_candidates(ctx)) == 1
    refused(api.post("/v1/candidates", headers=headers, json={"question": "Docks?", "text": "There are 15 docks."}),
            409)
    assert len(candidate_views.list_candidates(ctx)) == 1


# ----------------------------------------------------------------------------- seed 003: the grey queue

def test_grey_queue_endpoints_and_their_transitions(ctx, people, api, as_):
    entry = api.post("/api/grey-queue", headers=as_("sam"), json={"subject": "Who signs off the night shift?"})
    assert entry.status_code == 201 and entry.json()["state"] == "Pending"
    gid = entry.json()["id"]
    nexts = api.get(f"/api/grey-queue/{gid}/transitions", headers=as_("sam")).json()
    assert {"UnderReview", "Dismissed"} <= set(nexts["next_states"])
    assert {"assign", "dismiss"} <= {t["action"] for t in nexts["actions"]}
    refused(api.post(f"/api/grey-queue/{gid}/escalate", headers=as_("sam"), json={"reason": "x"}), 422)
    refused(api.post(f"/api/grey-queue/{gid}/assign", headers=as_("sam"), json={}), 400)  # an assignee is needed
    assert grey.get(ctx, gid)["state"] == "Pending"
    assigned = api.post(f"/api/grey-queue/{gid}/assign", headers=as_("sam"), json={"assignee": "sam", "notes": "mine"})
    assert assigned.json()["state"] == "UnderReview" and assigned.json()["assignee"] == "sam"
    refused(api.post(f"/api/grey-queue/{gid}/reject", headers=as_("sam"), json={}), 400)  # reason required
    assert api.post(f"/api/grey-queue/{gid}/escalate", headers=as_("sam"),
                    json={"reason": "security must decide"}).json()["state"] == "Escalated"
    rejected = api.post(f"/api/grey-queue/{gid}/reject", headers=as_("sam"), json={"reason": "not actionable"}).json()
    assert rejected["state"] == "Rejected" and rejected["rejected_by"] == "sam"
    assert api.post(f"/api/grey-queue/{gid}/reopen", headers=as_("sam"),
                    json={"reason": "new evidence"}).json()["state"] == "Pending"
    assert api.post(f"/api/grey-queue/{gid}/dismiss", headers=as_("sam")).json()["state"] == "Dismissed"
    assert api.post(f"/api/grey-queue/{gid}/reopen", headers=as_("sam"), json={"reason": "again"}).json()["state"] == "Pending"
    api.post(f"/api/grey-queue/{gid}/assign", headers=as_("sam"), json={"assignee": "sam"})
    resolved = api.post(f"/api/grey-queue/{gid}/resolve", headers=as_("sam"), json={"resolution": "the rota says"})
    assert resolved.json()["state"] == "Resolved"
    assert api.get(f"/api/grey-queue/{gid}/transitions", headers=as_("sam")).json()["next_states"] == []
    history = api.get(f"/api/grey-queue/{gid}/history", headers=as_("sam")).json()
    assert [h["to_state"] for h in history][-3:] == ["Pending", "UnderReview", "Resolved"]
    refused(api.get("/api/grey-queue/999/transitions", headers=as_("sam")), 404)


# ----------------------------------------------------------------------------- seed 001: durable tasks

def test_task_transitions_answer_202_when_analysis_is_queued_and_the_key_is_mandatory(ctx, people, api, as_):
    made = api.post("/v1/tasks", headers=as_("sam"), json={"title": "Rotterdam docks",
                                                           "body": "# Rotterdam docks\n\nRotterdam has 14 docks.\n"})
    assert made.status_code == 201 and made.json()["state"] == "DRAFT"
    tid = made.json()["id"]
    url = f"/v1/tasks/{tid}/transitions"
    body = refused(api.post(url, headers=as_("sam"), json={"new_state": "AI_ANALYSIS"}), 400)
    assert "idempotency_key" in body["message"]
    refused(api.post(url, headers=as_("sam"), json={"new_state": "PUBLISHED", "idempotency_key": "k0"}), 422)
    refused(api.post(url, headers={**as_("sam"), "If-Match": "9"},
                     json={"new_state": "AI_ANALYSIS", "idempotency_key": "k1"}), 409)
    assert tasks.get(ctx, tid)["state"] == "DRAFT"
    # assigning reviewers in DRAFT queues nothing: a 200
    assigned = api.post(url, headers=as_("sam"), json={"new_state": "DRAFT", "idempotency_key": "k2",
                                                       "metadata": {"reviewer_ids": ["alice", "bob"]}})
    assert assigned.status_code == 200, assigned.json()
    first = api.post(url, headers=as_("sam"), json={"new_state": "AI_ANALYSIS", "idempotency_key": "k3"})
    again = api.post(url, headers=as_("sam"), json={"new_state": "AI_ANALYSIS", "idempotency_key": "k3"})
    assert first.status_code == again.status_code == 202 and first.json() == again.json()
    assert first.json()["state"] == "AI_ANALYSIS"
    assert [e["type"] for e in tasks.events(ctx, tid)].count("SubmittedForAnalysis") == 1
    refused(api.post(url, headers=as_("sam"), json={"new_state": "DEPRECATED", "idempotency_key": "k3"}), 409)
    # the key in the Idempotency-Key header does as well as in the body
    assert ctx.redis.llen("rq:queue:raw_to_knowledge_generation") >= 1  # the analysis waits for a worker


# ----------------------------------------------------------------------------- every other CLI action

def test_the_cli_actions_have_routes_that_answer_what_the_cli_prints(ctx, people, api, as_):
    c = fact(ctx, people)
    listed = api.get("/v1/candidates", params={"state": "PENDING"}, headers=as_("bob")).json()
    cli = r2k_json("--as", "bob", "candidates", "list", "--state", "PENDING")
    assert listed == cli and [r["id"] for r in listed] == [c["id"]]
    assert api.get(f"/v1/candidates/{c['id']}", headers=as_("bob")).json() == r2k_json("--as", "bob", "candidates",
                                                                                        "show", str(c["id"]))
    item = api.post("/v1/workitems", headers=as_("sam"), json={"question": "Who owns the backlog?"})
    assert item.status_code == 201 and item.json()["state"] == "NEW"
    assert api.get("/v1/workitems", headers=as_("sam")).json() == r2k_json("--as", "sam", "workitems", "list")
    queued = api.post(f"/v1/workitems/{item.json()['id']}/generate", headers=as_("sam"))
    assert queued.status_code == 202 and queued.json()["enqueued"] is True
    closed = api.post(f"/v1/workitems/{item.json()['id']}/close", headers=as_("sam"), json={"reason": "answered"})
    assert closed.json()["state"] == "CLOSED"
    assert api.get("/v1/conflicts", headers=as_("bob")).json() == []
    refused(api.get("/v1/conflicts/1", headers=as_("bob")), 404)
    mine = api.get("/v1/stats", headers=as_("alice")).json()
    assert mine["user"] == "alice"
    team = api.get("/v1/stats", headers=as_("root")).json()
    assert "validators" in team
    refused(api.get("/v1/stats", params={"user": "bob"}, headers=as_("alice")), 403)
    stats = api.get("/v1/validation/queue-stats", headers=as_("bob")).json()
    assert next(r for r in stats if r["horn_type"] == "FACT")["pending"] == 1
    assert api.get("/v1/me", headers=as_("vera")).json() == {"name": "vera", "role": "validator",
                                                             "horn_types": ["CONSTRAINT", "OPEN_ISSUE", "PROCEDURE"]}


def test_unknown_routes_and_methods_answer_in_the_error_shape(api, as_):
    refused(api.get("/v1/nothing-here", headers=as_("bob")), 404)
    assert refused(api.delete("/v1/candidates/1", headers=as_("bob")), 405)["error"] == "MethodNotAllowed"


# ----------------------------------------------------------------------------- tokens

def test_no_token_a_wrong_one_a_revoked_one_and_the_web_cookie_are_each_a_401_logged_without_the_token(
        ctx, people, api, caplog):
    made = tokens.create(ctx, people["alice"], name="feeder")
    token = made["token"]
    assert made["prefix"] == token[:12] and token.startswith("r2k_")
    with ctx.db.read() as tx:
        stored = tx.one("SELECT * FROM api_tokens WHERE id = %s", (made["id"],))
    assert token not in json.dumps(stored, default=str) and stored["token_hash"] == tokens.digest(token)
    caplog.set_level(logging.WARNING, logger="r2k.core.services.people.tokens")
    refused(api.get("/v1/me"), 401)
    refused(api.get("/v1/me", headers={"Authorization": f"Basic {token}"}), 401)
    refused(api.get("/v1/me", headers={"Authorization": f"Bearer {token}x"}), 401)
    # the web front end's cookie (and its own secret) is no credential here
    from r2k.app.remote import web

    secret = web.token(ctx.settings.data_dir)
    for credential in (token, secret):
        refused(api.get("/v1/me", headers={"Cookie": f"{web.COOKIE}={credential}"}), 401)
    assert api.get("/v1/me", headers={"Authorization": f"Bearer {token}"}).json()["name"] == "alice"
    tokens.revoke(ctx, people["alice"], made["id"])
    assert "revoked" in refused(api.get("/v1/me", headers={"Authorization": f"Bearer {token}"}), 401)["message"]
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 6 and all("401" in line for line in logged)
    assert not any(token in line or token[4:] in line for line in logged)


def test_the_token_is_checked_before_the_headers_and_a_bad_if_match_changes_nothing(ctx, people, api, as_):
    """A wrong token is the 401 whatever else the request holds (a bad If-Match, a bad body); with
    a good token a bad If-Match is the 400 and the claim still holds, undecided."""
    fact(ctx, people)
    claimed = api.post("/v1/validation/queue/FACT/claim", headers=as_("alice")).json()
    url = f"/v1/candidates/{claimed['id']}/approve"
    wrong = {"Authorization": "Bearer r2k_" + "x" * 43}
    refused(api.post(url, headers={**wrong, "If-Match": "seven"}), 401)
    refused(api.post(url, headers={**wrong, "If-Match": "seven"}, json={"nope": 1}), 401)
    refused(api.post(url, headers={**wrong, "Idempotency-Key": "k1"}), 401)
    refused(api.post(url, headers={**as_("alice"), "If-Match": "seven"}), 400)
    refused(api.post(url, headers={**as_("alice"), "If-Match": str(claimed["version"] + 5)}), 409)
    assert candidate_views.get(ctx, claimed["id"])["state"] == "IN_REVIEW"
    assert candidate_views.get(ctx, claimed["id"])["claimed_by"] == "alice"
    done = api.post(url, headers={**as_("alice"), "If-Match": f'"{claimed["version"]}"', "Idempotency-Key": "k1"})
    assert done.status_code == 200 and done.json()["candidate"]["state"] == "APPROVED"
    again = api.post(url, headers={**as_("alice"), "If-Match": f'"{claimed["version"]}"', "Idempotency-Key": "k1"})
    assert again.json() == done.json()  # the key's repeat: the first result


def test_each_token_acts_as_its_user_with_that_users_authority(ctx, people, api, as_):
    proc = candidates.add(ctx, people["root"], "How to open the gate?", "Press the green button, then wait.",
                          "PROCEDURE")
    refused(api.post("/v1/validation/queue/PROCEDURE/claim", headers=as_("alice")), 403)
    assert api.post("/v1/validation/queue/PROCEDURE/claim", headers=as_("vera")).json()["claimed_by"] == "vera"
    # alice's token cannot decide what vera claimed
    refused(api.post(f"/v1/candidates/{proc['id']}/approve", headers=as_("alice")), 403)
    assert candidate_views.get(ctx, proc["id"])["claimed_by"] == "vera"
    refused(api.post("/api/grey-queue", headers=as_("alice"), json={"subject": "x", "assignee": "alice"}), 403)
    refused(api.post("/v1/validation/sweep", headers=as_("bob")), 403)


def test_users_token_create_list_revoke_by_an_admin_or_the_user_themselves(ctx, people, api):
    mine = r2k_json("--as", "alice", "users", "token", "create", "--name", "laptop")
    assert mine["user_name"] == "alice" and mine["token"].startswith("r2k_")
    denied = r2k("--json", "--as", "alice", "users", "token", "create", "--user", "bob")
    assert denied.returncode == 7 and error_of(denied)["status"] == 403
    for_bob = r2k_json("--as", "root", "users", "token", "create", "--user", "bob")
    listed = r2k_json("--as", "alice", "users", "token", "list")
    assert [t["id"] for t in listed] == [mine["id"]] and "token" not in listed[0] and "token_hash" not in listed[0]
    assert r2k("--json", "--as", "alice", "users", "token", "list", "--user", "bob").returncode == 7
    assert {t["user_name"] for t in r2k_json("--as", "root", "users", "token", "list", "--all")} == {"alice", "bob"}
    gone = r2k("--json", "--as", "alice", "users", "token", "revoke", str(for_bob["id"]))
    assert gone.returncode == 3  # not hers: as if it did not exist
    assert api.get("/v1/me", headers={"Authorization": f"Bearer {for_bob['token']}"}).json()["name"] == "bob"
    revoked = r2k_json("--as", "root", "users", "token", "revoke", str(for_bob["id"]))
    assert revoked["state"] == "REVOKED" and revoked["revoked_by"] == "root"
    refused(api.get("/v1/me", headers={"Authorization": f"Bearer {for_bob['token']}"}), 401)
    again = r2k("--json", "--as", "root", "users", "token", "revoke", str(for_bob["id"]))
    assert again.returncode == 4
    text = r2k("--as", "alice", "users", "token", "create").stdout
    assert "shown this once" in text
    assert r2k("--json", "--as", "nobody", "users", "token", "create").returncode == 7


# ----------------------------------------------------------------------------- the event stream

def test_the_event_stream_is_server_sent_events_resumable_with_last_event_id(ctx, people, api, as_):
    headers = as_("bob")  # its own event (the token) comes first
    a, b = fact(ctx, people), fact(ctx, people, "Opening hours?", "Rotterdam opens at 06:00.")
    whole = api.get("/v1/events", params={"after": 0, "follow": "false"}, headers=headers)
    assert whole.status_code == 200 and whole.headers["content-type"].startswith("text/event-stream")
    events = [block for block in whole.text.strip().split("\n\n")]
    ids = [int(block.split("\n")[0].removeprefix("id: ")) for block in events]
    assert ids == sorted(ids) and len(ids) >= 8  # five users, a token, two candidates
    last_two = events[-2:]
    assert all("event: candidate.extract" in e or "event: candidate.create" in e for e in last_two), last_two
    assert json.loads(last_two[-1].split("data: ", 1)[1])["aggregate_id"] == str(b["id"])
    resumed = api.get("/v1/events", params={"follow": "false"}, headers={**headers, "Last-Event-ID": str(ids[-2])})
    assert [int(x.split("\n")[0][4:]) for x in resumed.text.strip().split("\n\n")] == [ids[-1]]
    candidates.add(ctx, people["root"], "Night shift?", "The night shift starts at 22:00.", "FACT")
    later = api.get("/v1/events", params={"follow": "false", "aggregate": "candidate"},
                    headers={**headers, "Last-Event-ID": str(ids[-1])})
    assert later.text.count("id: ") == 1 and '"aggregate_type": "candidate"' in later.text
    refused(api.get("/v1/events", headers={**headers, "Last-Event-ID": "soon"}), 400)
    assert a["id"] != b["id"]


# ----------------------------------------------------------------------------- the OpenAPI document

def test_the_openapi_document_is_served_and_docs_holds_the_same(api):
    served = api.get("/openapi.json").json()
    kept = json.loads((ROOT / "docs" / "openapi.json").read_text())
    assert served == kept, "docs/openapi.json is stale: r2k serve api --openapi > docs/openapi.json"
    paths = served["paths"]
    for path in ("/v1/validation/queue", "/v1/validation/queue/{horn_type}/claim",
                 "/v1/registry/answers/{id}/supersede", "/v1/registry/answers/{id}/retire",
                 "/v1/registry/answers/{id}/dispute", "/api/grey-queue/{id}/transitions",
                 "/v1/tasks/{id}/transitions", "/v1/events", *(f"/api/grey-queue/{{id}}/{a}" for a in
                 ("assign", "escalate", "reject", "reopen", "resolve", "dismiss")),
                 *(f"/v1/candidates/{{id}}/{a}" for a in ("approve", "revise", "reject", "escalate", "release",
                                                          "skip", "undo"))):
        assert path in paths, path
    assert {"400", "401", "403", "404", "409", "422", "503"} <= set(paths["/v1/candidates/{id}/approve"]["post"]["responses"])


# ----------------------------------------------------------------------------- r2k serve api

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_api_listens_on_127_0_0_1_with_n_workers_and_answers_as_the_tokens_user(ctx, people):
    import httpx

    token = tokens.create(ctx, people["bob"])["token"]
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "r2k.app", "serve", "api", "--port", str(port), "--workers", "2"],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy())
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                me = httpx.get(f"http://127.0.0.1:{port}/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=5)
                break
            except httpx.HTTPError:
                assert server.poll() is None, server.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline, "the API did not start"
                time.sleep(0.3)
        assert me.status_code == 200 and me.json()["name"] == "bob"
        assert httpx.get(f"http://127.0.0.1:{port}/v1/me", timeout=5).status_code == 401
        children = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True).stdout.split()
        assert len(children) >= 2  # the workers (and uvicorn's own helper processes)
        listening = Path(f"/proc/{server.pid}/net/tcp").read_text()
        assert f"0100007F:{port:04X}" in listening  # 127.0.0.1 only
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_serve_api_refuses_a_bad_port_or_workers_before_listening():
    for args in (["--port", "70000"], ["--workers", "0"]):
        result = r2k("--json", "serve", "api", *args)
        assert result.returncode == 6 and error_of(result)["status"] == 400


def test_a_database_that_does_not_answer_is_a_503_naming_it_never_a_500(services, tmp_path):
    from r2k.app.api import create_app
    from r2k.core.bootstrap import bootstrap

    down = bootstrap(services.model_copy(update={"database_url": "postgresql://r2k@127.0.0.1:1/r2k",
                                               "connect_timeout": 1.0}))
    with TestClient(create_app(down), raise_server_exceptions=False) as client:
        body = refused(client.get("/v1/me", headers={"Authorization": "Bearer r2k_whatever"}), 503)
        assert body["error"] == "ServiceUnavailable" and "PostgreSQL" in body["message"]
        body = refused(client.post("/v1/validation/queue/FACT/claim", headers={"Authorization": "Bearer r2k_x"}), 503)
    down.close()


# ----------------------------------------------------------------------------- overlap (docs/architecture.md, "Overlap")

def test_overlap_through_http_config_reviews_adjudication_and_agreement(ctx, people, api, as_):
    config = "/v1/validation/queues/FACT/config"
    refused(api.put(config, headers=as_("alice"), json={"reviews": 2}), 403)  # an admin's
    refused(api.put(config, headers=as_("root"), json={"reviews": 0}), 400)
    refused(api.put(config, headers=as_("root"), json={"reviews": "two"}), 400)
    assert api.get(config, headers=as_("alice")).json()["reviews"] == 1  # nothing changed
    assert api.put(config, headers=as_("root"), json={"reviews": 2}).json()["reviews"] == 2
    assert api.get(config, headers=as_("alice")).json()["reviews"] == 2

    cid = fact(ctx, people)["id"]
    for who, action, body in (("alice", "approve", {}), ("bob", "reject", {"reason": "not 14 any more"})):
        claimed = api.post("/v1/validation/queue/FACT/claim", headers=as_(who))
        assert claimed.status_code == 200 and claimed.json()["id"] == cid
        assert api.post(f"/v1/candidates/{cid}/{action}", headers=as_(who), json=body).status_code == 200
    assert candidate_views.get(ctx, cid)["state"] == "ADJUDICATION"

    refused(api.get("/v1/adjudications", headers=as_("alice")), 403)  # a specialist's
    listed = api.get("/v1/adjudications", headers=as_("sam")).json()
    assert [row["id"] for row in listed] == [cid]
    shown = api.get(f"/v1/candidates/{cid}/adjudication", headers=as_("sam")).json()
    assert [(r["actor"], r["action"]) for r in shown["reviews"]] == [("alice", "approve"), ("bob", "reject")]
    refused(api.post(f"/v1/candidates/{cid}/adjudicate", headers=as_("sam"), json={}), 400)  # choose or action
    alices = shown["reviews"][0]["id"]
    done = api.post(f"/v1/candidates/{cid}/adjudicate", headers=as_("sam"), json={"choose": alices})
    assert done.status_code == 200 and done.json()["candidate"]["state"] == "APPROVED"
    refused(api.post(f"/v1/candidates/{cid}/adjudicate", headers=as_("sam"), json={"choose": alices}), 422)

    refused(api.get("/v1/stats/agreement", headers=as_("alice")), 403)
    figures = api.get("/v1/stats/agreement", headers=as_("root"), params={"horn": "FACT"}).json()
    assert figures["horn_type"] == "FACT"
    assert [(q["horn_type"], q["units"], q["percent"]) for q in figures["queues"]] == [("FACT", 1, 0.0)]
    assert [(p["pair"], p["units"], p["percent"]) for p in figures["pairs"]] == [(["alice", "bob"], 1, 0.0)]


def test_guidelines_and_comments_through_http(ctx, people, api, as_):
    guides = "/v1/validation/queues/FACT/guidelines"
    assert api.get(guides, headers=as_("alice")).json() is None  # none yet
    refused(api.put(guides, headers=as_("alice"), json={"body": "# Check the dock"}), 403)
    made = api.put(guides, headers=as_("root"), json={"body": "# Check the dock\n\nCount them."})
    assert made.status_code == 201 and made.json()["number"] == 1
    refused(api.put(guides, headers=as_("root"), json={"body": "# Check the dock\n\nCount them."}), 400)  # the same
    assert api.get(guides, headers=as_("alice")).json()["body"].startswith("# Check the dock")
    refused(api.get(guides, headers=as_("alice"), params={"number": 2 ** 40}), 400)
    refused(api.get(guides, headers=as_("alice"), params={"number": 2}), 404)

    cid = fact(ctx, people)["id"]
    added = api.post("/v1/comments", headers=as_("alice"), json={"entity": "candidate", "id": str(cid),
                                                                 "text": "Ask @bob about dock 14"})
    assert added.status_code == 201 and added.json()["mentions"] == ["bob"]
    refused(api.post("/v1/comments", headers=as_("alice"), json={"entity": "candidate", "id": "999999",
                                                                 "text": "x"}), 404)
    refused(api.post("/v1/comments", headers=as_("alice"), json={"entity": "planet", "id": "1", "text": "x"}), 400)
    listed = api.get("/v1/comments", headers=as_("bob"), params={"entity": "candidate", "id": str(cid)}).json()
    assert [(c["author"], c["body"]) for c in listed] == [("alice", "Ask @bob about dock 14")]
    assert [c["id"] for c in api.get("/v1/comments", headers=as_("bob"), params={"mentioning": "bob"}).json()] == \
        [added.json()["id"]]
