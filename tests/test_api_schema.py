"""The OpenAPI document against the application (docs/architecture.md, "HTTP API"): schemathesis
generates requests for every operation from /openapi.json, valid and not, and each answer must be no
500 and must match what the document says of its status, content type and body. Real services
behind it, a few entities of each kind in place; kept to a few examples an operation (under a
minute or two in CI)."""
from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from r2k.core.services import tasks
from r2k.core.services.answering import workitems
from r2k.core.services.grey_entries import grey
from r2k.core.services.people import tokens
from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates

EXAMPLES = 6  # generated requests per operation


@pytest.fixture
def world(ctx, people):
    """An entity of each kind (ids 1, 2 …) for generated ids to meet, and an admin's token."""
    for n in range(3):
        candidates.add(ctx, people["root"], f"How many docks at site {n}?", f"Site {n} has {n + 10} docks.", "FACT")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    candidates.decide(ctx, people["alice"], claimed["id"], "approve")
    grey.add(ctx, people["sam"], "Who signs off the night shift?")
    tasks.create(ctx, people["sam"], "Rotterdam docks", "# Rotterdam docks\n\nRotterdam has 14 docks.\n")
    workitems.create(ctx, people["sam"], "Who owns the backlog?")
    return {"Authorization": f"Bearer {tokens.create(ctx, people['root'])['token']}"}


@pytest.fixture
def api_schema(ctx):
    from r2k.app.api import create_app

    return schemathesis.openapi.from_asgi("/openapi.json", create_app(ctx))


# The event stream stays open for new events: it has its own tests (tests/test_api.py).
schema = schemathesis.pytest.from_fixture("api_schema").exclude(path="/v1/events")


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_generated_request_gets_a_500_or_an_answer_the_document_does_not_describe(case, world):
    case.call_and_validate(headers=world, checks=[not_a_server_error, status_code_conformance,
                                                  content_type_conformance, response_schema_conformance])
