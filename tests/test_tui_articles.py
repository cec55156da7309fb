"""The articles screen, as an author and two reviewers work it: lists by state and assigned to me, the
detail (article escaped, flagged claims beside the answers they contradict, reviewers and decisions,
events with their signature status), and one key per move, each press with its own idempotency key."""
from __future__ import annotations

from textual.widgets import DataTable, Select

from r2k.app.screens.articles import ArticlesScreen
from r2k.app.widgets.modals import FieldsModal, ReasonModal
from r2k.core.bootstrap import bootstrap
from r2k.core.services import tasks
from tests.conftest import error_of, r2k
from tests.test_tasks import AGREES, CONTRADICTS, publish
from tests.tui import make_app, open_modal, open_screen, rendered, text_of, wait_for


def listed(app) -> dict[int, str]:
    table = app.screen.query_one("#art-table", DataTable)
    return {int(table.get_row_at(i)[0]): str(table.get_row_at(i)[1]) for i in range(table.row_count)}


def ready(screen) -> bool:
    return "article" in rendered(screen.query_one("#art-count"))


async def open_articles(pilot) -> ArticlesScreen:
    return await open_screen(pilot, "T", ArticlesScreen, ready=ready)


async def on_row(pilot, task_id: int, state: str) -> None:
    """Highlight a task and wait for its detail in `state`."""
    app = pilot.app
    table = app.screen.query_one("#art-table", DataTable)
    await wait_for(pilot, lambda: str(task_id) in table.rows, what=f"task {task_id} listed")
    table.move_cursor(row=table.get_row_index(str(task_id)))
    await wait_for(pilot, lambda: text_of(app, "#art-detail").startswith(f"Article {task_id} · {state} v"),
                   what=f"the detail of {task_id} in {state}")


def seeded(ctx, people):
    answers = [publish(ctx, people, "How long are backups kept?", "Nightly database backups are kept for 30 days."),
               publish(ctx, people, "Where are backups stored?", "Backups are stored in the Frankfurt region.")]
    good = tasks.create(ctx, people["vera"], "Backups", AGREES)
    bad = tasks.create(ctx, people["vera"], "Backups \x1b[31mred", CONTRADICTS + "\nA \x1b[2J clear.\n")
    for task in (good, bad):
        tasks.submit(ctx, people["vera"], task["id"])
        tasks.analyze(ctx, task["id"])
    tasks.assign(ctx, people["vera"], good["id"], ["alice", "bob"])
    return answers, good, bad


async def test_lists_by_state_and_mine_and_the_detail_shows_everything(ctx, people):
    answers, good, bad = seeded(ctx, people)
    draft = tasks.create(ctx, people["vera"], "Later", "")
    app = make_app(ctx, "alice")
    async with app.run_test(size=(150, 50)) as pilot:
        screen = await open_articles(pilot)
        await wait_for(pilot, lambda: listed(app) == {good["id"]: "PEER_REVIEW", bad["id"]: "RESOLUTION_REQUIRED",
                                                      draft["id"]: "DRAFT"}, what="all three")
        screen.query_one("#art-state", Select).value = "DRAFT"
        await wait_for(pilot, lambda: set(listed(app)) == {draft["id"]}, what="the state filter")
        screen.query_one("#art-state", Select).value = "all"
        await wait_for(pilot, lambda: len(listed(app)) == 3, what="all states")
        await pilot.press("l")  # assigned to me
        await wait_for(pilot, lambda: set(listed(app)) == {good["id"]}, what="assigned to me")
        await pilot.press("l")
        await on_row(pilot, bad["id"], "RESOLUTION_REQUIRED")
        detail = text_of(app, "#art-detail")
        assert "\\x1b[31mred" in detail and "\x1b" not in detail  # stored text escaped
        assert "✗ contradicted  Nightly database backups are kept for 90 days." in detail
        assert f"registry answer {answers[0]['id']}: Nightly database backups are kept for 30 days." in detail
        assert " ✓  1 TaskCreated" in detail and "verified" in detail
        await on_row(pilot, good["id"], "PEER_REVIEW")
        detail = text_of(app, "#art-detail")
        assert "alice  no decision yet" in detail and "bob  no decision yet" in detail
        assert "Nightly database backups are kept for 30 days." in detail


async def test_two_reviewers_approve_with_a_key_each_and_it_is_published(ctx, people):
    _, good, _ = seeded(ctx, people)
    for user, state_after in (("alice", "PEER_REVIEW"), ("bob", "PUBLISHED")):
        own = bootstrap(ctx.settings, pool_size=4)  # each workstation its own connections (it closes them)
        app = make_app(own, user)
        async with app.run_test(size=(150, 50)) as pilot:
            await open_articles(pilot)
            await on_row(pilot, good["id"], "PEER_REVIEW")
            await pilot.press("a")
            await wait_for(pilot, lambda: f"approve → {state_after}" in text_of(app, "#message"),
                           what=f"{user}'s approval")
    events = tasks.events(ctx, good["id"])
    keys = [e["idempotency_key"] for e in events if e["type"] == "ReviewApproved"]
    assert len(keys) == 2 and len(set(keys)) == 2 and not any(k.startswith("auto-") for k in keys)
    assert tasks.get(ctx, good["id"])["state"] == "PUBLISHED"


async def test_reject_asks_a_reason_escape_changes_nothing_and_resolve_returns_it(ctx, people):
    _, good, _ = seeded(ctx, people)
    app = make_app(bootstrap(ctx.settings, pool_size=4), "bob")
    async with app.run_test(size=(150, 50)) as pilot:
        await open_articles(pilot)
        await on_row(pilot, good["id"], "PEER_REVIEW")
        await open_modal(pilot, "r", ReasonModal)
        await pilot.press("escape")
        await wait_for(pilot, lambda: "nothing changed" in text_of(app, "#message"), what="cancelled")
        assert tasks.get(ctx, good["id"])["version"] == 4  # created, submitted, analysed, assigned: no more
        await open_modal(pilot, "r", ReasonModal)
        await pilot.press(*"cite the policy")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: "reject → RESOLUTION_REQUIRED" in text_of(app, "#message"), what="rejected")
        await pilot.press("v")  # bob is no author or editor: the key says why
        await wait_for(pilot, lambda: "may not resolve" in text_of(app, "#message"), what="refused resolve")
    app = make_app(bootstrap(ctx.settings, pool_size=4), "vera")
    async with app.run_test(size=(150, 50)) as pilot:
        await open_articles(pilot)
        await on_row(pilot, good["id"], "RESOLUTION_REQUIRED")
        assert "bob" in text_of(app, "#art-detail") and "cite the policy" in text_of(app, "#art-detail")
        await open_modal(pilot, "v", FieldsModal)
        await pilot.press(*"cited it", "enter")
        await wait_for(pilot, lambda: "resolve → PEER_REVIEW" in text_of(app, "#message"), what="resolved")
        await pilot.press("a")  # the author never reviews: said in place
        await wait_for(pilot, lambda: "may not" in text_of(app, "#message") or "never reviews" in text_of(app, "#message"),
                       what="the author refused")
    assert tasks.get(ctx, good["id"])["state"] == "PEER_REVIEW"


async def test_submit_and_assign_from_the_screen(ctx, people):
    draft = tasks.create(ctx, people["vera"], "Backups", AGREES)
    publish(ctx, people, "How long are backups kept?", "Nightly database backups are kept for 30 days.")
    app = make_app(bootstrap(ctx.settings, pool_size=4), "vera")
    async with app.run_test(size=(150, 50)) as pilot:
        await open_articles(pilot)
        await on_row(pilot, draft["id"], "DRAFT")
        await pilot.press("S")
        await wait_for(pilot, lambda: "submit → AI_ANALYSIS" in text_of(app, "#message"), what="submitted")
        await open_modal(pilot, "A", FieldsModal)
        await pilot.press(*"alice,bob", "enter")
        await wait_for(pilot, lambda: "assign → AI_ANALYSIS" in text_of(app, "#message"), what="assigned")
    shown = tasks.get(ctx, draft["id"])
    assert [r["name"] for r in shown["reviewers"]] == ["alice", "bob"]


async def test_the_footer_offers_only_what_the_article_allows_and_fits_at_80_columns(ctx, people):
    from tests.test_tui_keys import footer_width

    _, good, _ = seeded(ctx, people)
    app = make_app(bootstrap(ctx.settings, pool_size=4), "root")  # an admin: an editor of every article
    async with app.run_test(size=(80, 24)) as pilot:
        await open_articles(pilot)
        await on_row(pilot, good["id"], "PEER_REVIEW")
        await wait_for(pilot, lambda: "Assign" in footer_width(app.screen)[1], what="the footer")
        width, said = footer_width(app.screen)
        assert width <= 80, said
        assert "Assign" in said and "Submit" not in said and "Approve" not in said  # root reviews nothing here


def test_a_long_article_says_what_the_pane_leaves_out():
    from r2k.app.screens.articles import ARTICLE_LINES, render_task

    body = "\n".join(f"line {i}" for i in range(ARTICLE_LINES + 7))
    shown = render_task({"id": 5, "version": 2, "state": "DRAFT", "created_by": "vera", "title": "Long",
                         "body": body, "events": []}).plain
    assert f"line {ARTICLE_LINES - 1}" in shown and f"line {ARTICLE_LINES}\n" not in shown
    assert "… 7 more lines: r2k tasks export 5" in shown


async def test_approving_again_says_you_approved_already_not_someone_else(ctx, people):
    """A refusal caused by your own earlier move says so: only a race lost to another person is
    "someone else" (docs/architecture.md, "Keys")."""
    _, good, _ = seeded(ctx, people)
    tasks.review(ctx, people["alice"], good["id"], "approve")
    before = tasks.get(ctx, good["id"])
    app = make_app(bootstrap(ctx.settings, pool_size=4), "alice")  # the workstation closes its connections
    async with app.run_test(size=(150, 50)) as pilot:
        await open_articles(pilot)
        await on_row(pilot, good["id"], "PEER_REVIEW")
        await pilot.press("a")
        await wait_for(pilot, lambda: "approved task" in text_of(app, "#message"), what="the refusal")
        said = text_of(app, "#message")
        assert f"You approved task {good['id']} already" in said and "counts once" in said
        assert "someone else" not in said.lower()
    assert tasks.get(ctx, good["id"])["version"] == before["version"]  # nothing changed
    result = r2k("--as", "alice", "tasks", "review", str(good["id"]), "--approve")
    assert result.returncode == 4
    assert f"you approved task {good['id']} already" in error_of(result)["message"]


async def test_a_source_moved_on_is_said_at_approval_and_the_detail_marks_every_source(ctx, people):
    """The title once; each source with its registry status now; an approval the sources' check turns
    into a rejection says so, naming the answer, and the detail lists it as a flagged claim."""
    from r2k.core.services.answers import registry

    answers, good, _ = seeded(ctx, people)
    tasks.review(ctx, people["alice"], good["id"], "approve")
    app = make_app(bootstrap(ctx.settings, pool_size=4), "bob")
    async with app.run_test(size=(150, 60)) as pilot:
        await open_articles(pilot)
        await on_row(pilot, good["id"], "PEER_REVIEW")
        detail = text_of(app, "#art-detail")
        assert detail.count("Backups") == 1 + detail.count("- Backups are stored"), detail  # the title once
        assert f"Registry answer {answers[0]['id']}: How long are backups kept? (APPROVED)" in detail
        registry.supersede(ctx, people["alice"], answers[0]["id"], "Nightly database backups are kept for 90 days.",
                           "the policy changed")
        await pilot.press("a")
        await wait_for(pilot, lambda: "was not approved" in text_of(app, "#message"), what="the check's refusal")
        said = text_of(app, "#message")
        assert f"it cites answers no longer current (registry answer {answers[0]['id']} is SUPERSEDED by answer" in said
        await on_row(pilot, good["id"], "RESOLUTION_REQUIRED")
        detail = text_of(app, "#art-detail")
        assert "⚠ source not current  Nightly database backups are kept for 30 days." in detail
        assert "How long are backups kept? (SUPERSEDED by answer" in detail
    assert tasks.get(ctx, good["id"])["state"] == "RESOLUTION_REQUIRED"
