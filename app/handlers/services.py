"""services: the embedded services started, stopped and each service's status. The handlers of the
tree in app/commands/services.py."""
from __future__ import annotations

import logging

from r2k.core.services.answering import generation
from r2k.core.services.operations import admin
from r2k.core.services.search import embeddings

from ..output import Table
from ..remote.status import status_rows

log = logging.getLogger(__name__)


def services_up(cli, args):
    admin.services_up(cli.ctx)
    return services_status(cli, args)


def services_down(cli, args):
    return Table(admin.services_down(cli.ctx), ["name", "stopped"])


def services_status(cli, args):
    rows = admin.services_status(cli.ctx)
    if next(r["answers"] for r in rows if r["name"] == "postgres"):
        cli.actor  # a known user, once the database can tell; a server that is down is the operator's to see
    redis_answers = next(r["answers"] for r in rows if r["name"] == "redis")
    breaker = _breaker_row(cli) if redis_answers else None  # status never starts a service
    if breaker:
        rows.append(breaker)
    postgres_answers = next(r["answers"] for r in rows if r["name"] == "postgres")
    retrieval = _retrieval_row(cli) if postgres_answers else None
    if retrieval:
        rows.append(retrieval)

    rows += status_rows(cli.ctx.settings.data_dir)  # each running `serve ssh`, with its sessions
    return Table(rows, ["name", "mode", "listens", "answers", "credential", "detail"])


def _breaker_row(cli) -> dict | None:
    """The LLM circuit breaker's state, when Redis answers (it lives there)."""
    try:
        state = generation.breaker_status(cli.ctx)
    except Exception as exc:  # noqa: BLE001 - the other rows stand; this one is left out, and said why
        log.warning("services status: the LLM circuit breaker could not be read, so its row is left out (%s: %s)",
                    type(exc).__name__, exc)
        return None
    return {"name": "llm", "mode": "external" if cli.ctx.settings.llm_url else "embedded",
            "url": state.get("url"), "listens": state.get("url"), "answers": state["state"] != "open",
            "detail": f"circuit {state['state']}, {state['failures']} consecutive failures", "pid": None,
            "circuit": state}


def _retrieval_row(cli) -> dict | None:
    """How retrieval runs: by words and meaning, lexical only and why, or refused (a model mismatch)."""
    try:
        state = embeddings.status(cli.ctx)
    except Exception as exc:  # noqa: BLE001 - the other rows stand; this one is left out, and said why
        log.warning("services status: the vector index could not be read, so its row is left out (%s: %s)",
                    type(exc).__name__, exc)
        return None
    settings = cli.ctx.settings
    return {"name": "retrieval", "mode": "external" if settings.embeddings_url else "embedded",
            "url": settings.embeddings_url or state.get("model"), "answers": state["retrieval"] != "refused",
            "detail": state["detail"], "pid": None, "retrieval": state}
