"""Every key hint is the key in force: the footer, the grey queue's detail, `?` and the messages that
name a key, on every screen and in every state of what it shows, with the keys as shipped and with a
keymap file that moves them. The footer shows every move the item on screen allows, and none it does
not, within 80 columns; a key a keymap moves keeps its place."""
from __future__ import annotations

import ast
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input
from textual.widgets._footer import FooterKey

from r2k.app.keymap import check
from r2k.app.screens.grey import GreyQueueScreen
from r2k.app.screens.help import HelpScreen
from r2k.app.screens.review import ReviewScreen
from r2k.app.widgets.footer import Footer
from r2k.core.services.answers import registry
from r2k.core.services.grey_entries import grey
from r2k.core.services.people import users
from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates
from tests.test_tui_validation import open_review
from tests.tui import highlight, make_app, message, open_screen, review_settled, text_of, wait_for

# The README's keys, and a keymap file that moves some of them (letters no screen uses, and f2).
SHIPPED = {"assign_me": "i", "assign": "A", "release": "u", "escalate": "x", "deescalate": "X", "resolve": "v",
           "reject": "r", "reopen": "o", "dismiss": "b", "reset": "j", "approve": "a", "revise": "e",
           "claim_next": "n", "skip": "s", "undo": "z", "back": "esc", "help": "?", "search": "/", "add": "+"}
MOVED = {"assign_me": "I", "escalate": "E", "dismiss": "B", "reset": "H", "release": "U", "approve": "y",
         "claim_next": "N", "skip": "K", "undo": "Z", "help": "f2", "search": "F"}
KEYMAPS = {"shipped": {}, "moved": MOVED}


def keys_for(keymap: dict) -> dict[str, str]:
    return {**SHIPPED, **keymap}


PRESSED = {"esc": "escape", "?": "question_mark", "+": "plus", "/": "slash"}  # as Pilot names them


def press_name(key: str) -> str:
    return PRESSED.get(key, key)


# --------------------------------------------------------------------------- reading the screen

def footer_keys(screen) -> list[FooterKey]:
    return [k for k in screen.query_one(Footer).query(FooterKey) if k.display]


def footer_says(screen) -> list[tuple[str, str]]:
    """(key, what) for each key the footer draws, left to right."""
    return [(k.key_display, k.description) for k in footer_keys(screen)]


def footer_fits(screen, width: int = 80) -> bool:
    return all(k.region.right <= width for k in footer_keys(screen))


def moves_in_footer(screen, moves: dict[str, str]) -> set[tuple[str, str]]:
    """The footer's keys that are moves (by their description: `moves` maps description -> id)."""
    return {(key, what) for key, what in footer_says(screen) if what in moves}


def declared_order(screen) -> list[str]:
    """The descriptions of the screen's bindings, then the app's, as their classes declare them."""
    return [b.description for b in type(screen).BINDINGS] + [b.description for b in type(screen.app).BINDINGS]


async def footer_shows_moves(pilot, screen, expected: set[tuple[str, str]], moves: dict[str, str], what: str):
    """The footer shows exactly the `expected` moves (key, what), within 80 columns, in the order the
    screen declares its keys whatever a keymap moved."""
    await wait_for(pilot, lambda: moves_in_footer(screen, moves) == expected and footer_fits(screen),
                   what=f"{what}: the footer's moves {sorted(expected)}")
    await pilot.pause()
    assert moves_in_footer(screen, moves) == expected, footer_says(screen)
    assert footer_fits(screen), f"{what}: the footer is wider than 80 columns: {footer_says(screen)}"
    order = declared_order(screen)
    drawn = [order.index(what) for _, what in footer_says(screen)]
    assert drawn == sorted(drawn), f"{what}: the footer's keys out of their order: {footer_says(screen)}"


def next_section(app) -> tuple[list[str], list[str]]:
    """The grey detail's "Next" lines (the first is its heading) and its "Automation" lines, stripped:
    right under the entry's first line, so they show without scrolling."""
    lines = text_of(app, "#grey-detail").split("\n")
    assert lines[1].startswith("Next"), lines
    end = next(i for i, line in enumerate(lines) if line.startswith("Subject"))
    section = [line.strip() for line in lines[1:end] if line.strip()]
    if "Automation" not in section:
        return section, []
    split = section.index("Automation")
    return section[:split], section[split + 1:]


def next_lines(keys: dict, moves: dict[str, list[str]]) -> list[str]:
    """The "Next" lines of a specialist's moves: the keys that make each, then the move."""
    said = {action: " ".join(keys[b] for b in ids) for action, ids in moves.items()}
    width = max(map(len, said.values()), default=0)
    return [f"{said[action]:<{width}} {action} → {REACHES[action]}" for action in moves]


# --------------------------------------------------------------------------- the grey queue, state by state

GREY_MOVES = {"Assign me": "assign_me", "Assign…": "assign", "Release": "release", "Escalate": "escalate",
              "De-escalate": "deescalate", "Resolve": "resolve", "Reject": "reject", "Reopen": "reopen",
              "Dismiss": "dismiss", "Reset": "reset"}
# The grey machine's table, as a specialist may move each state (docs/architecture.md, "Grey queue").
SPECIALIST_MOVES = {
    "Pending": {"assign": ["assign_me", "assign"], "dismiss": ["dismiss"]},
    "Processing": {"assign": ["assign_me", "assign"], "resolve": ["resolve"]},
    "Retrying": {},
    "UnderReview": {"escalate": ["escalate"], "resolve": ["resolve"], "reject": ["reject"], "unassign": ["release"]},
    "Escalated": {"resolve": ["resolve"], "reject": ["reject"], "deescalate": ["deescalate"]},
    "Rejected": {"reopen": ["reopen"]},
    "Failed": {"reset": ["reset"]},
    "Dismissed": {"reopen": ["reopen"]},
    "Resolved": {},
    "Expired": {},
}
REACHES = {"assign": "UnderReview", "dismiss": "Dismissed", "resolve": "Resolved", "escalate": "Escalated",
           "reject": "Rejected", "unassign": "Pending", "deescalate": "UnderReview", "reopen": "Pending",
           "reset": "Pending"}
DESCRIBED = {binding_id: what for what, binding_id in GREY_MOVES.items()}


def entries_in_every_state(ctx, people) -> dict[str, int]:
    """One entry in each grey state, through the engine (the automation's moves as the system)."""
    from r2k.core import engine
    from r2k.core.domain import SYSTEM
    from r2k.core.machines.grey import GREY

    sam = people["sam"]
    made = {}
    for state in SPECIALIST_MOVES:
        entry = grey.add(ctx, people["root"], f"What is unknown, {state}?", "")
        made[state] = entry["id"]
        specialist = {"UnderReview": [("assign", {"assignee": "sam"})],
                      "Escalated": [("assign", {"assignee": "sam"}), ("escalate", {"reason": "urgent"})],
                      "Resolved": [("assign", {"assignee": "sam"}), ("resolve", {})],
                      "Rejected": [("assign", {"assignee": "sam"}), ("reject", {"reason": "noise"})],
                      "Dismissed": [("dismiss", {})]}.get(state, [])
        for action, fields in specialist:
            grey.transition(ctx, sam, entry["id"], action, **fields)
        automated = {"Processing": ["process"], "Retrying": ["process", "retry"], "Failed": ["process", "fail"],
                     "Expired": ["expire"]}.get(state, [])
        with ctx.db.begin() as tx:
            for action in automated:
                changes = {"process": {"attempts": 1},
                           "retry": {"next_attempt_at": datetime.now(timezone.utc) + timedelta(minutes=7)}}.get(action, {})
                engine.apply(tx, GREY, entry["id"], action, SYSTEM, changes=changes)
    return made


@pytest.mark.parametrize("keymap", list(KEYMAPS), ids=list(KEYMAPS))
async def test_the_grey_footer_and_detail_name_each_move_by_the_key_in_force(ctx, people, keymap):
    keymap = KEYMAPS[keymap]
    check(keymap)  # a keymap file the workstation would open with
    keys = keys_for(keymap)
    made = entries_in_every_state(ctx, people)
    app = make_app(ctx, "sam", keymap=keymap, listen=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, "Y", GreyQueueScreen)
        for state, entry_id in made.items():
            await highlight(pilot, entry_id)
            moves = SPECIALIST_MOVES[state]
            expected = {(keys[b], DESCRIBED[b]) for ids in moves.values() for b in ids}
            await footer_shows_moves(pilot, screen, expected, GREY_MOVES, state)
            yours, automation = next_section(app)
            assert sorted(yours[1:]) == sorted(next_lines(keys, moves)), (state, yours)
            if state in ("Resolved", "Expired"):
                assert yours == ["Next     none: terminal"] and automation == []
            if state == "Retrying":  # no move of a person's: it says so, and when the automation acts
                entry = grey.get(ctx, entry_id)
                at = datetime.fromisoformat(entry["next_attempt_at"]).astimezone().strftime("%H:%M")
                assert re.fullmatch(rf"Next\s+automation retries at {at} \(in [78]m\); no move is yours until then",
                                    yours[0]), yours
                assert [line.split("  ")[0] for line in automation] == [
                    "process → Processing", "fail → Failed", "expire → Expired"], automation
                assert f"its next attempt at {at} (in" in automation[0] and "attempt 2 of 5" in automation[0]


async def test_a_validator_reads_that_no_grey_move_is_theirs(ctx, people):
    entry = grey.add(ctx, people["root"], "Who signs off night shifts?", "")
    app = make_app(ctx, "alice", listen=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, "Y", GreyQueueScreen)
        await highlight(pilot, entry["id"])
        await footer_shows_moves(pilot, screen, set(), GREY_MOVES, "a validator")
        yours, _ = next_section(app)
        assert yours[0] == "Next     no move is yours: a specialist, an admin or the system makes these"
        assert "assign → UnderReview  a specialist, an admin or the system" in yours


@pytest.mark.parametrize("keymap", list(KEYMAPS), ids=list(KEYMAPS))
async def test_the_grey_queues_empty_list_offers_no_move_and_its_messages_name_the_keys(ctx, people, keymap):
    from tests.tui import after, answer_modal

    keymap = KEYMAPS[keymap]
    keys = keys_for(keymap)
    app = make_app(ctx, "sam", keymap=keymap, listen=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, "Y", GreyQueueScreen)
        await footer_shows_moves(pilot, screen, set(), GREY_MOVES, "no entries")
        assert screen.query_one("#grey-search", Input).placeholder == f"Search subject or detail ({keys['search']})"
        await pilot.press(press_name(keys["dismiss"]))  # a move with nothing highlighted: said, nothing sent
        await wait_for(pilot, lambda: "No entry selected." in message(app), what="why not")
        await pilot.press("plus")
        await answer_modal(pilot, "Aisle heat", "")
        await after(pilot, f"Entry 1 added for your review (UnderReview): {keys['release']} leaves it to the automation.")


# --------------------------------------------------------------------------- the review screen, state by state

REVIEW_MOVES = {"Approve": "approve", "Revise": "revise", "Reject": "reject", "Escalate": "escalate",
                "Release": "release", "Claim next": "claim_next", "Skip": "skip", "Undo": "undo"}
REVIEW_DESCRIBED = {binding_id: what for what, binding_id in REVIEW_MOVES.items()}
DECIDING = ["approve", "revise", "reject", "escalate", "release", "skip"]


def expect(keys: dict, *binding_ids: str) -> set[tuple[str, str]]:
    return {(keys[b], REVIEW_DESCRIBED[b]) for b in binding_ids}


@pytest.mark.parametrize("keymap", list(KEYMAPS), ids=list(KEYMAPS))
async def test_the_review_footer_offers_each_move_of_the_candidate_by_the_key_in_force(ctx, people, keymap,
                                                                                       monkeypatch):
    from tests.tui import candidate_on

    keymap = KEYMAPS[keymap]
    keys = keys_for(keymap)
    users.add(ctx, "olga", "validator", ["FACT", "OPEN_ISSUE"])
    olga = users.resolve(ctx, "olga")
    first = candidates.add(ctx, people["root"], "Fact question 1?", "A plain fact number 1.", "FACT")["id"]
    second = candidates.add(ctx, people["root"], "Fact question 2?", "A plain fact number 2.", "FACT")["id"]
    issue = candidates.add(ctx, people["root"], "Is telematics data kept?",
                           "It is not yet decided whether telematics data is kept.", "OPEN_ISSUE")["id"]
    app = make_app(ctx, "olga", keymap=keymap)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_review(pilot)
        assert candidate_on(screen) == first
        await footer_shows_moves(pilot, screen, expect(keys, *DECIDING), REVIEW_MOVES, "claimed, nothing decided yet")
        assert footer_says(screen)[0] == (keys["approve"], "Approve")  # a moved key keeps its place

        await pilot.press(keys["approve"])
        await wait_for(pilot, lambda: candidate_on(screen) == second, what="the next candidate")
        await footer_shows_moves(pilot, screen, expect(keys, *DECIDING, "undo"), REVIEW_MOVES, "after a decision")

        # Taken away elsewhere (released, then claimed by bob): nothing of it is olga's to decide.
        candidates.release(ctx, olga, second)
        await wait_for(pilot, lambda: (screen.current or {}).get("state") == "PENDING", what="the release seen")
        await footer_shows_moves(pilot, screen, expect(keys, "claim_next", "undo"), REVIEW_MOVES, "released elsewhere")
        await wait_for(pilot, lambda: f"{keys['claim_next']} claims the next candidate." in message(app),
                       what="the message names the claim key")
        claims.claim_next(ctx, people["bob"], "FACT")
        await wait_for(pilot, lambda: (screen.current or {}).get("claimed_by") == "bob", what="bob's claim seen")
        await footer_shows_moves(pilot, screen, expect(keys, "claim_next", "undo"), REVIEW_MOVES, "bob's claim")
        await pilot.press(keys["reject"])
        await wait_for(pilot, lambda: "bob" in message(app) or "claimed" in message(app), what="why not, in place")
        candidates.approve(ctx, people["bob"], second)

        # The empty queue: claim next (and undo, within its window) only; the idle text names the keys.
        await pilot.press(keys["claim_next"])
        await wait_for(pilot, lambda: review_settled(screen) and candidate_on(screen) is None, what="the empty queue")
        await wait_for(pilot, lambda: text_of(app, "#idle") == f"The FACT queue is empty. {keys['claim_next']} to try "
                                                                f"again, {keys['back']} to go back.", what="idle text")
        await footer_shows_moves(pilot, screen, expect(keys, "claim_next", "undo"), REVIEW_MOVES, "the empty queue")
        await pilot.press(keys["approve"])
        await wait_for(pilot, lambda: message(app) == f"Nothing is claimed: {keys['claim_next']} claims the next "
                                                      f"candidate.", what="the decision key says why not")

        # A disputed answer's candidate, back for re-review: every decision is offered again.
        answer = registry.search(ctx, "", "APPROVED")[0]
        registry.dispute(ctx, people["alice"], answer["id"], "contradicts the dock plan")
        await pilot.press(keys["claim_next"])
        await wait_for(pilot, lambda: candidate_on(screen) is not None, what="the disputed one")
        assert (screen.current.get("answer") or {}).get("status") == "DISPUTED"
        await footer_shows_moves(pilot, screen, expect(keys, *DECIDING, "undo"), REVIEW_MOVES, "a re-review")

        # The undo window over: no undo offered.
        monkeypatch.setattr(ctx.settings, "undo_seconds", 0.5)
        await pilot.press(keys["approve"])
        await wait_for(pilot, lambda: review_settled(screen) and candidate_on(screen) is None, what="empty again")
        await footer_shows_moves(pilot, screen, expect(keys, "claim_next"), REVIEW_MOVES, "the undo window over")
        await pilot.press(keys["undo"])  # not offered, and pressed anyway: the core says why not
        await wait_for(pilot, lambda: "past the 0.5 s undo window" in message(app), what="undo says why not")

        # An open issue: never approved nor revised.
        await pilot.press(press_name(keys["back"]))
        await wait_for(pilot, lambda: not isinstance(app.screen, ReviewScreen), what="back at the queues")
        screen = await open_review(pilot, "OPEN_ISSUE")
        assert candidate_on(screen) == issue
        await footer_shows_moves(pilot, screen, expect(keys, "reject", "escalate", "release", "skip"), REVIEW_MOVES,
                                 "an open issue")


# --------------------------------------------------------------------------- help: every key, in order, ids whole

@pytest.mark.parametrize("keymap", list(KEYMAPS), ids=list(KEYMAPS))
async def test_help_lists_the_screens_keys_in_the_footers_order_then_the_keys_for_everywhere(ctx, people, keymap):
    keymap = KEYMAPS[keymap]
    keys = keys_for(keymap)
    grey.add(ctx, people["root"], "Who signs off night shifts?", "")
    app = make_app(ctx, "sam", keymap=keymap, listen=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_screen(pilot, "Y", GreyQueueScreen)
        await pilot.press(press_name(keys["help"]))
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        table = app.screen.query_one("#help-keys", DataTable)
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        ids = [row[3] for row in rows]
        declared = [b.id for b in GreyQueueScreen.BINDINGS]
        assert ids[:len(declared)] == declared  # the screen's own, as declared (and drawn in the footer)
        everywhere = [row[3] for row in rows if row[2] == "everywhere" and row[3]]
        assert everywhere == [b.id for b in type(app).BINDINGS]
        assert all(row[2].startswith("this screen") for row in rows[:ids.index("help")])
        for row in rows:
            if row[3] in keys:
                assert row[0].split()[0] == keys[row[3]], row
        # Every id drawn whole at 80 columns (the keymap file names them): scroll each row into view.
        def drawn() -> str:
            return "\n".join(strip.text for strip in app.screen._compositor.render_strips())

        for i, row in enumerate(rows):
            if row[3]:
                table.move_cursor(row=i, animate=False)
                await wait_for(pilot, lambda: re.search(rf"(?<![\w]){re.escape(row[3])}(?![\w])", drawn()),
                               what=f"the id {row[3]} whole on screen")
        assert "f1 opens this help even from a text box" in text_of(app, "#help-hint")


# --------------------------------------------------------------------------- every screen, empty and not

def keys_in_force(binding, keymap: dict, app) -> str:
    """The key a binding runs on, as the footer writes it: a keymap's first for its id, else its own."""
    from textual.binding import Binding

    if binding.id in keymap:
        return app.get_key_display(Binding(keymap[binding.id].split(",")[0], ""))
    return app.get_key_display(binding)


def footer_names_keys_in_force(screen, keymap: dict) -> None:
    """Every key the footer draws is its binding's key in force, in the order declared, within 80 columns."""
    app = screen.app
    bindings: dict = {}
    widgets = [type(widget) for widget in screen.query("*")]  # a table's own keys (the queue picker's enter)
    for cls in [type(screen), type(app), *widgets]:
        for b in getattr(cls, "BINDINGS", ()):
            if hasattr(b, "description"):
                bindings.setdefault(b.description, b)  # the first of one description (? before f1)
    said = footer_says(screen)
    assert said, f"{type(screen).__name__}: an empty footer"
    for key, what in said:
        if what not in bindings:  # Textual's own command palette key, on the right (My work)
            assert (key, what) == ("^p", "palette"), f"{type(screen).__name__}: {key} {what}"
            continue
        assert key == keys_in_force(bindings[what], keymap, app), f"{type(screen).__name__}: {key} {what}"
    order = declared_order(screen)
    drawn = [order.index(what) for _, what in said if what in order]
    assert drawn == sorted(drawn), f"{type(screen).__name__}: out of order: {said}"
    assert footer_fits(screen), f"{type(screen).__name__}: wider than 80 columns: {said}"


ITEM_MOVES = {"ConflictsScreen": {"Escalate", "Dismiss"}, "RegistryScreen": {"Supersede", "Dispute", "Retire"},
              "WorkItemsScreen": {"Generate", "Rework", "Close", "Resubmit"},
              "ArticlesScreen": {"Submit", "Assign…", "Approve", "Reject", "Resolve", "Deprecate"}}
OTHERS_MOVED = {**MOVED, "supersede": "P", "generate": "ctrl+g", "refresh": "f5"}


@pytest.mark.parametrize("keymap", ["shipped", "moved"])
async def test_every_screen_names_its_keys_in_force_with_nothing_listed_and_with_items(ctx, people, keymap):
    from r2k.app.screens.articles import ArticlesScreen
    from r2k.app.screens.conflicts import ConflictsScreen
    from r2k.app.screens.dashboard import DashboardScreen
    from r2k.app.screens.mywork import MyWorkScreen
    from r2k.app.screens.queues import QueuePickerScreen
    from r2k.app.screens.registry import RegistryScreen
    from r2k.app.screens.workitems import WorkItemsScreen
    from r2k.core.services import tasks
    from r2k.core.services.answering import workitems
    from tests.test_tui_articles import ready
    from tests.test_tui_conflicts import counted, flag_pair
    from tests.tui import loaded

    keymap = {} if keymap == "shipped" else OTHERS_MOVED
    check(keymap)
    app = make_app(ctx, "root", keymap=keymap)
    screens = [("D", DashboardScreen, loaded), ("V", QueuePickerScreen, loaded), ("C", ConflictsScreen, counted),
               ("G", RegistryScreen, loaded), ("W", WorkItemsScreen, loaded), ("T", ArticlesScreen, ready),
               ("m", MyWorkScreen, lambda s: True)]
    async with app.run_test(size=(80, 24)) as pilot:
        for key, cls, ready_when in screens:  # nothing listed: no move offered
            screen = await open_screen(pilot, key, cls, ready=ready_when)
            await pilot.pause(0.2)
            footer_names_keys_in_force(screen, keymap)
            offered = {what for _, what in footer_says(screen)} & ITEM_MOVES.get(cls.__name__, set())
            assert not offered, f"{cls.__name__} offers {offered} with nothing listed"

        _, _, flag_id = flag_pair(ctx, people)
        item = workitems.create(ctx, people["root"], "How many docks are there?")
        task = tasks.create(ctx, people["root"], "Backups", "Nightly database backups are kept for 30 days.\n")
        expected = {"ConflictsScreen": {"Escalate", "Dismiss"}, "RegistryScreen": {"Supersede", "Dispute", "Retire"},
                    "WorkItemsScreen": {"Generate", "Close"}, "ArticlesScreen": {"Submit"}}
        listed = {"ConflictsScreen": flag_id, "WorkItemsScreen": item["id"], "ArticlesScreen": task["id"]}
        for key, cls, ready_when in screens:  # with items: the highlighted one's moves, by their keys in force
            screen = await open_screen(pilot, key, cls, ready=ready_when)
            if cls.__name__ in listed:
                await wait_for(pilot, lambda: listed[cls.__name__] in screen.rows, what=f"{cls.__name__}'s row")
            moves = expected.get(cls.__name__, set())
            await wait_for(pilot, lambda: moves <= {what for _, what in footer_says(screen)},
                           what=f"{cls.__name__} offering {moves}")
            footer_names_keys_in_force(screen, keymap)


# --------------------------------------------------------------------------- no key letter written into a message

# A key named in words a user reads: "n to try again", "(/)", "u releases it", "escape to cancel".
_KEY = r"(?:[a-zA-Z]|esc|escape|enter|ctrl\+\w+|f\d{1,2}|[?+/\[\]])"
KEY_IN_WORDS = re.compile(rf"(?:^|[\s(:,.]){_KEY}\s(?:to|claims|opens|releases|leaves|goes|creates|closes|lists|"
                          rf"cancels|then|tries|next|previous)\b|\({_KEY}\)")
APP = Path(__file__).resolve().parent.parent / "app"


def words_a_user_reads(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module, f-strings' literal parts included, less docstrings."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


@pytest.mark.parametrize("path", [pytest.param(p, id=str(p.relative_to(APP))) for p in sorted(APP.rglob("*.py"))
                                  if not {"remote", "commands", "handlers"} & set(p.parts)])
def test_no_message_writes_a_key_in_letters(path):
    """Every key a message names comes from the bindings in force (WorkstationScreen.key, keymap.key_of),
    so a keymap file changes the words too; the command line and the remote servers name no keys."""
    found = [(line, text) for line, text in words_a_user_reads(path) if KEY_IN_WORDS.search(text)]
    assert not found, f"{path.name} writes keys into its words: {found}"


@pytest.mark.parametrize("name", list(KEYMAPS) + ["cancel moved"])
async def test_the_dialogs_name_the_keys_in_force(ctx, people, name):
    """A dialog's words ("esc to cancel", "⏎: next field") follow a keymap file that moves its keys."""
    keymap = check({"cancel": "f3"}) if name == "cancel moved" else check(KEYMAPS[name])
    cancel = "f3" if name == "cancel moved" else "esc"
    app = make_app(ctx, "sam", keymap=keymap, listen=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await open_screen(pilot, "Y", GreyQueueScreen)
        await pilot.press("plus")
        await wait_for(pilot, lambda: app.screen.query(".fields-keys"), what="the Add dialog")
        assert text_of(app, ".fields-keys") == f"⏎: next field / confirm  ·  {cancel}: cancel, nothing changes"
        await pilot.press("enter", "enter")  # no subject: refused in place, with the key that cancels
        await wait_for(pilot, lambda: text_of(app, ".fields-error"), what="the refusal")
        assert text_of(app, ".fields-error") == f"Subject: what is unknown is required ({cancel} cancels)."
        await pilot.press(cancel if cancel != "esc" else "escape")
        await wait_for(pilot, lambda: isinstance(app.screen, GreyQueueScreen), what="the dialog cancelled")
        assert grey.list_entries(ctx) == []
