"""The conflicts screen, as a validator works it: open flags listed with both answers side by side
and the disagreeing words highlighted; escalate (x) and dismiss with a reason (b, escape changes
nothing); a refused key says why in place; new flags appear live. And the registry detail's
neighbours in the graph, said in place when the graph is down."""
from __future__ import annotations

from textual.widgets import DataTable, Static

from r2k.app.screens.conflicts import ConflictsScreen
from r2k.app.screens.registry import RegistryScreen
from r2k.app.widgets.modals import ReasonModal
from r2k.core.services.contradictions import conflicts, graph_sync
from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates
from tests.tui import after, make_app, open_modal, open_screen, rendered, shows, text_of, type_text, wait_for


def publish(ctx, people, question, text, horn="FACT"):
    candidates.add(ctx, people["root"], question, text, horn)
    claimed = claims.claim_next(ctx, people["alice"], horn)
    return candidates.approve(ctx, people["alice"], claimed["id"])["answer"]


def flag_pair(ctx, people, first="Nightly backups of Quay WMS are kept for 30 days.",
              second="Nightly backups of Quay WMS are kept for 14 days."):
    a = publish(ctx, people, "How long are nightly backups kept?", first)
    b = publish(ctx, people, "What is established about backup retention?", second)
    [flag_id] = conflicts.detect(ctx, b["id"])["flags"]
    return a, b, flag_id


def listed(app) -> list[int]:
    table = app.screen.query_one("#conflicts-table", DataTable)
    return [int(table.get_row_at(i)[0]) for i in range(table.row_count)]


def counted(screen) -> bool:
    return "conflict" in rendered(screen.query_one("#conflicts-count"))


async def open_conflicts(pilot) -> ConflictsScreen:
    return await open_screen(pilot, "C", ConflictsScreen, ready=counted)


def highlighted(app, selector: str) -> list[str]:
    """The words a side pane draws in the screen's 'disagree' style."""
    screen = app.screen
    style = screen.get_component_rich_style("conflicts--disagree")
    text = screen.query_one(selector, Static).content
    return [text.plain[s.start:s.end] for s in text.spans if s.style == style]


async def test_open_flags_side_by_side_with_the_disagreeing_words_highlighted(ctx, people):
    a, b, flag_id = flag_pair(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_conflicts(pilot)
        assert listed(app) == [flag_id]
        await shows(pilot, "#conflicts-detail", f"Conflict {flag_id}", "Disagree: 30 days vs 14 days")
        await shows(pilot, "#conflicts-answer", f"Answer {a['id']}", a["text"])
        await shows(pilot, "#conflicts-other", f"Answer {b['id']}", b["text"])
        assert highlighted(app, "#conflicts-answer") == ["30 days"]
        assert highlighted(app, "#conflicts-other") == ["14 days"]


async def test_escalate_disputes_both_answers_from_the_screen(ctx, people):
    a, b, flag_id = flag_pair(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_conflicts(pilot)
        await shows(pilot, "#conflicts-answer", a["text"])
        await pilot.press("x")
        said = await after(pilot, "escalated")
        assert said == f"Conflict {flag_id} escalated: answers {a['id']} and {b['id']} are DISPUTED, back for re-review."
        await wait_for(pilot, lambda: listed(app) == [], what="the flag leaves the open list")
        flag = conflicts.show(ctx, flag_id)
        assert flag["status"] == "ESCALATED" and {flag[side]["status"] for side in ("answer", "other")} == {"DISPUTED"}


async def test_dismiss_asks_for_a_reason_and_escape_changes_nothing(ctx, people):
    _, _, flag_id = flag_pair(ctx, people)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_conflicts(pilot)
        await shows(pilot, "#conflicts-detail", f"Conflict {flag_id}")
        await open_modal(pilot, "b", ReasonModal)
        await pilot.press("escape")
        await after(pilot, "nothing changed")
        assert conflicts.show(ctx, flag_id)["status"] == "OPEN"
        await open_modal(pilot, "b", ReasonModal)
        await pilot.press("ctrl+s")  # blank: refused in the dialog, which stays open
        assert isinstance(app.screen, ReasonModal)
        await type_text(pilot, "different backup sets")
        await pilot.press("ctrl+s")
        await after(pilot, "dismissed")
        await wait_for(pilot, lambda: listed(app) == [], what="the flag leaves the open list")
        flag = conflicts.show(ctx, flag_id)
        assert (flag["status"], flag["dismissed_reason"]) == ("DISMISSED", "different backup sets")


async def test_a_validator_without_authority_is_refused_in_place(ctx, people):
    _, _, flag_id = flag_pair(ctx, people)
    app = make_app(ctx, "vera")  # PROCEDURE, CONSTRAINT, OPEN_ISSUE: not FACT
    async with app.run_test(size=(140, 45)) as pilot:
        await open_conflicts(pilot)
        await shows(pilot, "#conflicts-detail", f"Conflict {flag_id}")
        await pilot.press("x")
        said = await after(pilot, "Not allowed")
        assert "only a validator with authority for both answers' Horn types" in said
        assert not isinstance(app.screen, ReasonModal)
        assert conflicts.show(ctx, flag_id)["status"] == "OPEN"


async def test_a_new_flag_appears_live(ctx, people):
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_conflicts(pilot)
        assert listed(app) == []
        assert "No open conflicts" in text_of(app, "#conflicts-detail")
        _, _, flag_id = flag_pair(ctx, people)  # detection, as a worker runs it, tells every workstation
        await wait_for(pilot, lambda: listed(app) == [flag_id], what="the new flag, live")


async def test_the_registry_shows_an_answers_neighbours_in_the_graph(ctx, people):
    a, b, flag_id = flag_pair(ctx, people)
    graph_sync.sync_answers(ctx, [a["id"], b["id"]], detect=False)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_screen(pilot, "G", RegistryScreen)
        table = app.screen.query_one("#results", DataTable)
        table.move_cursor(row=table.get_row_index(str(a["id"])))
        text = await shows(pilot, "#neighbours", "Subjects:", "backup", f"also {b['id']} (APPROVED)",
                           f"conflict {flag_id} OPEN with answer {b['id']}")
        assert "The graph is" not in text


def test_neighbours_say_so_when_the_graph_is_behind_or_down(ctx, people):
    a, b, flag_id = flag_pair(ctx, people)
    assert conflicts.neighbours(ctx, a["id"])["graph"].startswith("behind")  # not mirrored yet
    from r2k.core.bootstrap import bootstrap

    # A configured graph that does not answer (nothing listens there): an embedded one would be followed.
    away = bootstrap(ctx.settings.model_copy(update={"graph_url": "falkor://127.0.0.1:9", "connect_timeout": 1}))
    away.__dict__["db"] = ctx.db
    found = conflicts.neighbours(away, a["id"])
    assert found["graph"].startswith("down") and found["subjects"] == []
    assert [c["id"] for c in found["conflicts"]] == [flag_id]  # from PostgreSQL, the truth


def test_what_the_graph_holds_reaches_the_neighbours_pane_escaped():
    """Whatever the graph hands back (a source's id is whatever its reference said) is shown through
    visible(): no control character reaches the terminal."""
    from r2k.app.screens.registry import neighbours_text

    text = neighbours_text({
        "graph": "up", "sources": [{"id": "d\x1b[2J", "title": ""}],
        "subjects": [{"name": "backup\x07", "answers": [{"id": "7\x1b]0;x\x07", "status": "APPROVED", "title": ""}]}],
        "chain": [{"id": "3\x1b[1m", "status": "SUPERSEDED\x1b", "relation": "supersedes"}],
        "conflicts": [{"id": 1, "status": "OPEN", "other_answer_id": 7, "detail": "30 days\x1b[0m vs 14 days"}]}).plain
    assert "\x1b" not in text and "\x07" not in text
    assert "document d" in text and "backup" in text and "supersedes 3" in text


async def test_an_answer_whose_source_changed_is_shown_beside_its_source_as_it_now_reads(ctx, people, tmp_path):
    from r2k.core.services.documents import ingest

    path = tmp_path / "yard.md"
    path.write_text("# Yard\n\nForklift batteries are charged overnight in bay seven of the yard.\n")
    ingest.ingest(ctx, people["root"], [path])
    [candidate] = claims.held(ctx, people["alice"]) or [claims.claim_next(ctx, people["alice"], "FACT")]
    answer = candidates.approve(ctx, people["alice"], candidate["id"])["answer"]
    path.write_text("# Yard\n\nForklift batteries are charged overnight in bay nine of the yard.\n")
    ingest.ingest(ctx, people["root"], [path])
    [flag] = conflicts.list_flags(ctx)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(140, 45)) as pilot:
        await open_conflicts(pilot)
        assert listed(app) == [flag["id"]]
        table = app.screen.query_one("#conflicts-table", DataTable)
        assert [str(c) for c in table.get_row_at(0)[1:3]] == ["source_changed", str(answer["id"])]
        await shows(pilot, "#conflicts-answer", f"Answer {answer['id']}", "bay seven")
        await shows(pilot, "#conflicts-other", "The statement now reads", "bay nine")
        assert app.screen.query_one("#conflicts-other-pane").border_title == "Its source now"
        await pilot.press("x")
        said = await after(pilot, "escalated")
        assert said == f"Conflict {flag['id']} escalated: answer {answer['id']} is DISPUTED, back for re-review."
