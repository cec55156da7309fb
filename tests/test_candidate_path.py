"""The rest of the candidate path (docs/architecture.md, "Candidate path"): an escalated candidate
resubmitted with reworked text, an escalated generated candidate closed with its work item, the
words after escalating a generated candidate, and `queue sweep` running the whole sweep."""
from __future__ import annotations

from textual.widgets import TextArea

from r2k.app.screens.workitems import WorkItemsScreen
from r2k.app.widgets.modals import TextModal
from r2k.core import engine
from r2k.core.domain import SYSTEM
from r2k.core.machines.work_item import WORK_ITEM
from r2k.core.services.answering import generation, workitems
from r2k.core.services.documents import ingest
from r2k.core.services.grey_entries import grey
from r2k.core.services.queue import candidate_views, claims
from r2k.core.services.validation import candidates
from tests.conftest import error_of, r2k, r2k_json, redis_snapshot
from tests.tui import after, highlight, make_app, open_modal, open_screen, type_text

SOURCES = {
    "retention.md": "# Backup policy\n\n## Backup retention\n\nNightly database backups are kept for thirty days "
                    "in the Frankfurt region.\n",
    "restore.md": "# Restore drills\n\n## Restore test\n\nThe monthly restore test reads nightly database backups "
                  "kept in Frankfurt and proves they restore.\n",
}
QUESTION = "How long are nightly database backups kept?"


def escalated(ctx, people, text: str = "Fourteen days, I believe.") -> tuple[int, int]:
    """A FACT candidate alice escalated: (its id, the id of the work item that opened)."""
    made = candidates.add(ctx, people["root"], QUESTION, text, "FACT")
    claims.claim(ctx, people["alice"], made["id"])
    item = candidates.escalate(ctx, people["alice"], made["id"], "fourteen or thirty?")["work_item"]
    return made["id"], item["id"]


def generated_and_escalated(ctx, people, tmp_path) -> tuple[int, int, int]:
    """An escalation whose generated candidate alice escalated in turn: (origin, work item, generated)."""
    for name, text in SOURCES.items():
        (tmp_path / name).write_text(text)
    ingest.ingest(ctx, people["root"], [tmp_path])
    with ctx.db.begin() as tx:  # the queues hold this test's candidates alone
        tx.execute("UPDATE candidates SET state = 'REJECTED'")
    ctx.redis.flushdb()
    origin, item = escalated(ctx, people)
    assert generation.generate_answer(ctx, item)["outcome"] == "generated"
    made = workitems.show(ctx, item)["generated_candidate"]
    claims.claim(ctx, people["root"], made["id"])
    return origin, item, made["id"]


def state(ctx, candidate_id: int) -> str:
    return candidate_views.get(ctx, candidate_id)["state"]


# --------------------------------------------------------------------------- resubmit

def test_resubmit_puts_the_candidate_back_in_its_queue_and_closes_its_work_item(ctx, people):
    origin, item = escalated(ctx, people)
    done = r2k_json("--as", "sam", "candidates", "resubmit", str(origin), "--text", "Thirty days, in Frankfurt.",
                    "--idempotency-key", "rework-1")
    assert (done["candidate"]["state"], done["candidate"]["text"]) == ("PENDING", "Thirty days, in Frankfurt.")
    assert (done["work_item"]["id"], done["work_item"]["state"]) == (item, "CLOSED")
    closing = workitems.show(ctx, item)["history"][-1]
    assert (closing["action"], closing["reason"]) == ("close", f"answered by resubmitted candidate {origin}")
    assert state(ctx, origin) == "PENDING"  # the item's close leaves the reworked candidate as it is
    # Back at the tail of its Horn queue: the next FACT claim serves it, with the reworked text.
    assert claims.claim_next(ctx, people["bob"], "FACT")["id"] == origin
    # The same request again, with its key: the first result, nothing changed.
    again = r2k_json("--as", "sam", "candidates", "resubmit", str(origin), "--text", "Thirty days, in Frankfurt.",
                     "--idempotency-key", "rework-1")
    assert again == done and state(ctx, origin) == "IN_REVIEW"
    said = r2k("--as", "root", "candidates", "history", str(origin)).stdout
    assert "resubmit" in said and "ESCALATED" in said


def test_resubmit_refuses_bad_requests_and_changes_nothing(ctx, people):
    origin, item = escalated(ctx, people)
    pending = candidates.add(ctx, people["root"], "Another?", "Another plain fact.", "FACT")
    before = (candidate_views.get(ctx, origin), workitems.get(ctx, item), redis_snapshot(ctx.redis))

    def unchanged():
        assert (candidate_views.get(ctx, origin), workitems.get(ctx, item), redis_snapshot(ctx.redis)) == before

    refused = r2k("--as", "alice", "candidates", "resubmit", str(origin), "--text", "Thirty days.")
    assert refused.returncode == 7 and error_of(refused)["status"] == 403
    assert "specialist" in error_of(refused)["message"]
    unchanged()
    refused = r2k("--as", "sam", "candidates", "resubmit", str(pending["id"]), "--text", "Thirty days.")
    assert refused.returncode == 5 and error_of(refused)["status"] == 422
    assert f"candidate {pending['id']} is PENDING: 'resubmit' is not allowed" in error_of(refused)["message"]
    for text, words in ((" ", "needs the reworked answer text"), ("Fourteen days, I believe.", "nothing was reworked")):
        refused = r2k("--as", "sam", "candidates", "resubmit", str(origin), "--text", text)
        assert refused.returncode == 6 and error_of(refused)["status"] == 400 and words in error_of(refused)["message"]
        unchanged()
    refused = r2k("--as", "sam", "candidates", "resubmit", str(origin), "--text", "Thirty days.",
                  "--expected-version", "1")
    assert refused.returncode == 4 and error_of(refused)["status"] == 409
    refused = r2k("--as", "sam", "candidates", "resubmit", "999", "--text", "Thirty days.")
    assert refused.returncode == 3
    unchanged()
    # While an answer is being generated for its work item, the item cannot close: refused, said why.
    with ctx.db.begin() as tx:
        engine.apply(tx, WORK_ITEM, item, "generate", SYSTEM)
    before = (candidate_views.get(ctx, origin), workitems.get(ctx, item), redis_snapshot(ctx.redis))
    refused = r2k("--as", "sam", "candidates", "resubmit", str(origin), "--text", "Thirty days.")
    assert refused.returncode == 5, refused.stderr
    assert f"its work item {item} is GENERATING and cannot be closed" in error_of(refused)["message"]
    unchanged()


def test_a_resubmitted_open_issue_takes_the_type_of_its_reworked_text(ctx, people):
    made = candidates.add(ctx, people["root"], "Will telematics score drivers?", "It is not decided yet.",
                          "OPEN_ISSUE")
    claims.claim(ctx, people["vera"], made["id"])
    candidates.escalate(ctx, people["vera"], made["id"], "needs a decision")
    done = candidates.resubmit(ctx, people["sam"], made["id"], "If a unit is fitted, then it scores the driver.")
    assert done["candidate"]["horn_type"] == "RULE" and done["candidate"]["state"] == "PENDING"
    assert claims.claim_next(ctx, people["alice"], "RULE")["id"] == made["id"]


def test_an_escalated_generated_candidate_is_resubmitted_and_its_work_item_closes(ctx, people, tmp_path):
    origin, item, made = generated_and_escalated(ctx, people, tmp_path)
    said = r2k("--as", "root", "candidates", "escalate", str(made), "--reason", "cites the restore drill")
    assert said.returncode == 0, said.stderr
    # The generated candidate moved its own work item: the words name it, not a new one.
    assert said.stdout.strip() == f"Escalated candidate {made}: work item {item} moved to ESCALATED."
    assert workitems.get(ctx, item)["state"] == "ESCALATED"
    assert candidates.escalated_for_item(ctx, item)["id"] == made  # what the work items screen reworks
    done = candidates.resubmit(ctx, people["sam"], made, "Nightly database backups are kept for thirty days.")
    assert done["work_item"]["state"] == "CLOSED"
    assert (state(ctx, made), state(ctx, origin)) == ("PENDING", "CLOSED")  # the origin is answered by it


def test_an_escalated_generated_candidate_is_closed_with_its_work_item(ctx, people, tmp_path):
    origin, item, made = generated_and_escalated(ctx, people, tmp_path)
    candidates.escalate(ctx, people["root"], made, "cites the restore drill")
    closed = r2k_json("--as", "sam", "workitems", "close", str(item), "--reason", "not needed any more")
    assert closed["state"] == "CLOSED"
    assert (state(ctx, made), state(ctx, origin)) == ("CLOSED", "CLOSED")
    assert candidates.escalated_for_item(ctx, item) is None


# --------------------------------------------------------------------------- the work items screen

async def test_the_work_items_screen_resubmits_the_escalated_candidate_with_reworked_text(ctx, people):
    origin, item = escalated(ctx, people)
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_screen(pilot, "W", WorkItemsScreen)
        await highlight(pilot, item)
        modal = await open_modal(pilot, "R", TextModal)
        assert modal.query_one("#text", TextArea).text == "Fourteen days, I believe."  # prefilled
        await type_text(pilot, " No: thirty.")  # the cursor starts at the end of the text
        await pilot.press("ctrl+s")
        await after(pilot, f"Resubmitted candidate {origin}: back in the FACT queue")
        assert f"work item {item} closed" in str(app.screen.query_one("#message").content)
        shown = candidate_views.get(ctx, origin)
        assert (shown["state"], shown["text"]) == ("PENDING", "Fourteen days, I believe. No: thirty.")
        assert workitems.get(ctx, item)["state"] == "CLOSED"


async def test_the_resubmit_key_is_a_specialists_and_says_why_to_others(ctx, people):
    origin, item = escalated(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_screen(pilot, "W", WorkItemsScreen)
        await highlight(pilot, item)
        assert "Resubmit" not in {b.binding.description for b in screen.active_bindings.values() if b.enabled}
        await pilot.press("R")
        await after(pilot, "Only a specialist or an admin may resubmit")
        assert state(ctx, origin) == "ESCALATED" and workitems.get(ctx, item)["state"] == "NEW"


# --------------------------------------------------------------------------- queue sweep

def test_queue_sweep_runs_the_whole_sweep_and_says_what_it_did(ctx, people):
    held = candidates.add(ctx, people["root"], "Held?", "A fact someone held too long.", "FACT")
    claims.claim(ctx, people["alice"], held["id"])
    entry = grey.add(ctx, people["sam"], "An unknown nobody looked at", ttl_seconds=60)
    with ctx.db.begin() as tx:
        tx.execute("UPDATE candidates SET lease_expires_at = now() - interval '1 second' WHERE id = %s", (held["id"],))
        tx.execute("UPDATE grey_entries SET expires_at = now() - interval '1 second' WHERE id = %s", (entry["id"],))
    refused = r2k("--as", "alice", "queue", "sweep")
    assert refused.returncode == 7 and "only a specialist or an admin" in error_of(refused)["message"]
    assert state(ctx, held["id"]) == "IN_REVIEW"  # nothing swept
    said = r2k("--as", "sam", "queue", "sweep")
    assert said.returncode == 0, said.stderr
    assert "expired claims released: 1" in said.stdout and "grey entries expired (TTL): 1" in said.stdout
    assert "work items re-enqueued for generation: 0" in said.stdout
    assert state(ctx, held["id"]) == "PENDING" and grey.get(ctx, entry["id"])["state"] == "Expired"
    swept = r2k_json("--as", "root", "queue", "sweep")
    assert swept["claims"]["released"] == [] and swept["grey"]["expired"] == []
