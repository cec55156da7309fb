"""The work-item screen: the generation pipeline as workers move it, its detail, and the people's
keys (new, generate, rework, close), with the core's refusals shown in place."""
from __future__ import annotations

import asyncio

from textual.widgets import DataTable, Select, Static

from r2k.app.screens.workitems import WORK_ITEM_STATES, WorkItemsScreen
from r2k.app.widgets.modals import FieldsModal
from r2k.core.machines.work_item import WORK_ITEM
from r2k.core.services.answering import generation, workitems
from r2k.core.services.documents import ingest
from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates
from tests.tui import (after, answer_modal, detail_in, highlight, make_app, open_modal, open_screen, shows, text_of,
                       wait_for)

BACKUP = """# Backup rotation

The backup rotation keeps seven daily snapshots and four weekly ones.
Operators rotate the backup media every Monday before the first shift.
"""

POLICY = """# Backup policy

Every backup snapshot is encrypted with the current backup key.
The backup rotation runs at midnight and is checked by the on-call operator.
"""

QUESTION = "How does the backup rotation work?"


def rows(app) -> dict[int, str]:
    """id -> state of every listed item."""
    table = app.screen.query_one("#wi-table", DataTable)
    return {int(table.get_row_at(i)[0]): str(table.get_row_at(i)[1]) for i in range(table.row_count)}


async def open_items(pilot) -> WorkItemsScreen:
    return await open_screen(pilot, "W", WorkItemsScreen)


def corpus(ctx, people, tmp_path) -> None:
    (tmp_path / "rotation.md").write_text(BACKUP)
    (tmp_path / "policy.md").write_text(POLICY)
    ingest.ingest(ctx, people["root"], [tmp_path])


def generated_candidate(ctx, item_id: int) -> dict:
    return workitems.show(ctx, item_id)["generated"][-1]


def to_needs_rework(ctx, people, item_id: int) -> None:
    """The worker generates; a validator holding the Horn type claims the candidate and rejects it."""
    generation.generate_answer(ctx, item_id)
    made = generated_candidate(ctx, item_id)
    judge = next(p for p in (people["alice"], people["vera"]) if made["horn_type"] in p.horn_types)
    claims.claim(ctx, judge, made["candidate_id"])
    candidates.reject(ctx, judge, made["candidate_id"], "cite the weekly snapshots")
    assert workitems.get(ctx, item_id)["state"] == "NEEDS_REWORK"


def test_states_follow_the_machine():
    assert set(WORK_ITEM_STATES) == WORK_ITEM.states
    assert WORK_ITEM_STATES[0] == "NEW" and WORK_ITEM_STATES[-1] == "CLOSED"


async def test_items_listed_and_filtered_by_state(ctx, people):
    root = people["root"]
    for question in ("What is the VPN timeout?", "Who approves firewall changes?", "Where are the logs kept?"):
        workitems.create(ctx, root, question)
    workitems.close(ctx, people["sam"], 2, reason="asked twice")
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_items(pilot)
        assert rows(app) == {3: "NEW", 2: "CLOSED", 1: "NEW"}
        table = screen.query_one("#wi-table", DataTable)
        assert table.get_row("1")[5] == "<1m"
        assert "3 work items" in text_of(app, "#wi-count")
        await highlight(pilot, 2)
        assert "asked twice" in text_of(app, "#wi-detail")  # the close reason, in the history

        screen.query_one("#wi-state", Select).value = "CLOSED"
        await wait_for(pilot, lambda: rows(app) == {2: "CLOSED"}, what="CLOSED only")
        screen.query_one("#wi-state", Select).value = "READY_FOR_REVIEW"
        await wait_for(pilot, lambda: rows(app) == {}, what="nothing ready")
        assert "No work items in READY_FOR_REVIEW" in text_of(app, "#wi-detail")
        screen.query_one("#wi-state", Select).value = "all"
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="all again")


async def test_a_worker_moves_an_item_live_and_the_detail_shows_what_it_made(ctx, people, tmp_path):
    corpus(ctx, people, tmp_path)
    item = workitems.create(ctx, people["root"], QUESTION)
    lonely = workitems.create(ctx, people["root"], "What colour is the lobby carpet?")
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_items(pilot)
        assert rows(app) == {lonely["id"]: "NEW", item["id"]: "NEW"}

        # "A worker" runs the job, in its own thread: the screen follows through pub/sub.
        result = await asyncio.to_thread(generation.generate_answer, ctx, item["id"])
        assert result["outcome"] == "generated"
        await wait_for(pilot, lambda: rows(app)[item["id"]] == "READY_FOR_REVIEW", what="live state change")
        result = await asyncio.to_thread(generation.generate_answer, ctx, lonely["id"])
        assert result["reason"] == "no_content"
        await wait_for(pilot, lambda: rows(app)[lonely["id"]] == "ESCALATED", what="live escalation")
        table = app.screen.query_one("#wi-table", DataTable)
        assert table.get_row(str(lonely["id"]))[2] == "no_content"
        assert table.get_row(str(item["id"]))[3] == "2"  # two sources

        await highlight(pilot, item["id"])
        detail = text_of(app, "#wi-detail")
        made = generated_candidate(ctx, item["id"])
        assert f"Work item {item['id']} · READY_FOR_REVIEW" in detail
        assert "Generated, attempt 1" in detail and f"model {made['model']}" in detail
        assert made["text"].split("\n")[0][:60] in detail
        assert "Sources (2)" in detail and "Backup rotation" in detail and "Backup policy" in detail
        assert "Prompt" in detail and f"Question: {QUESTION}" in detail
        assert "History" in detail and "generated" in detail

        await highlight(pilot, lonely["id"])
        assert "Nothing generated yet" in text_of(app, "#wi-detail")
        assert "no_content" in text_of(app, "#wi-detail")


async def test_rework_through_the_modal(ctx, people, tmp_path):
    corpus(ctx, people, tmp_path)
    item = workitems.create(ctx, people["root"], QUESTION)
    to_needs_rework(ctx, people, item["id"])
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_items(pilot)
        await highlight(pilot, item["id"])
        assert rows(app)[item["id"]] == "NEEDS_REWORK"
        version = workitems.get(ctx, item["id"])["version"]

        await open_modal(pilot, "k", FieldsModal)
        await pilot.press(*"abc", "escape")
        await after(pilot, "nothing changed")
        assert workitems.get(ctx, item["id"])["version"] == version

        await pilot.press("k")
        await answer_modal(pilot, "weekly too")
        await after(pilot, "sent back for rework (GENERATING)")
        moved = workitems.get(ctx, item["id"])
        assert (moved["state"], moved["reason"]) == ("GENERATING", "weekly too")
        await wait_for(pilot, lambda: rows(app)[item["id"]] == "GENERATING", what="list follows")

        # The worker regenerates with the reason in the prompt.
        await asyncio.to_thread(generation.generate_answer, ctx, item["id"])
        await wait_for(pilot, lambda: rows(app)[item["id"]] == "READY_FOR_REVIEW", what="regenerated")
        await wait_for(pilot, lambda: "Generated, attempt 2" in text_of(app, "#wi-detail"), what="attempt 2 shown")
        assert "A reviewer rejected the previous answer: weekly too" in text_of(app, "#wi-detail")


async def test_close_and_the_core_refusals_in_place(ctx, people):
    item = workitems.create(ctx, people["root"], "What is the VPN timeout?")
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_items(pilot)
        await highlight(pilot, item["id"])

        await pilot.press("k")  # rework of a NEW item: illegal, no modal, the 422 in place
        said = await after(pilot, "'rework' is not allowed")
        assert said.startswith("Not possible now: work item 1 is NEW")
        assert not isinstance(app.screen, FieldsModal)
        assert workitems.get(ctx, item["id"])["version"] == 1

        await pilot.press("c")
        await answer_modal(pilot, "dup")
        await after(pilot, "closed (CLOSED)")
        assert workitems.get(ctx, item["id"])["state"] == "CLOSED"
        await wait_for(pilot, lambda: rows(app)[item["id"]] == "CLOSED", what="list follows")

        await detail_in(pilot, "CLOSED")
        await pilot.press("g")
        said = await after(pilot, "'generate' is not allowed")
        assert "CLOSED is terminal" in said
        await pilot.press("c")
        await after(pilot, "'close' is not allowed")


async def test_a_specialist_creates_an_item_and_queues_it(ctx, people):
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_items(pilot)
        assert "No work items yet" in text_of(app, "#wi-detail")
        await pilot.press("plus")
        await answer_modal(pilot, "Why?")
        await after(pilot, "Work item 1 created (NEW)")
        assert workitems.get(ctx, 1)["question"] == "Why?"
        await wait_for(pilot, lambda: rows(app) == {1: "NEW"}, what="the new item listed")
        await shows(pilot, "#wi-detail", "Work item 1 · NEW", what="its detail")

        await pilot.press("g")
        await after(pilot, "queued for generation")


async def test_an_item_without_a_horn_type_is_for_specialists(ctx, people):
    workitems.create(ctx, people["sam"], "Why?")
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_items(pilot)
        await shows(pilot, "#wi-detail", "Work item 1 · NEW", what="the item's detail")
        # An item without a Horn type is for specialists: a validator's keys get the 403 in place.
        await pilot.press("c")
        said = await after(pilot, "Not allowed")
        assert "specialist" in said
        await pilot.press("plus")
        await answer_modal(pilot, "Mine?")
        await after(pilot, "Not allowed")
        assert workitems.get(ctx, 1)["state"] == "NEW"
        assert len(workitems.list_items(ctx)) == 1


async def test_breaker_and_workers_in_view(ctx, people):
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_items(pilot)
        await shows(pilot, "#wi-workers", "workers live", what="pipeline status")
        assert "LLM circuit closed · 0/" in text_of(app, "#wi-breaker")
        assert "0 workers live" in text_of(app, "#wi-workers")

        cb = generation.breaker(ctx)
        for _ in range(cb.threshold):
            cb.record_failure("connection refused")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: "LLM circuit open" in text_of(app, "#wi-breaker"), what="breaker open")
        line = screen.query_one("#wi-breaker", Static)
        assert line.has_class("breaker-open") and not line.has_class("breaker-closed")
        assert f"{cb.threshold}/{cb.threshold} failures" in text_of(app, "#wi-breaker")
        assert "connection refused" in text_of(app, "#wi-breaker")

        cb.record_success()  # a notice from the pipeline refreshes it too
        ctx.notify("work_item", action="ready", id=0, state="READY_FOR_REVIEW")
        await wait_for(pilot, lambda: "LLM circuit closed" in text_of(app, "#wi-breaker"), what="breaker closed")


def test_snapshot_work_items(ctx, people, tmp_path, snap_compare):
    corpus(ctx, people, tmp_path)
    root = people["root"]
    workitems.create(ctx, root, "What colour is the lobby carpet?")
    generation.generate_answer(ctx, 1)  # no_content: escalated
    workitems.create(ctx, root, "Who approves firewall changes?")
    workitems.close(ctx, people["sam"], 2, reason="out of scope")
    workitems.create(ctx, root, QUESTION)
    generation.generate_answer(ctx, 3)
    workitems.create(ctx, root, "What is the VPN timeout?")

    async def open_it(pilot):
        await open_items(pilot)
        await shows(pilot, "#wi-workers", "workers live", what="pipeline status")
        await highlight(pilot, 3)
        await pilot.pause()

    assert snap_compare(make_app(ctx, "sam", listen=False), terminal_size=(140, 45), run_before=open_it)


async def test_marked_items_are_closed_each_on_its_own_after_one_question_naming_the_count(ctx, people):
    from tests.tui import cell_text

    root = people["root"]
    i1, i2, i3 = [workitems.create(ctx, root, f"What is timeout number {n}?")["id"] for n in (1, 2, 3)]
    workitems.close(ctx, root, i2, reason="asked twice")  # CLOSED is terminal: it cannot be closed again
    app = make_app(ctx, "sam")
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_items(pilot)
        table = screen.query_one("#wi-table", DataTable)
        for item_id in (i1, i2, i3):
            await highlight(pilot, item_id)
            await pilot.press("space")
        assert {int(k.value): cell_text(table.get_row(k)[0]) for k in table.rows} == {
            i1: f"●{i1}", i2: f"●{i2}", i3: f"●{i3}"}
        assert "3 work items marked: c closes each" in text_of(app, "#message")

        await pilot.press("k")  # only close acts on marked items: rework says so and changes nothing
        await after(pilot, "3 work items marked")
        assert not isinstance(app.screen, FieldsModal)

        modal = await open_modal(pilot, "c", FieldsModal)
        assert modal.form_title == "Close 3 marked work items? (final)"
        await pilot.press("escape")
        await after(pilot, "Cancelled: nothing changed.")
        assert [workitems.get(ctx, i)["state"] for i in (i1, i3)] == ["NEW", "NEW"]

        await pilot.press("c")
        await answer_modal(pilot, "duplicates")
        said = await after(pilot, "Close: 2 done, 1 failed.")
        assert f"work item {i2}:" in said and f"work item {i1}:" not in said
        assert [workitems.get(ctx, i)["state"] for i in (i1, i2, i3)] == ["CLOSED", "CLOSED", "CLOSED"]
        assert workitems.get(ctx, i1)["reason"] == "duplicates"
        assert screen.marked == set()
        await wait_for(pilot, lambda: all("●" not in cell_text(table.get_row(k)[0]) for k in table.rows),
                       what="the marks cleared")
