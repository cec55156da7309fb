"""The spine of the core: one loop for the workstation and the command line, reactions declared in
one table, one notice shape, edges enforced, an install with one top-level name."""
from __future__ import annotations

import json

from core.services import candidate_views, candidates, claims
from tests.conftest import r2k, r2k_json


def _three_facts(ctx, people):
    return [candidates.add(ctx, people["root"], f"Q{i}?", f"Fact {i}.", "FACT")["id"] for i in range(3)]


def test_decide_and_next_is_the_screens_loop_in_core(ctx, people):
    ids = _three_facts(ctx, people)
    first = claims.next_for_review(ctx, people["alice"], "FACT")
    assert first["id"] == ids[0] and first["sources"] == []  # read as a reviewer sees it
    result = claims.decide_and_next(ctx, people["alice"], first["id"], "approve", idempotency_key="k1")
    assert result["decided"]["candidate"]["state"] == "APPROVED" and result["error"] is None
    assert result["next"]["id"] == ids[1] and result["next"]["state"] == "IN_REVIEW"
    again = claims.decide_and_next(ctx, people["alice"], first["id"], "approve", idempotency_key="k1")
    assert again["decided"] == result["decided"]  # a repeated key applies nothing twice


def test_every_cli_decision_takes_next(ctx, people):
    ids = _three_facts(ctx, people)
    claims.claim_next(ctx, people["alice"], "FACT")
    out = r2k("--as", "alice", "candidates", "approve", str(ids[0]), "--next")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"Approved candidate {ids[0]}") and f"Next: Candidate {ids[1]}" in out.stdout
    rejected = r2k_json("--as", "alice", "candidates", "reject", str(ids[1]), "--reason", "no", "--next")
    assert rejected["decided"]["candidate"]["state"] == "REJECTED" and rejected["next"]["id"] == ids[2]
    released = r2k_json("--as", "alice", "candidates", "release", str(ids[2]), "--next")
    # The next is claimed before the release: an empty queue, not the released candidate again.
    assert released["released"]["state"] == "PENDING" and released["next"] is None
    assert candidate_views.get(ctx, ids[2])["state"] == "PENDING"
    last = r2k("--as", "alice", "candidates", "claim", str(ids[2]))
    assert last.returncode == 0
    out = r2k("--as", "alice", "candidates", "escalate", str(ids[2]), "--reason", "unsure", "--next")
    assert out.returncode == 0 and "The FACT queue is empty" in out.stdout


def test_release_next_claims_another_candidate_first(ctx, people):
    ids = _three_facts(ctx, people)
    claims.claim_next(ctx, people["alice"], "FACT")
    result = claims.release_and_next(ctx, people["alice"], ids[0])
    assert result["next"]["id"] == ids[1]
    assert candidate_views.get(ctx, ids[0])["state"] == "PENDING"
    refused = r2k("--json", "--as", "bob", "candidates", "release", str(ids[1]), "--next")
    assert refused.returncode == 7  # not bob's claim: refused before anything is claimed for him
    assert candidate_views.list_candidates(ctx, "IN_REVIEW", claimed_by="bob") == []
    assert json.loads(refused.stderr)["status"] == 403
