"""Your progress: `core.services.operations.stats`, `r2k stats` and the workstation's "My work" screen, on
decisions made through the core services."""
from __future__ import annotations

import json

import pytest

from r2k.core.errors import Forbidden, InvalidInput, NotFound
from r2k.core.services.answers import registry
from r2k.core.services.operations import stats
from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates
from tests.conftest import error_of, r2k, r2k_json
from tests.tui import cell_text, make_app, open_screen, text_of, wait_for


def _add(ctx, people, n: int, horn: str = "FACT") -> list[int]:
    return [candidates.add(ctx, people["root"], f"Question {horn} {i}?", f"Answer {i}.", horn)["id"]
            for i in range(n)]


def _work(ctx, people) -> dict:
    """alice approves two, revises one, rejects one and escalates one (FACT); bob approves one.
    One of alice's answers is disputed, another superseded."""
    _add(ctx, people, 7)
    alice, bob = people["alice"], people["bob"]
    answers = []
    for action, extra in [("approve", {}), ("approve", {}), ("revise", {"text": "Better."}),
                          ("reject", {"reason": "wrong"}), ("escalate", {"reason": "unsure"})]:
        claimed = claims.claim_next(ctx, alice, "FACT")
        done = getattr(candidates, action)(ctx, alice, claimed["id"], **extra)
        if done.get("answer"):
            answers.append(done["answer"]["id"])
    claimed = claims.claim_next(ctx, bob, "FACT")
    candidates.approve(ctx, bob, claimed["id"])
    registry.dispute(ctx, bob, answers[0], "the gate opens at seven now")
    registry.supersede(ctx, bob, answers[1], "A newer answer.", "policy changed")
    return {"answers": answers}


def test_a_validators_figures_count_their_own_decisions(ctx, people):
    _work(ctx, people)
    mine = stats.user_stats(ctx, people["alice"])
    assert mine["user"] == "alice"
    assert mine["today"] == {"approve": 2, "revise": 1, "reject": 1, "escalate": 1, "total": 5}
    assert mine["window"] == mine["today"]
    assert sum(mine["hourly"]) == 5 and mine["hourly"][mine["current_hour"]] == 5 and len(mine["hourly"]) == 24
    assert mine["median_seconds"] is not None and 0 <= mine["median_seconds"] < 60
    assert mine["approvals"] == {"published": 3, "disputed": 1, "superseded": 1}
    assert [q["horn_type"] for q in mine["queues"]] == ["FACT", "RULE"]  # the Horn types alice holds
    fact = mine["queues"][0]
    # One left pending, plus the disputed candidate back in the queue for re-review.
    assert fact["depth"] == 2 and fact["oldest_age_seconds"] is not None
    assert fact["team_rate_per_hour"] == 6.0  # six decisions on FACT in the last hour, by anyone
    assert fact["time_left_seconds"] == round(2 / 6 * 3600)
    rule = mine["queues"][1]
    assert rule == {"horn_type": "RULE", "depth": 0, "oldest_age_seconds": None, "team_rate_per_hour": 0.0,
                    "time_left_seconds": 0}


def test_an_undone_decision_does_not_count(ctx, people):
    from r2k.core.services.queue import undo

    _add(ctx, people, 2)
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    candidates.reject(ctx, people["alice"], claimed["id"], "wrong")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    candidates.approve(ctx, people["alice"], claimed["id"])
    undo.undo(ctx, people["alice"], claimed["id"])
    mine = stats.user_stats(ctx, people["alice"])
    assert mine["today"] == {"approve": 0, "revise": 0, "reject": 1, "escalate": 0, "total": 1}
    assert sum(mine["hourly"]) == 1
    assert mine["approvals"]["published"] == 0  # its answer was retired as undone
    team = {r["user"]: r for r in stats.team_stats(ctx, people["root"])["validators"]}
    assert team["alice"]["total"] == 1 and team["alice"]["approve"] == 0


def test_someone_with_no_decisions_sees_zeros(ctx, people):
    _add(ctx, people, 2, "PROCEDURE")
    mine = stats.user_stats(ctx, people["vera"], since="30m")
    assert mine["today"]["total"] == 0 and mine["median_seconds"] is None and sum(mine["hourly"]) == 0
    assert mine["approvals"] == {"published": 0, "disputed": 0, "superseded": 0}
    procedure = next(q for q in mine["queues"] if q["horn_type"] == "PROCEDURE")
    assert procedure["depth"] == 2 and procedure["time_left_seconds"] is None  # nobody is deciding: no estimate


def test_a_validator_sees_only_their_own_figures(ctx, people):
    _work(ctx, people)
    with pytest.raises(Forbidden, match="only their own"):
        stats.user_stats(ctx, people["bob"], user="alice")
    with pytest.raises(Forbidden, match="only an admin"):
        stats.team_stats(ctx, people["alice"])
    assert stats.user_stats(ctx, people["bob"], user="bob")["today"]["approve"] == 1


def test_an_admin_sees_anyone_and_the_table(ctx, people):
    _work(ctx, people)
    assert stats.user_stats(ctx, people["root"], user="alice")["today"]["total"] == 5
    with pytest.raises(NotFound, match="no user named 'zed'"):
        stats.user_stats(ctx, people["root"], user="zed")
    team = stats.team_stats(ctx, people["root"])
    rows = {r["user"]: r for r in team["validators"]}
    assert set(rows) == {"alice", "bob", "vera"}
    assert rows["alice"]["total"] == 5 and rows["alice"]["approve"] == 2 and rows["alice"]["today"] == 5
    assert rows["alice"]["disputed"] == 1 and rows["alice"]["superseded"] == 1
    assert rows["bob"]["total"] == 1 and rows["vera"]["total"] == 0 and rows["vera"]["median_seconds"] is None
    assert [q["horn_type"] for q in team["queues"]] == ["FACT", "RULE", "CONSTRAINT", "PROCEDURE", "OPEN_ISSUE"]


@pytest.mark.parametrize("since", ["", "7", "d7", "7y", "-1d", "0m", "99999d", "1.5h", "seven days"])
def test_a_bad_since_is_a_400_that_says_what_is_expected(ctx, people, since):
    with pytest.raises(InvalidInput, match="--since"):
        stats.user_stats(ctx, people["alice"], since=since)


@pytest.mark.parametrize("since,seconds", [("30m", 1800), ("12h", 43200), ("7d", 604800), ("2W", 1209600)])
def test_since_reads_minutes_hours_days_and_weeks(since, seconds):
    assert stats.parse_since(since).total_seconds() == seconds


# ----------------------------------------------------------------------------- the command

def test_stats_prints_a_sparkline_and_the_queues(ctx, people):
    _work(ctx, people)
    result = r2k("--as", "alice", "stats")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "alice" in out and "approve 2" in out and "total 5" in out
    assert any(ch in out for ch in "▁▂▃▄▅▆▇█")  # the rate per hour over the day
    assert "disputed 1" in out and "superseded 1" in out
    assert "FACT" in out and "RULE" in out


def test_stats_json_is_the_service_result(ctx, people):
    _work(ctx, people)
    data = r2k_json("--as", "alice", "stats", "--since", "2w")
    assert data["user"] == "alice" and data["since_text"] == "2w"
    assert data["today"]["total"] == 5 and len(data["hourly"]) == 24
    assert data["approvals"] == {"published": 3, "disputed": 1, "superseded": 1}


def test_stats_for_an_admin_is_the_team_table(ctx, people):
    _work(ctx, people)
    out = r2k("--as", "root", "stats").stdout
    assert "USER" in out and "alice" in out and "bob" in out and "vera" in out
    assert r2k_json("--as", "root", "stats", "--all")["validators"][0]["user"] == "alice"
    assert r2k_json("--as", "root", "stats", "--user", "bob")["today"]["approve"] == 1


def test_stats_all_and_user_together_is_a_400(ctx, people):
    result = r2k("--as", "root", "stats", "--all", "--user", "alice")
    assert result.returncode == 6
    assert error_of(result)["message"] == "--all and --user cannot go together: --all shows every validator"


def test_stats_refuses_another_validator_and_a_bad_since(ctx, people):
    refused = r2k("--as", "bob", "stats", "--user", "alice")
    assert refused.returncode == 7
    assert refused.stderr.startswith("r2k: forbidden (403): bob (validator) may see only their own figures")
    assert r2k("--as", "bob", "stats", "--all").returncode == 7
    bad = r2k("--as", "bob", "stats", "--since", "soon")
    assert bad.returncode == 6 and "--since is a duration such as 30m, 12h, 7d or 2w" in error_of(bad)["message"]
    assert json.loads(r2k("--json", "--as", "bob", "stats", "--since", "soon").stderr)["status"] == 400


# ----------------------------------------------------------------------------- the "My work" screen

def _figures_in(screen) -> bool:
    return screen.has_class("loaded")


async def _open_my_work(pilot):
    from r2k.app.screens.mywork import MyWorkScreen

    return await open_screen(pilot, "m", MyWorkScreen, ready=_figures_in)


async def test_my_work_shows_your_figures_as_the_core_counts_them(ctx, people):
    from textual.widgets import DataTable, Sparkline

    _work(ctx, people)
    app = make_app(ctx, "alice", listen=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_my_work(pilot)
        mine = stats.user_stats(ctx, people["alice"])
        assert "My work · alice" in text_of(app, "#mw-title")
        today = text_of(app, "#mw-today")
        assert [line.split() for line in today.splitlines()] == [["Today"],
            ["Approve", "2"], ["Revise", "1"], ["Reject", "1"], ["Escalate", "1"], ["Total", "5"]]
        figures = text_of(app, "#mw-figures")
        assert "disputed    1 since" in figures and "superseded  1 since" in figures
        assert "Approved      3 answers" in figures
        assert list(screen.query_one("#mw-sparkline", Sparkline).data) == mine["hourly"]
        queues = screen.query_one("#mw-queues", DataTable)
        assert [queues.get_row_at(i)[0] for i in range(queues.row_count)] == ["FACT", "RULE"]
        assert queues.get_row_at(0)[1] == "2" and queues.get_row_at(0)[3] == "6/h"
        assert queues.get_row_at(1)[4] == "empty"
        assert not screen.query_one("#mw-team", DataTable).display  # a validator sees no one else's

        # Someone decides meanwhile: ctrl+r reads the figures again.
        claimed = claims.claim_next(ctx, people["alice"], "FACT")
        candidates.approve(ctx, people["alice"], claimed["id"])
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: "Total 6" in " ".join(text_of(app, "#mw-today").split()), what="6 today")
        await pilot.press("escape")
        await wait_for(pilot, lambda: type(app.screen).__name__ != "MyWorkScreen", what="back")


async def test_an_admin_sees_every_validator_on_my_work(ctx, people):
    from textual.widgets import DataTable

    _work(ctx, people)
    app = make_app(ctx, "root", listen=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_my_work(pilot)
        team = screen.query_one("#mw-team", DataTable)
        assert team.display
        rows = {cell_text(team.get_row_at(i)[0]): team.get_row_at(i) for i in range(team.row_count)}
        assert set(rows) == {"alice", "bob", "vera"}
        assert rows["alice"][6] == "5" and rows["alice"][8] == "1" and rows["alice"][9] == "1"


SPARK = [0, 0, 0, 0, 0, 0, 0, 0, 2, 5, 7, 4, 1, 6, 8, 3, 0, 0, 0, 0, 0, 0, 0, 0]


async def _settle_my_work(pilot):
    """Open My work and fix the figures that depend on when and how fast the test ran: the hour
    (the sparkline's bars, the rate today) and the seconds each decision took."""
    from r2k.app.screens.mywork import Figures

    screen = await _open_my_work(pilot)
    mine = {**screen.figures.mine, "hourly": SPARK, "current_hour": 14, "rate_per_hour_today": 2.4,
            "median_seconds": 12.0, "queues": [{**q, "oldest_age_seconds": 30 if q["depth"] else None}
                                               for q in screen.figures.mine["queues"]]}
    screen.figures = Figures(mine, screen.figures.team)
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_snapshot_my_work(ctx, people, snap_compare, size):
    _work(ctx, people)
    assert snap_compare(make_app(ctx, "alice", listen=False), terminal_size=size, run_before=_settle_my_work)
