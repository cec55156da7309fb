"""Keys: the command palette reaches the actions of the screen below it; everywhere keys work from
every screen; a keymap file rebinds by id; one letter means one thing; only possible moves are offered."""
from __future__ import annotations

import pytest
from textual.command import CommandPalette
from textual.widgets import Footer
from textual.worker import WorkerState

from r2k.app.screens.review import ReviewScreen
from r2k.app.widgets.modals import ReasonModal
from tests.test_tui_validation import open_review, seed_facts
from tests.tui import make_app, wait_for


def palette_hits(app) -> list[str]:
    from textual.command import CommandList

    options = app.screen.query_one(CommandList)
    return [str(getattr(options.get_option_at_index(i).prompt, "plain", options.get_option_at_index(i).prompt))
            for i in range(options.option_count)]


async def palette_search(pilot, words: str, expect: str) -> list[str]:
    """Open the palette, type `words`, wait for a hit naming `expect`; the hits."""
    app = pilot.app
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the command palette")
    await pilot.press(*words)
    return await wait_for(pilot, lambda: (hits := palette_hits(app)) and any(expect in h for h in hits) and hits,
                          what=f"a palette hit {expect!r} for {words!r}")


async def test_the_palette_finds_the_actions_of_the_screen_below_it_and_runs_them(ctx, people):
    seed_facts(ctx, people, 2)
    app = make_app(ctx, "alice")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_review(pilot)
        hits = await palette_search(pilot, "escal", "Escalate")
        assert any("Escalate" in h for h in hits)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), what="the palette closed")

        await palette_search(pilot, "relea", "Release")  # kept out of the footer (80 columns), found here
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), what="the palette closed")

        await palette_search(pilot, "rej", "Reject")
        await pilot.press("enter")  # runs it on the review screen: its reason modal opens
        await wait_for(pilot, lambda: isinstance(app.screen, ReasonModal), what="the reject modal")


# --------------------------------------------------------------------------- keys for everywhere

async def test_the_keys_for_everywhere_work_from_the_registry_and_from_its_search_box(ctx, people):
    from textual.widgets import DataTable, Input

    from r2k.app.screens.help import HelpScreen
    from r2k.app.screens.registry import RegistryScreen
    from r2k.app.screens.workitems import WorkItemsScreen
    from tests.tui import open_screen

    app = make_app(ctx, "alice")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_screen(pilot, "G", RegistryScreen)
        assert isinstance(app.focused, DataTable)  # not the search box: ? is help, not text
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help over the registry")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, what="help closed")

        await pilot.press("slash")
        search = screen.query_one("#search", Input)
        assert app.focused is search
        await pilot.press(*"dock?")  # in the box, letters and ? are text
        assert search.value == "dock?" and app.screen is screen
        await pilot.press("f1")  # help even from the box
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help from the search box")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen and app.focused is search, what="back in the box")
        await pilot.press("escape")  # leaves the box, not the screen
        assert app.screen is screen and isinstance(app.focused, DataTable)
        await pilot.press("W")
        await wait_for(pilot, lambda: isinstance(app.screen, WorkItemsScreen), what="the work items")


# --------------------------------------------------------------------------- the keymap file

def write(tmp_path, text: str):
    path = tmp_path / "keymap.toml"
    path.write_text(text)
    return path


def keymap_error(path) -> str:
    import pytest

    from r2k.app.keymap import KeymapError, load

    with pytest.raises(KeymapError) as raised:
        load(path)
    return str(raised.value)


def test_a_bad_keymap_is_one_readable_line(tmp_path):
    said = keymap_error(write(tmp_path, 'aprove = "y"\n'))
    assert said == f"keymap {tmp_path / 'keymap.toml'}: unknown binding id 'aprove' (did you mean 'approve'?)"
    said = keymap_error(write(tmp_path, 'approve = "n"\n'))  # n claims the next candidate
    assert "'n' would be both" in said and "approve (Approve)" in said and "claim_next (Claim next)" in said
    assert said.endswith("on Review")
    said = keymap_error(write(tmp_path, 'reject = "G"\n'))  # G opens the registry from everywhere
    assert "'G' would be both" in said and "grey" not in said and "registry (Registry)" in said
    said = keymap_error(write(tmp_path, 'approve = "tab"\n'))  # tab moves the focus, on every screen
    assert "'tab' would be both" in said and "Focus Next" in said
    said = keymap_error(write(tmp_path, 'save = "escape"\n'))  # the editor's escape cancels
    assert "'escape' would be both" in said and "cancel (Cancel)" in said and "save (Save)" in said
    assert "must be a key in quotes" in keymap_error(write(tmp_path, "approve = 5\n"))
    assert "is not a key" in keymap_error(write(tmp_path, 'approve = "ctrl+"\n'))
    assert "not valid TOML" in keymap_error(write(tmp_path, "approve = y\n"))
    assert "no such file" in keymap_error(tmp_path / "absent.toml")
    for said in (keymap_error(write(tmp_path, 'aprove = "y"\n')),):
        assert "\n" not in said


def test_a_bad_keymap_stops_the_workstation_before_anything_starts(tmp_path, monkeypatch, capsys):
    from r2k.app import tui

    monkeypatch.setenv("R2K_KEYMAP_FILE", str(write(tmp_path, 'approve = "n"\n')))
    started = []
    monkeypatch.setattr(tui, "Context", lambda *a, **k: started.append(1))  # would reach the services
    assert tui.run_tui("alice") == 6
    err = capsys.readouterr().err
    assert err.startswith("r2k: keymap ") and err.count("\n") == 1 and "'n' would be both" in err
    assert started == []  # nothing opened, nothing changed


def test_the_keymap_file_is_found_in_the_config_dir(tmp_path, monkeypatch):
    from r2k.app.keymap import keymap_path, load

    monkeypatch.delenv("R2K_KEYMAP_FILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert keymap_path() == tmp_path / "r2k" / "keymap.toml"
    assert load() == {}  # none: the keys as listed in the README
    (tmp_path / "r2k").mkdir()
    (tmp_path / "r2k" / "keymap.toml").write_text('approve = "y"\nreject = "r,delete"\nsave = "ctrl+e"\n')
    assert load() == {"approve": "y", "reject": "r,delete", "save": "ctrl+e"}  # a dialog's key too


async def test_keys_of_your_own_act_and_show_in_the_footer_and_help(ctx, people):
    from textual.widgets import DataTable

    from r2k.app.screens.help import HelpScreen
    from r2k.core.services.queue import candidate_views
    from tests.tui import candidate_on, handled

    ids = seed_facts(ctx, people, 3)
    app = make_app(ctx, "alice", keymap={"approve": "y", "help": "f2"})
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_review(pilot)
        footer = {b.description: app.get_key_display(b) for b in
                  (a.binding for a in screen.active_bindings.values())}
        assert footer["Approve"] == "y" and footer["Help"] == "f2"
        await pilot.press("a")  # no longer approves
        await handled(pilot)  # had it approved, the save would have ended by now
        assert candidate_views.get(ctx, ids[0])["state"] == "IN_REVIEW" and candidate_on(screen) == ids[0]
        await pilot.press("y")
        await wait_for(pilot, lambda: candidate_on(screen) == ids[1], what="the next candidate")
        assert candidate_views.get(ctx, ids[0])["state"] == "APPROVED"
        await pilot.press("f2")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help on f2")
        keys = app.screen.query_one(DataTable)
        rows = {keys.get_row_at(i)[1]: keys.get_row_at(i) for i in range(keys.row_count)}
        assert rows["Approve"][0] == "y" and rows["Approve"][3] == "approve"


# --------------------------------------------------------------------------- one letter, one meaning

def readme_keys() -> dict[str, tuple[str, str]]:
    """The README's Keys table: key (as Textual names it) -> (what it does, its id)."""
    import re
    from pathlib import Path

    from textual.keys import _character_to_key

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = text.split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for key, does, binding_id in re.findall(r"^\| `([^`]+)` \| ([^|]+?) \| [^|]+ \| `?([^|`]+?)`? \|$", section, re.M):
        key = _character_to_key(key) if len(key) == 1 else key
        assert key not in rows, f"{key} is listed twice in the README's Keys table"
        rows[key] = (does, binding_id)
    return rows


def binding_classes() -> list[type]:
    """The app, every screen and the widgets with keys of their own: every class with bindings."""
    import importlib

    from r2k.app.keymap import WIDGET_CLASSES, screen_classes
    from r2k.app.tui import R2KApp

    widgets = [getattr(importlib.import_module(module), name) for extra in WIDGET_CLASSES.values()
               for module, name in extra]
    return [R2KApp, *screen_classes(), *widgets]


def test_a_letter_means_the_same_on_every_screen_as_the_readme_says():
    from textual.binding import Binding
    from textual.keys import _character_to_key

    from r2k.app.screens.help import HelpScreen

    table = readme_keys()
    assert len(table) > 30
    used = set()
    for cls in binding_classes():
        for binding in cls.BINDINGS:
            assert isinstance(binding, Binding) and binding.id, f"{cls.__name__}: {binding} has no id"
            for key in binding.key.split(","):
                key = _character_to_key(key) if len(key) == 1 else key
                assert key in table, f"{cls.__name__}: {key} ({binding.description}) is not in the README's Keys"
                assert (binding.description, binding.id) == table[key], \
                    f"{cls.__name__}: {key} is {binding.description!r} ({binding.id}); the README says {table[key]}"
                used.add(key)
    assert all(binding.id for binding in HelpScreen.BINDINGS)
    unbound = set(table) - used - {"ctrl+p"}
    assert not unbound, f"the README lists keys no screen binds: {sorted(unbound)}"


# --------------------------------------------------------------------------- only moves that can be made

def offered(screen) -> set[str]:
    """What the footer and the palette offer: the screen's enabled bindings' descriptions."""
    return {a.binding.description for a in screen.active_bindings.values() if a.enabled and a.node is screen}


async def test_an_open_issue_offers_no_approve_or_revise_and_the_key_says_why(ctx, people, tmp_path, monkeypatch):
    from tests.test_tui_validation import ingest_handbook, state
    from tests.tui import candidate_on, message

    ingest_handbook(ctx, people, tmp_path, monkeypatch)
    app = make_app(ctx, "vera")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_review(pilot, "OPEN_ISSUE")
        shown = candidate_on(screen)
        keys = offered(screen)
        assert {"Reject", "Escalate"} <= keys and not {"Approve", "Revise"} & keys
        assert "Claim next" not in keys  # one is claimed: decide it first
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        searches = []  # the palette's searches, as Textual starts each (one per key typed)
        add_worker = app.workers.add_worker

        def started(worker, **kw):
            if worker.group == CommandPalette._GATHER_COMMANDS_GROUP:
                searches.append(worker)
            return add_worker(worker, **kw)

        monkeypatch.setattr(app.workers, "add_worker", started)
        await pilot.press(*"appro")
        # Once the search for "appro" has ended, every hit it found is listed: an Approve would be.
        await wait_for(pilot, lambda: searches and "'appro'" in searches[-1].description
                       and searches[-1].state == WorkerState.SUCCESS, what="the palette's search for 'appro'")
        hits = palette_hits(app)
        assert not any("Approve" in hit for hit in hits), hits
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, what="the palette closed")
        await pilot.press("a")  # hidden, pressed anyway: it says why instead of vanishing
        await wait_for(pilot, lambda: "escalate it" in message(app), what="why not")
        assert state(ctx, shown) == "IN_REVIEW"

        # A hidden key holds up none of the keys typed after it: r opens its modal at once. The
        # hold's limit (app/typeahead.py) is made a minute here, longer than wait_for waits, so a
        # held r fails the test however slow the machine, and a slow machine fails nothing else.
        from r2k.app import typeahead
        from tests.tui import keys_together

        monkeypatch.setattr(typeahead, "HOLD_LIMIT", 60.0)
        await keys_together(pilot, "a", "r")
        await wait_for(pilot, lambda: isinstance(app.screen, ReasonModal), what="the reject modal")


async def test_retire_and_supersede_are_not_offered_for_an_answer_that_cannot_take_them(ctx, people):
    from r2k.app.screens.registry import RegistryScreen
    from r2k.app.widgets.modals import ReasonModal as Reason, TextModal
    from r2k.core.services.answers import registry
    from tests.test_tui_registry import highlight_answer, publish, shows
    from tests.tui import message, open_screen

    answers = publish(ctx, people)
    retired = registry.retire(ctx, people["alice"], answers[0]["id"], "obsolete")
    app = make_app(ctx, "alice")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_screen(pilot, "G", RegistryScreen)
        screen.query_one("#status").value = "ALL"
        await wait_for(pilot, lambda: retired["id"] in screen.rows, what="the retired answer listed")
        await highlight_answer(pilot, screen, retired["id"])
        await wait_for(pilot, lambda: not {"Retire", "Supersede", "Dispute"} & offered(screen), what="moves hidden")
        for key in ("t", "p", "d"):
            await pilot.press(key)
            await pilot.pause()
            assert not isinstance(app.screen, (Reason, TextModal))  # no dialog to type a reason into
            assert "RETIRED" in message(app) and "is not allowed" in message(app)
        await highlight_answer(pilot, screen, answers[1]["id"])
        await wait_for(pilot, lambda: {"Retire", "Supersede", "Dispute"} <= offered(screen), what="moves offered")
        # The footer says the same: it is redrawn when the keys change (and only then, app/widgets/footer.py).
        await wait_for(pilot, lambda: {"Retire", "Supersede", "Dispute"} <= footer_says(screen), what="footer offers")
        drawn = footer_keys(screen)
        table = screen.query_one("#results")  # straight to another answer taking the same moves
        footer = screen.query_one(Footer)
        settled = []  # set once the footer has handled the other answer's bindings (and any redraw that made)
        screen.bindings_updated_signal.subscribe(screen, lambda _: footer.call_after_refresh(settled.append, True))
        table.move_cursor(row=table.get_row_index(str(answers[2]["id"])))
        await shows(pilot, "#detail-body", f"Answer {answers[2]['id']}  ", what="the other answer")
        await wait_for(pilot, lambda: settled, what="the footer given the other answer's keys")
        assert footer_keys(screen) == drawn  # the same key widgets: nothing rebuilt for the same keys
        await highlight_answer(pilot, screen, retired["id"])
        await wait_for(pilot, lambda: not {"Retire", "Supersede", "Dispute"} & footer_says(screen),
                       what="footer hides the moves")


def footer_keys(screen) -> list:
    from textual.widgets import Footer
    from textual.widgets._footer import FooterKey

    return [k for k in screen.query_one(Footer).query(FooterKey) if k.display]


def footer_says(screen) -> set[str]:
    """The descriptions of the enabled keys the footer shows."""
    return {k.description for k in footer_keys(screen) if not k.disabled}


# --------------------------------------------------------------------------- footers at 80 columns

def footer_width(screen) -> tuple[int, str]:
    """The columns the footer's keys need (the palette's key on the right included), and what they say."""
    from textual.widgets import Footer
    from textual.widgets._footer import FooterKey

    footer = screen.query_one(Footer)
    keys = [k for k in footer.query(FooterKey) if k.display]
    said = " · ".join(f"{k.key_display} {k.description}" for k in keys)
    return sum(k.outer_size.width for k in keys), said


async def test_every_footer_fits_at_80_columns(ctx, people, tmp_path, monkeypatch):
    from r2k.app.screens.dashboard import DashboardScreen
    from r2k.app.screens.grey import GreyQueueScreen
    from r2k.app.screens.queues import QueuePickerScreen
    from r2k.app.screens.registry import RegistryScreen
    from r2k.app.screens.workitems import WorkItemsScreen
    from r2k.core.services.answering import workitems
    from r2k.core.services.grey_entries import grey
    from tests.test_tui_validation import ingest_handbook
    from tests.tui import highlight, loaded, open_screen

    ingest_handbook(ctx, people, tmp_path, monkeypatch)
    entry = grey.add(ctx, people["root"], "Who signs off night shifts?", "")
    item = workitems.create(ctx, people["root"], "How many docks are there?")
    app = make_app(ctx, "root")
    widths = {}
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen) and loaded(app.screen), what="dashboard")
        widths["dashboard"] = footer_width(app.screen)
        await open_screen(pilot, "V", QueuePickerScreen)
        widths["queues"] = footer_width(app.screen)
        await open_review(pilot, "FACT")
        await pilot.pause()
        widths["review"] = footer_width(app.screen)
        await open_screen(pilot, "G", RegistryScreen)
        widths["registry"] = footer_width(app.screen)
        await open_screen(pilot, "W", WorkItemsScreen)
        await highlight(pilot, item["id"])
        widths["work items"] = footer_width(app.screen)
        await open_screen(pilot, "Y", GreyQueueScreen)
        await highlight(pilot, entry["id"])
        widths["grey queue"] = footer_width(app.screen)
    too_wide = {name: w for name, w in widths.items() if w[0] > 80}
    assert not too_wide, f"footers wider than 80 columns: {too_wide}"


# --------------------------------------------------------------------------- pictures at 80×24 and 120×40

SIZES = [(80, 24), (120, 40)]
SIZE_IDS = ["80x24", "120x40"]


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_snapshot_review_keys(ctx, people, tmp_path, monkeypatch, snap_compare, size):
    from tests.test_tui_validation import ingest_handbook, settle_review

    ingest_handbook(ctx, people, tmp_path, monkeypatch)
    assert snap_compare(make_app(ctx, "alice", listen=False), terminal_size=size, run_before=settle_review)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_snapshot_registry_keys(ctx, people, snap_compare, size):
    from r2k.core.services.answers import registry
    from tests.test_tui_registry import publish, settle_registry

    publish(ctx, people)
    registry.supersede(ctx, people["alice"], 3, "If a trailer is at the dock, the leveller is lowered and the "
                       "wheels are chocked first.", "chocks are now required")
    assert snap_compare(make_app(ctx, "alice", listen=False), terminal_size=size, run_before=settle_registry)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_snapshot_grey_queue_keys(ctx, people, snap_compare, size):
    from tests.test_tui_grey import open_grey, seed_for_snapshot
    from tests.tui import shows

    seed_for_snapshot(ctx, people)

    async def open_it(pilot):
        await open_grey(pilot)
        await shows(pilot, "#grey-detail", "Entry 2 · Escalated", what="escalated entry first, with its detail")
        await pilot.pause()

    assert snap_compare(make_app(ctx, "sam", listen=False), terminal_size=size, run_before=open_it)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_snapshot_dashboard_keys(ctx, people, snap_compare, size):
    from tests.test_tui_dashboard import seed
    from tests.tui import settle_dashboard

    seed(ctx, people)
    assert snap_compare(make_app(ctx, "alice", listen=False), terminal_size=size, run_before=settle_dashboard)


async def test_a_work_item_offers_rework_only_when_it_needs_rework(ctx, people):
    from r2k.app.screens.workitems import WorkItemsScreen
    from r2k.core.services.answering import workitems
    from tests.tui import highlight, message, open_screen

    item = workitems.create(ctx, people["root"], "What is the VPN timeout?")
    app = make_app(ctx, "sam")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_screen(pilot, "W", WorkItemsScreen)
        await highlight(pilot, item["id"])
        await wait_for(pilot, lambda: {"Close", "Generate"} <= offered(screen) and "Rework" not in offered(screen),
                       what="close and generate offered, rework not (NEW)")
        workitems.close(ctx, people["root"], item["id"])
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: not {"Close", "Rework", "Generate"} & offered(screen),
                       what="nothing to offer once CLOSED")
        await pilot.press("g")  # the hidden key says why instead of queueing a job
        await wait_for(pilot, lambda: "CLOSED" in message(app), what="generate refused in place")
        assert workitems.get(ctx, item["id"])["state"] == "CLOSED"
