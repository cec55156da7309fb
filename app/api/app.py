"""The HTTP API's application (docs/architecture.md, "HTTP API").

Each route is a thin caller: it names the acting user from the request's bearer token
(core/services/people/tokens.py), reads its path, query, body and the `Idempotency-Key` and `If-Match`
headers (what `--idempotency-key` and `--expected-version` are to the CLI), calls the one service
function the CLI calls for the same action, and returns its result as JSON. Errors are the CLI's
`{"error", "status", "message"}`, with the statuses the CLI maps to exit codes, plus 401.

The application is stateless: each process keeps one Context (its connection pools), made in that
process on the first request, so `--workers N` forks before any socket is opened.
"""
import asyncio
import functools
import logging
import os
import queue
import threading
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Callable, Literal

from fastapi import Body, Depends, FastAPI, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from r2k.app.safe import dumps
from r2k.core.bootstrap import bootstrap
from r2k.core.domain import Actor, jsonable, limits
from r2k.core.errors import InvalidInput, R2KError
from r2k.core.services import tasks
from r2k.core.services.answering import generation, workitems
from r2k.core.services.answers import export as exports, registry
from r2k.core.services.contradictions import conflicts
from r2k.core.services.grey_entries import grey
from r2k.core.services.operations import agreement, event_stream, stats, sweeps
from r2k.core.services.people import tokens, users
from r2k.core.services.queue import candidate_views, claims, queue_index, skip, undo
from r2k.core.services.session import service_error
from r2k.core.services.validation import candidates, comments, guidelines, overlap

log = logging.getLogger(__name__)
STALLED_EXPORT = 60  # seconds an export waits for a client that reads nothing

POOL = 8  # connections per process: the threads FastAPI runs sync routes on share them
NO_STORE = {"Cache-Control": "no-store"}  # a claim is never served from a cache


class InternalError(R2KError):
    status = 500
    error = "InternalError"


class ErrorBody(BaseModel):
    """Every refusal: the CLI's JSON error (docs/architecture.md, "Command line")."""

    error: str
    status: int
    message: str


ERRORS = {status: {"model": ErrorBody, "description": words} for status, words in {
    400: "invalid input (schema, missing field, a value out of range)",
    401: "no bearer token, or an unknown or revoked one",
    403: "the token's user has no authority for this",
    404: "no such entity, or the queue is empty",
    409: "stale version (If-Match), idempotency key reused for another request, or a lost claim race",
    422: "ValidationStateError: the entity's state does not allow this move",
    503: "a service (PostgreSQL, Redis, the graph) does not answer",
}.items()}


class Reply:
    """A result with a status other than the route's default (202: work was queued)."""

    def __init__(self, data: Any, status: int):
        self.data, self.status = data, status


# ----------------------------------------------------------------------------- the process's services

class Services:
    """The Context this process's routes share: given (tests, the pytest plugin), or made here once per
    process, after any fork, on first use."""

    def __init__(self, ctx=None):
        self._given = ctx
        self._made = None
        self._pid = None
        self._lock = threading.Lock()

    def __call__(self):
        if self._given is not None:
            return self._given
        if self._made is None or self._pid != os.getpid():
            with self._lock:
                if self._made is None or self._pid != os.getpid():
                    self._made, self._pid = bootstrap(pool_size=POOL), os.getpid()
        return self._made

    def close(self) -> None:
        if self._made is not None:
            self._made.close()
            self._made = None


def _translated(exc: Exception, ctx) -> R2KError:
    """Any failure as an R2KError: a driver's connection failure is the 503 naming the service
    (as the CLI says it); anything else an InternalError, logged with its traceback."""
    translated = service_error(exc, ctx)
    if translated is not None:
        return translated
    log.exception("API request failed")
    return InternalError(f"{type(exc).__name__}: the server logged the details")


def create_app(ctx=None) -> FastAPI:
    """The application; on `ctx` when given (tests, the pytest plugin), else on a Context of its own."""
    services = Services(ctx)
    app = FastAPI(title="r2k", version=_version(), responses=ERRORS,
                  description="The HTTP API of r2k (docs/architecture.md, \"HTTP API\"): every route calls the "
                              "service the CLI calls for the same action. Send `Authorization: Bearer TOKEN` "
                              "(`r2k users token create`).")
    app.state.services = services
    _errors(app)
    _routes(app, services)
    return app


def _version() -> str:
    try:
        return version("r2k")
    except PackageNotFoundError:
        return "0"


def _errors(app: FastAPI) -> None:
    @app.exception_handler(R2KError)
    async def r2k_error(request: Request, exc: R2KError):
        return JSONResponse(exc.as_dict(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        # The request's shape is wrong: a 400 naming each field, as the CLI's usage errors are.
        said = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors()[:5])
        return JSONResponse(InvalidInput(said or "invalid request").as_dict(), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        names = {404: "NotFound", 405: "MethodNotAllowed"}
        message = {404: f"no route {request.url.path}", 405: f"{request.method} is not allowed on {request.url.path}"}
        body = {"error": names.get(exc.status_code, "Error"), "status": exc.status_code,
                "message": message.get(exc.status_code, str(exc.detail))}
        return JSONResponse(body, status_code=exc.status_code, headers=getattr(exc, "headers", None))


# ----------------------------------------------------------------------------- request parts

BEARER = HTTPBearer(auto_error=False, description="an API token: `r2k users token create`")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _if_match(value: str | None) -> int | None:
    """`If-Match: 3`, `"3"` or `W/"3"`: the version the client read, as `--expected-version`."""
    if value is None:
        return None
    shown = value.strip()
    if shown.startswith("W/"):
        shown = shown[2:]
    return limits.number(shown.strip('"'), "If-Match (the version read)", limits.VERSION)


def _routes(app: FastAPI, services: Services) -> None:  # noqa: C901 - one table of routes, read top to bottom
    def acting(request: Request, _=Depends(BEARER)) -> Actor:
        ctx = services()
        where = request.client.host if request.client else ""
        try:
            return tokens.authenticate(ctx, request.headers.get("authorization"), where)
        except R2KError:
            raise
        except Exception as exc:  # noqa: BLE001 - the database away: a 503, never a 500
            raise _translated(exc, ctx) from None

    # The headers' dependencies read no service, so they run on the event loop (`async`): FastAPI
    # hands a plain function to its thread pool, one hand-over per dependency per request. They
    # come after `acting` in every route, so a bad token is still the 401 before a bad If-Match's 400.
    async def opts(idempotency_key: str | None = Header(None, alias="Idempotency-Key",
                                                         description="a repeat within 24 h returns the first result"),
                   if_match: str | None = Header(None, alias="If-Match",
                                                 description="the version read: 409 unless the entity is still at it")
                   ) -> dict:
        return {"idempotency_key": idempotency_key, "expected_version": _if_match(if_match)}

    async def key(idempotency_key: str | None = Header(None, alias="Idempotency-Key",
                                                        description="a repeat within 24 h returns the first result")
                  ) -> dict:
        return {"idempotency_key": idempotency_key}

    def route(method: str, path: str, *, status: int = 200, headers: dict | None = None, summary: str = "",
              tags: tuple[str, ...] = ()) -> Callable:
        """A route whose handler returns a service's result (or a Reply); any failure becomes its JSON error."""
        def wrap(handler: Callable) -> Callable:
            @functools.wraps(handler)
            def call(*args, **kwargs):
                try:
                    result = handler(*args, **kwargs)
                except R2KError:
                    raise
                except Exception as exc:  # noqa: BLE001 - translated: 503 for an outage, else 500 and logged
                    raise _translated(exc, services()) from None
                code = status
                if isinstance(result, Reply):
                    result, code = result.data, result.status
                return JSONResponse(jsonable(result), status_code=code, headers=headers)

            app.add_api_route(path, call, methods=[method], status_code=status, summary=summary or None,
                              tags=list(tags), response_model=None,
                              description=(handler.__doc__ or "").strip() or None)
            return call

        return wrap

    Id = Path(..., description="the entity's id", max_length=40)
    Me = Depends(acting)
    Opts = Depends(opts)
    Key = Depends(key)

    # ------------------------------------------------------------------ validation queue (seed 000)
    @route("GET", "/v1/validation/queue", headers=NO_STORE, tags=("validation",),
           summary="claim the oldest candidate of a Horn type")
    def queue_get(horn_type: str = Query(..., max_length=40), actor: Actor = Me, o: dict = Key):
        """Pops the oldest candidate of the partition and claims it for the token's user (as `r2k queue
        claim`); 404 when the partition is empty. Prefer the POST form."""
        return claims.claim_next(services(), actor, horn_type, **o)

    @route("POST", "/v1/validation/queue/{horn_type}/claim", headers=NO_STORE, tags=("validation",),
           summary="claim the oldest candidate of a Horn type")
    def queue_claim(horn_type: str = Path(..., max_length=40), actor: Actor = Me, o: dict = Key):
        """As `r2k queue claim --horn-type H`."""
        return claims.claim_next(services(), actor, horn_type, **o)

    @route("GET", "/v1/validation/queue-stats", tags=("validation",), summary="per Horn type: pending, in review")
    def queue_stats(actor: Actor = Me):
        return candidate_views.queue_stats(services())

    @route("POST", "/v1/validation/reconcile", tags=("validation",),
           summary="rebuild every partition from PostgreSQL")
    def queue_reconcile(actor: Actor = Me):
        ctx = services()
        return {"partitions": queue_index.reconcile(ctx),
                "work_items": generation.recover(ctx, stale_after=generation.STALE_GENERATING)}

    @route("POST", "/v1/validation/sweep", tags=("validation",), summary="the whole sweep, now")
    def queue_sweep(actor: Actor = Me):
        return sweeps.sweep_now(services(), actor)

    # ------------------------------------------------------------------ candidates
    class CandidateIn(Strict):
        question: str
        text: str
        horn_type: str | None = None
        source_ref: str | None = None

    @route("POST", "/v1/candidates", status=201, tags=("candidates",), summary="add one candidate by hand")
    def cand_add(body: CandidateIn, actor: Actor = Me, o: dict = Key):
        return candidates.add(services(), actor, body.question, body.text, body.horn_type, body.source_ref, **o)

    @route("GET", "/v1/candidates", tags=("candidates",), summary="list candidates")
    def cand_list(state: str | None = Query(None, max_length=40), horn_type: str | None = Query(None, max_length=40),
                  claimed_by: str | None = Query(None, max_length=200), limit: int = 100, offset: int = 0,
                  actor: Actor = Me):
        return candidate_views.list_candidates(services(), state, horn_type, limit=limit, offset=offset,
                                               claimed_by=claimed_by)

    @route("GET", "/v1/candidates/{id}", tags=("candidates",), summary="a candidate with its sources and history")
    def cand_show(id: str = Id, actor: Actor = Me):  # noqa: A002 - the path's name
        return candidate_views.show(services(), id)

    @route("GET", "/v1/candidates/{id}/history", tags=("candidates",), summary="every transition of a candidate")
    def cand_history(id: str = Id, actor: Actor = Me):  # noqa: A002
        return candidate_views.history(services(), id)

    @route("POST", "/v1/candidates/{id}/claim", headers=NO_STORE, tags=("candidates",),
           summary="claim one named candidate")
    def cand_claim(id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        return claims.claim(services(), actor, id, **o)

    class Decision(Strict):
        text: str | None = Field(None, description="revise: the revised answer")
        reason: str | None = Field(None, description="reject, escalate: why")
        next: bool = Field(False, description="then claim and return the next candidate of the same queue")

    def decide(action: str, id: str, body: Decision, actor: Actor, o: dict):  # noqa: A002
        fields = {"text": body.text, "reason": body.reason, **o}
        if body.next:
            return claims.decide_and_next(services(), actor, id, action, **fields)
        return candidates.decide(services(), actor, id, action, **fields)

    for action in ("approve", "revise", "reject", "escalate"):
        def made(action=action):
            def decided(id: str = Id, body: Decision = Body(default_factory=Decision), actor: Actor = Me,  # noqa: A002
                        o: dict = Opts):
                return decide(action, id, body, actor, o)

            decided.__name__ = f"cand_{action}"
            decided.__doc__ = f"As `r2k candidates {action}`: the validator's decision on a candidate they claimed."
            route("POST", f"/v1/candidates/{{id}}/{action}", tags=("candidates",),
                  summary=f"{action} a claimed candidate")(decided)
        made()

    class Next(Strict):
        next: bool = Field(False, description="then claim and return the next candidate of the same queue")

    @route("POST", "/v1/candidates/{id}/release", tags=("candidates",), summary="give a claim back")
    def cand_release(id: str = Id, body: Next = Body(default_factory=Next), actor: Actor = Me,  # noqa: A002
                     o: dict = Opts):
        if body.next:
            return claims.release_and_next(services(), actor, id, **o)
        return candidates.release(services(), actor, id, **o)

    @route("POST", "/v1/candidates/{id}/skip", tags=("candidates",), summary="pass a claimed candidate by")
    def cand_skip(id: str = Id, body: Next = Body(default_factory=Next), actor: Actor = Me,  # noqa: A002
                  o: dict = Opts):
        return skip.skip(services(), actor, id, then_next=body.next, **o)

    @route("POST", "/v1/candidates/{id}/undo", tags=("candidates",), summary="undo your last decision")
    def cand_undo(id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        return undo.undo(services(), actor, id, **o)

    class Resubmit(Strict):
        text: str
        horn_type: str | None = None

    @route("POST", "/v1/candidates/{id}/resubmit", tags=("candidates",),
           summary="an ESCALATED candidate back in its queue with reworked text")
    def cand_resubmit(body: Resubmit, id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        return candidates.resubmit(services(), actor, id, body.text, horn_type=body.horn_type, **o)

    # ------------------------------------------------------------------ overlap (docs/architecture.md, "Overlap")
    class Reviews(Strict):
        reviews: int = Field(..., description="independent, blind reviews each candidate of the queue needs (1-9)")

    @route("GET", "/v1/validation/queues/{horn_type}/config", tags=("validation",),
           summary="the reviews a queue requires per candidate")
    def queue_config_get(horn_type: str = Path(..., max_length=40), actor: Actor = Me):
        """As `r2k queue config HORN`."""
        return overlap.settings(services(), horn_type)

    @route("PUT", "/v1/validation/queues/{horn_type}/config", tags=("validation",),
           summary="set the reviews a queue requires (an admin)")
    def queue_config_set(body: Reviews, horn_type: str = Path(..., max_length=40), actor: Actor = Me,
                         o: dict = Key):
        """As `r2k queue config HORN --reviews K`."""
        return overlap.configure(services(), actor, horn_type, body.reviews, **o)

    @route("GET", "/v1/adjudications", tags=("candidates",),
           summary="candidates whose reviewers disagree (a specialist or an admin)")
    def adjudications(limit: int = 100, actor: Actor = Me):
        """As `r2k candidates adjudications`."""
        return overlap.list_adjudications(services(), actor, limit=limit)

    @route("GET", "/v1/candidates/{id}/adjudication", tags=("candidates",),
           summary="a candidate awaiting adjudication with every review side by side")
    def cand_adjudication(id: str = Id, actor: Actor = Me):  # noqa: A002
        """As `r2k candidates adjudication ID`."""
        return overlap.adjudication(services(), actor, id)

    class Adjudication(Strict):
        choose: int | None = Field(None, description="a review's id: its decision decides the candidate")
        action: str | None = Field(None, description="or one's own decision: approve, revise or reject", max_length=20)
        text: str | None = Field(None, description="revise: the answer")
        reason: str | None = Field(None, description="reject: why")

    @route("POST", "/v1/candidates/{id}/adjudicate", tags=("candidates",),
           summary="decide a candidate whose reviewers disagree (a specialist or an admin)")
    def cand_adjudicate(body: Adjudication, id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        """As `r2k candidates adjudicate ID`: `choose` one review, or give `action` (with `text` or `reason`)."""
        return overlap.adjudicate(services(), actor, id, choose=body.choose, action=body.action, text=body.text,
                                  reason=body.reason, **o)

    # ------------------------------------------------------------------ registry (seed 000)
    @route("GET", "/v1/registry/answers", tags=("registry",), summary="search the registry")
    def reg_search(q: str = Query("", max_length=2000), status: str | None = Query(None, max_length=200),
                   limit: int = 20, offset: int = 0, explain: bool = False, actor: Actor = Me):
        return registry.search(services(), q, status, limit=limit, offset=offset, explain=explain)

    @route("GET", "/v1/registry/readout", tags=("registry",), summary="what the registry answers")
    def reg_readout(q: str = Query(..., max_length=2000), limit: int = 20, actor: Actor = Me):
        return registry.readout(services(), q, limit=limit)

    @route("GET", "/v1/registry/answers/{id}", tags=("registry",), summary="one answer, whatever its status")
    def reg_show(id: str = Id, actor: Actor = Me):  # noqa: A002
        return registry.show(services(), id)

    @route("GET", "/v1/registry/answers/{id}/chain", tags=("registry",), summary="the whole supersede chain")
    def reg_chain(id: str = Id, actor: Actor = Me):  # noqa: A002
        return registry.chain(services(), id)

    class Supersede(Strict):
        text: str
        reason: str

    class Reason(Strict):
        reason: str

    @route("POST", "/v1/registry/answers/{id}/supersede", tags=("registry",),
           summary="publish a new version of an answer")
    def reg_supersede(body: Supersede, id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        return registry.supersede(services(), actor, id, body.text, body.reason, **o)

    @route("POST", "/v1/registry/answers/{id}/retire", tags=("registry",), summary="retire an answer")
    def reg_retire(body: Reason, id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        return registry.retire(services(), actor, id, body.reason, **o)

    @route("POST", "/v1/registry/answers/{id}/dispute", tags=("registry",), summary="dispute an answer")
    def reg_dispute(body: Reason, id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        return registry.dispute(services(), actor, id, body.reason, **o)

    # ------------------------------------------------------------------ grey queue (seed 003)
    class GreyIn(Strict):
        subject: str
        detail: str = ""
        ttl_seconds: int | None = None
        max_attempts: int | None = None
        assignee: str | None = Field(None, description="add it for this user's review at once")

    @route("POST", "/api/grey-queue", status=201, tags=("grey queue",), summary="add an entry by hand")
    def grey_add(body: GreyIn, actor: Actor = Me, o: dict = Key):
        ttl = None if body.ttl_seconds is None else limits.number(body.ttl_seconds, "ttl_seconds", limits.TTL_SECONDS)
        attempts = None if body.max_attempts is None else limits.number(body.max_attempts, "max_attempts",
                                                                        limits.MAX_ATTEMPTS)
        return grey.add(services(), actor, body.subject, body.detail, ttl_seconds=ttl, max_attempts=attempts,
                        assignee=body.assignee, **o)

    @route("GET", "/api/grey-queue", tags=("grey queue",), summary="list entries")
    def grey_list(state: str | None = Query(None, max_length=40), assignee: str | None = Query(None, max_length=200),
                  text: str | None = Query(None, max_length=2000), limit: int = 200, actor: Actor = Me):
        return grey.list_entries(services(), state, assignee, text, limit=limit)

    @route("GET", "/api/grey-queue/{id}", tags=("grey queue",), summary="an entry with its history")
    def grey_show(id: str = Id, actor: Actor = Me):  # noqa: A002
        return grey.show(services(), id)

    @route("GET", "/api/grey-queue/{id}/transitions", tags=("grey queue",),
           summary="the valid next states from the current one")
    def grey_transitions(id: str = Id, actor: Actor = Me):  # noqa: A002
        return grey.transitions(services(), id)

    @route("GET", "/api/grey-queue/{id}/history", tags=("grey queue",), summary="every transition of an entry")
    def grey_history(id: str = Id, actor: Actor = Me):  # noqa: A002
        return grey.history(services(), id)

    class GreyMove(Strict):
        assignee: str | None = Field(None, description="assign: who reviews it")
        notes: str | None = Field(None, description="assign: what the reviewer should know")
        reason: str | None = Field(None, description="escalate, reject (required); reopen, dismiss, reset")
        resolution: str | None = Field(None, description="resolve: what settled it")

    for action in ("assign", "unassign", "escalate", "deescalate", "reject", "reopen", "resolve", "dismiss", "reset"):
        def made(action=action):
            def moved(id: str = Id, body: GreyMove = Body(default_factory=GreyMove), actor: Actor = Me,  # noqa: A002
                      o: dict = Opts):
                fields = {k: v for k, v in body.model_dump().items() if v is not None}
                return grey.transition(services(), actor, id, action, **fields, **o)

            moved.__name__ = f"grey_{action}"
            moved.__doc__ = f"As `r2k grey {action}`."
            route("POST", f"/api/grey-queue/{{id}}/{action}", tags=("grey queue",), summary=f"{action} an entry")(moved)
        made()

    # ------------------------------------------------------------------ work items
    @route("GET", "/v1/workitems", tags=("work items",), summary="list work items")
    def wi_list(state: str | None = Query(None, max_length=40), limit: int = 200, actor: Actor = Me):
        return workitems.list_items(services(), state, limit=limit)

    @route("GET", "/v1/workitems/{id}", tags=("work items",), summary="a work item with its sources and text")
    def wi_show(id: str = Id, actor: Actor = Me):  # noqa: A002
        return workitems.show(services(), id)

    class WorkItemIn(Strict):
        question: str
        horn_type: str | None = None

    @route("POST", "/v1/workitems", status=201, tags=("work items",), summary="a work item by hand")
    def wi_create(body: WorkItemIn, actor: Actor = Me, o: dict = Key):
        return workitems.create(services(), actor, body.question, horn_type=body.horn_type, **o)

    @route("POST", "/v1/workitems/{id}/generate", status=202, tags=("work items",),
           summary="queue generation for a NEW work item")
    def wi_generate(id: str = Id, actor: Actor = Me):  # noqa: A002
        return workitems.generate(services(), actor, id)

    @route("POST", "/v1/workitems/{id}/rework", status=202, tags=("work items",),
           summary="regenerate a NEEDS_REWORK item with the reason in the prompt")
    def wi_rework(body: Reason, id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        return workitems.rework(services(), actor, id, body.reason, **o)

    class MaybeReason(Strict):
        reason: str | None = None

    @route("POST", "/v1/workitems/{id}/close", tags=("work items",), summary="close a work item")
    def wi_close(id: str = Id, body: MaybeReason = Body(default_factory=MaybeReason), actor: Actor = Me,  # noqa: A002
                 o: dict = Opts):
        return workitems.close(services(), actor, id, reason=body.reason, **o)

    # ------------------------------------------------------------------ durable tasks (seed 001)
    class TaskIn(Strict):
        title: str
        body: str = ""
        supersedes: int | None = None
        version: str | None = None

    @route("POST", "/v1/tasks", status=201, tags=("tasks",), summary="a DRAFT article")
    def task_create(body: TaskIn, actor: Actor = Me, o: dict = Key):
        return tasks.create(services(), actor, body.title, body.body, supersedes=body.supersedes,
                            version=body.version, **o)

    @route("GET", "/v1/tasks", tags=("tasks",), summary="list tasks")
    def task_list(state: str | None = Query(None, max_length=40), reviewer: str | None = Query(None, max_length=200),
                  limit: int = 200, offset: int = 0, actor: Actor = Me):
        return tasks.list_tasks(services(), state, reviewer, limit=limit, offset=offset)

    @route("GET", "/v1/tasks/{id}", tags=("tasks",), summary="a task: its projection, next states and events")
    def task_show(id: str = Id, actor: Actor = Me):  # noqa: A002
        return tasks.show(services(), id)

    @route("GET", "/v1/tasks/{id}/events", tags=("tasks",), summary="a task's typed events, with signatures")
    def task_events(id: str = Id, actor: Actor = Me):  # noqa: A002
        return tasks.events(services(), id)

    @route("GET", "/v1/tasks/{id}/export", tags=("tasks",), summary="the article as Markdown with its sources")
    def task_export(id: str = Id, actor: Actor = Me):  # noqa: A002
        markdown = tasks.export(services(), id)  # a 400 or 404 for an id that names no task
        return {"id": int(id), "markdown": markdown}

    class TransitionIn(BaseModel):
        # Checked by the service against core/schemas/transition_request.json (its 400s name the field),
        # so this model lets every field through as given.
        new_state: Any = None
        metadata: Any = None
        idempotency_key: Any = None
        expected_version: Any = None

    @route("POST", "/v1/tasks/{id}/transitions", tags=("tasks",),
           summary="request a state change: 202 when work was queued (AI analysis), 200 otherwise")
    def task_transition(body: TransitionIn, id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        """`{new_state, metadata, idempotency_key}`, the key mandatory (in the body, or the
        Idempotency-Key header); If-Match is the expected version. As `r2k tasks transition`."""
        request = {k: v for k, v in body.model_dump().items() if v is not None}
        if "idempotency_key" not in request and o["idempotency_key"] is not None:
            request["idempotency_key"] = o["idempotency_key"]
        if "expected_version" not in request and o["expected_version"] is not None:
            request["expected_version"] = o["expected_version"]
        done = tasks.transition(services(), actor, id, request)
        return Reply(done, 202 if done.get("state") == "AI_ANALYSIS" else 200)

    class Reviewers(Strict):
        reviewers: list[str]

    class Review(Strict):
        decision: Literal["approve", "reject"]
        reason: str | None = None

    class Resolve(Strict):
        note: str
        body: str | None = None
        version: str | None = None

    @route("POST", "/v1/tasks/{id}/submit", status=202, tags=("tasks",), summary="DRAFT → AI_ANALYSIS")
    def task_submit(id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        return tasks.submit(services(), actor, id, **o)

    @route("POST", "/v1/tasks/{id}/assign", tags=("tasks",), summary="assign reviewers")
    def task_assign(body: Reviewers, id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        return tasks.assign(services(), actor, id, body.reviewers, **o)

    @route("POST", "/v1/tasks/{id}/review", tags=("tasks",), summary="an assigned reviewer's decision")
    def task_review(body: Review, id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        return tasks.review(services(), actor, id, body.decision, body.reason, **o)

    @route("POST", "/v1/tasks/{id}/resolve", tags=("tasks",), summary="RESOLUTION_REQUIRED → PEER_REVIEW")
    def task_resolve(body: Resolve, id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        return tasks.resolve(services(), actor, id, body.note, body.body, version=body.version, **o)

    @route("POST", "/v1/tasks/{id}/deprecate", tags=("tasks",), summary="PUBLISHED → DEPRECATED")
    def task_deprecate(body: Reason, id: str = Id, actor: Actor = Me, o: dict = Opts):  # noqa: A002
        return tasks.deprecate(services(), actor, id, body.reason, **o)

    # ------------------------------------------------------------------ conflicts
    @route("GET", "/v1/conflicts", tags=("conflicts",), summary="list conflict flags")
    def conf_list(status: str | None = Query(None, max_length=200), limit: int = 200, actor: Actor = Me):
        return conflicts.list_flags(services(), status, limit=limit)

    @route("GET", "/v1/conflicts/{id}", tags=("conflicts",), summary="a flag with both answers and its history")
    def conf_show(id: str = Id, actor: Actor = Me):  # noqa: A002
        return conflicts.show(services(), id)

    @route("POST", "/v1/conflicts/{id}/escalate", tags=("conflicts",), summary="make both answers DISPUTED")
    def conf_escalate(id: str = Id, body: MaybeReason = Body(default_factory=MaybeReason),  # noqa: A002
                      actor: Actor = Me, o: dict = Opts):
        return conflicts.escalate(services(), actor, id, body.reason, **o)

    @route("POST", "/v1/conflicts/{id}/dismiss", tags=("conflicts",), summary="judge the answers consistent")
    def conf_dismiss(id: str = Id, body: MaybeReason = Body(default_factory=MaybeReason),  # noqa: A002
                     actor: Actor = Me, o: dict = Opts):
        return conflicts.dismiss(services(), actor, id, body.reason, **o)

    # ------------------------------------------------------------------ stats, users
    @route("GET", "/v1/stats", tags=("stats",), summary="your progress, or every validator's (an admin)")
    def stats_get(user: str | None = Query(None, max_length=200), all: bool = False,  # noqa: A002 - the CLI's --all
                  since: str | None = Query(None, max_length=40), actor: Actor = Me):
        if all or (user is None and actor.role == "admin"):
            if user is not None:
                raise InvalidInput("all and user cannot go together: all shows every validator")
            return stats.team_stats(services(), actor, since=since)
        return stats.user_stats(services(), actor, user=user, since=since)

    # ------------------------------------------------------------------ guidelines and comments
    @route("GET", "/v1/validation/queues/{horn_type}/guidelines", tags=("validation",),
           summary="a queue's guidelines in force (or version `number`)")
    def guidelines_get(horn_type: str = Path(..., max_length=40), number: int | None = None, actor: Actor = Me):
        """As `r2k queue guidelines HORN [--version N]`; null while the queue has none."""
        return guidelines.show(services(), horn_type,
                               None if number is None else limits.number(number, "number", limits.VERSION))

    class Guidelines(Strict):
        body: str = Field(..., description="Markdown")

    @route("PUT", "/v1/validation/queues/{horn_type}/guidelines", status=201, tags=("validation",),
           summary="a new version of a queue's guidelines (an admin)")
    def guidelines_put(body: Guidelines, horn_type: str = Path(..., max_length=40), actor: Actor = Me,
                       o: dict = Key):
        """As `r2k queue guidelines HORN --file F`: every version is kept."""
        return guidelines.set_guidelines(services(), actor, horn_type, body.body, **o)

    class CommentIn(Strict):
        entity: str = Field(..., description="candidate, answer, grey, workitem or task", max_length=20)
        id: str = Field(..., max_length=40)
        text: str

    @route("POST", "/v1/comments", status=201, tags=("comments",), summary="a comment on an item (never edited)")
    def comment_add(body: CommentIn, actor: Actor = Me, o: dict = Key):
        """As `r2k comments add ENTITY ID --text T`; `@name` of a known user tells them."""
        return comments.add(services(), actor, body.entity, body.id, body.text, **o)

    @route("GET", "/v1/comments", tags=("comments",), summary="the comments on an item, or mentioning a user")
    def comment_list(entity: str | None = Query(None, max_length=20), id: str | None = Query(None, max_length=40),  # noqa: A002
                     mentioning: str | None = Query(None, max_length=200), limit: int = 200, offset: int = 0,
                     actor: Actor = Me):
        """As `r2k comments list`."""
        return comments.list_comments(services(), entity, id, mentioning=mentioning, limit=limit, offset=offset)

    @route("GET", "/v1/stats/agreement", tags=("stats",),
           summary="the validators' agreement under overlap, per queue and pair (an admin)")
    def stats_agreement(horn: str | None = Query(None, max_length=40), since: str | None = Query(None, max_length=40),
                        until: str | None = Query(None, max_length=40), days: str | None = Query(None, max_length=20),
                        actor: Actor = Me):
        """As `r2k stats agreement`: Krippendorff's alpha and percent agreement over the window."""
        return agreement.agreement(services(), actor, horn_type=horn, since=since, until=until, days=days)

    @route("GET", "/v1/users", tags=("users",), summary="list users")
    def users_list(actor: Actor = Me):
        return users.list_users(services())

    @route("GET", "/v1/me", tags=("users",), summary="the user this token acts as")
    def me(actor: Actor = Me):
        return {"name": actor.name, "role": actor.role, "horn_types": sorted(actor.horn_types)}

    # ------------------------------------------------------------------ export (docs/architecture.md, "Export")
    @app.get("/v1/export/{kind}", tags=("export",), summary="the registry, decisions or tasks as JSON Lines or CSV",
             response_class=StreamingResponse,
             responses={200: {"content": {"application/x-ndjson": {}, "text/csv": {}},
                              "description": "one record a line (CSV: a header line first)"}})
    def export_stream(kind: Literal["registry", "decisions", "tasks"], format: Literal["jsonl", "csv"] = "jsonl",  # noqa: A002
                      status: list[str] | None = Query(None, max_length=20), actor: Actor = Me):
        """As `r2k export KIND --format F [--status S]`: one consistent snapshot, streamed as it is read;
        decisions are an admin's."""
        ctx = services()
        kind, fmt = exports.checked(actor, kind, format, status)
        lines: queue.Queue = queue.Queue(maxsize=256)
        gone = threading.Event()

        def put(item) -> None:
            # A client that left, or that read nothing for a minute, ends the read and frees its
            # database connection (a closed stream is not always closed promptly by the server).
            for _ in range(STALLED_EXPORT):
                if gone.is_set():
                    break
                try:
                    lines.put(item, timeout=1)
                    return
                except queue.Full:
                    continue
            raise ConnectionAbortedError("the client left the export, or stopped reading")

        def produce() -> None:
            try:
                exports.export(ctx, actor, kind, fmt, put, status=status)
            except Exception as exc:  # noqa: BLE001 - logged; the stream ends short (its status is sent)
                if not gone.is_set():
                    log.warning("export %s ended early: %s", kind, exc)
            finally:
                try:
                    put(None)
                except ConnectionAbortedError:
                    pass  # nobody is reading any more

        def stream():
            threading.Thread(target=produce, daemon=True, name=f"export-{kind}").start()
            try:
                while (line := lines.get()) is not None:
                    yield line
            finally:
                gone.set()

        media = "text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson"
        return StreamingResponse(stream(), media_type=media)

    # ------------------------------------------------------------------ the event stream
    @app.get("/v1/events", tags=("events",), summary="the event log as server-sent events",
             response_class=StreamingResponse,
             responses={200: {"content": {"text/event-stream": {}}, "description": "one `event:` a row"}})
    async def events(request: Request, aggregate: str | None = Query(None, max_length=40),
                     after: int | None = Query(None, ge=0, le=2**62, description="resume after this event id"),
                     follow: bool = Query(True, description="keep the stream open for new events"),
                     last_event_id: str | None = Header(None, alias="Last-Event-ID", max_length=20),
                     actor: Actor = Me):
        """Each event of the log as `id: N`, `event: TYPE` and `data: JSON`, oldest first; a client that
        reconnects with `Last-Event-ID` (or `?after=`) gets every event after that one. Without either,
        only events committed from now on (and none with follow=false)."""
        ctx = services()
        resume = after
        if last_event_id is not None:
            resume = limits.number(last_event_id, "Last-Event-ID", (0, 2**62))
        try:
            last = resume if resume is not None else await asyncio.to_thread(event_stream.high_water, ctx)
        except Exception as exc:  # noqa: BLE001 - the database away: a 503
            raise _translated(exc, ctx) from None
        return StreamingResponse(_stream(request, ctx, actor, aggregate, last, follow), media_type="text/event-stream",
                                 headers=NO_STORE)


INTERVAL = 0.5  # seconds between looks for new events (as `r2k events tail --follow`)


async def _stream(request: Request, ctx, actor: Actor, aggregate: str | None, last: int, follow: bool):
    # What is at or below `last` the client has (what it resumes after); ids below it that commit late
    # are still sent, as `r2k events tail --follow` prints them.
    seen: set[int] = set(range(max(0, last - event_stream.LOOKBACK), last + 1))
    while True:
        fresh = await asyncio.to_thread(event_stream.after, ctx, aggregate, last, seen)
        for event in fresh:
            event = event_stream.as_read_by(event, actor)
            yield f"id: {event['id']}\nevent: {event['aggregate_type']}.{event['type']}\ndata: {dumps(event, default=str)}\n\n"
            last = max(last, event["id"])
        if not follow and not fresh:
            return
        if not fresh:
            if await request.is_disconnected():
                return
            await asyncio.sleep(INTERVAL)
