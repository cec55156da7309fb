"""An integration's own test, written as a developer would with r2k installed: only the fixtures of
the `r2k.testing` plugin (README, "Testing your integration"). CI runs this file as it stands:

    python -m pytest -p no:cacheprovider docs/test_integration_example.py
"""
import asyncio

import pytest


@pytest.mark.asyncio
async def test_a_feed_adds_a_candidate_a_validator_approves_it_and_the_registry_has_it(
        r2k_user, r2k_api, r2k_token, r2k_cli, r2k_worker):
    r2k_user("alice", "validator", ["FACT"])
    # the feed (an admin's token) adds a candidate over HTTP
    added = await r2k_api.post("/v1/candidates", json={"question": "How many loading docks does Rotterdam have?",
                                                       "text": "The Rotterdam warehouse has 14 loading docks.",
                                                       "horn_type": "FACT"}, headers={"Idempotency-Key": "feed-1"})
    assert added.status_code == 201
    # alice claims it from the command line …
    claimed = r2k_cli("--as", "alice", "queue", "claim", "--horn-type", "FACT")
    assert claimed.code == 0 and claimed.json["id"] == added.json()["id"]
    # … and approves it over HTTP with her own token
    alice = {"Authorization": f"Bearer {r2k_token('alice')}"}
    approved = await r2k_api.post(f"/v1/candidates/{claimed.json['id']}/approve", headers=alice)
    assert approved.status_code == 200 and approved.json()["answer"]["status"] == "APPROVED"
    # an illegal move is the CLI's 422, over HTTP too
    again = await r2k_api.post(f"/v1/candidates/{claimed.json['id']}/approve", headers=alice)
    assert again.status_code == 422 and again.json()["error"] == "ValidationStateError"
    # the publication's graph sync and contradiction check run on the workers
    assert r2k_worker() >= 1
    found = r2k_cli("--as", "alice", "registry", "search", "loading docks")
    assert [a["text"] for a in found.json] == ["The Rotterdam warehouse has 14 loading docks."]


@pytest.mark.asyncio
async def test_the_workstation_opens_as_the_user_under_pilot(r2k_user, r2k_workstation):
    r2k_user("bob", "validator", ["RULE"])
    async with r2k_workstation("bob") as pilot:
        for _ in range(200):
            if pilot.app.actor is not None:
                break
            await pilot.pause()
            await asyncio.sleep(0.02)
        assert pilot.app.actor.name == "bob" and pilot.app.actor.horn_types == {"RULE"}


def test_a_command_that_fails_gives_its_exit_code_and_json_error(r2k_user, r2k_cli):
    r2k_user("carol", "validator", ["FACT"])
    refused = r2k_cli("--as", "carol", "queue", "claim", "--horn-type", "PROCEDURE")
    assert refused.code == 7 and refused.json["status"] == 403
