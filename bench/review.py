"""Review latency and opening times (issue: validation end to end, item 8; issue 31).

The queue reviewed is full: the RULE queue holds the million bulk candidates (COPY'd, as
bench/scale.py loads its own: `scale.copy_candidates`), queued behind the demo's RULE candidates
the bench reviews, and the workstation runs with its live listener on (the pub/sub notices of
every claim and decision reach it and its screens, as at a desk).

1. Approve → next candidate rendered: the workstation runs headless under Pilot as validator `ada`
   on the RULE queue (real demo candidates with their sources). For each approval the clock starts
   when the approve action begins and stops when the review screen has drawn the next candidate
   (the bench wraps the screen's draw, `watch_current`, to see it) and the frame showing it is out.
   Median and p95 of 40; target median < 50 ms.
2. The first draws: from asking for the queue picker until its counts are shown, and from enter on
   the queue until the claimed candidate is shown (median of 5 each; target < 1 s), each beside a
   floor timed in the same rounds: a bare screen (one Static) pushed until its first frame is out,
   the least any screen's first draw costs in this app. `--draws-only` times just these on a data
   dir already loaded (`R2K_DATA_DIR`; bench/scale.py `--keep` leaves one of 10,000,000), as
   `--user` on `--horn`.
3. Undo → the candidate shown again: approve, then `z`; the clock starts when the undo action
   begins and stops when the undone candidate (the new one, claimed) is rendered. Median and p95
   of `--undos`; target median < 100 ms.
4. With 1,000,000 decisions in the database (validation records over 30 days by 20 validators, a
   twentieth of them `ada`'s): the time from opening the "My work" screen until its figures are
   shown (median of 5; target < 1 s).
5. With the million candidates queued: one whole sweep (what a worker runs every
   R2K_SWEEP_INTERVAL, 15 s: leases, ids in flight, queues that miss ids, grey entries, lost jobs;
   median of 3; target < 5 s, well inside the interval and the sweep's 10 s lock), beside its floor
   measured in the same run: one count of each Horn type's queued rows.

The million candidates and the million decisions are written once with INSERT … SELECT (setup
speed) into the bench's own data dir and reused by later runs.

    python bench/review.py [--approvals 40] [--undos 20] [--million 1000000] [--decisions 1000000]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import time

from _common import bench_env, median, percentile, vacuum, verdict

BULK_RANK = 9 * 10**15  # the bulk candidates' queue rank: behind every candidate made the usual way


def setup(million: int, approvals: int) -> None:
    from scale import copy_candidates

    from r2k.core.bootstrap import bootstrap
    from r2k.core.domain import SYSTEM
    from r2k.core.services.operations.demo import load
    from r2k.core.services.queue import queue_index
    from r2k.core.services.validation import candidates

    ctx = bootstrap()
    load(ctx, by=SYSTEM)
    with ctx.db.read() as tx:
        have = tx.scalar("SELECT count(*) FROM candidates WHERE created_by = 'bench-million'")
    for start in range(have + 1, million + 1, 500_000):  # the full queue: COPY, not the service layer
        copy_candidates(ctx, "RULE", "bench-million", start, min(start + 499_999, million), rank=BULK_RANK)
    with ctx.db.begin() as tx:
        # Fresh RULE candidates for the approvals, copied from the demo's own (same sources).
        # Whatever earlier runs left claimed goes back.
        tx.execute("UPDATE candidates SET state = 'PENDING', claimed_by = NULL WHERE state = 'IN_REVIEW' "
                   "AND claimed_by = 'ada'")
        demo = tx.all("SELECT question, text, source_refs, document_id FROM candidates WHERE horn_type = 'RULE' "
                      "AND origin = 'extracted' ORDER BY id LIMIT 50")
        created = []
        for i in range(approvals + 5):
            src = demo[i % len(demo)]
            created.append(candidates.create_candidate(tx, SYSTEM, src["question"], src["text"], "RULE",
                                                       src["source_refs"], origin="extracted",
                                                       document_id=src["document_id"]))
    vacuum("candidates")
    queue_index.reconcile(ctx)
    ctx.close()


def setup_decisions(decisions: int) -> None:
    """`decisions` validation records on the bulk candidates, spread over the last 30 days, by ada
    and 19 others: what "My work" reads with a busy team's history."""
    from r2k.core.bootstrap import bootstrap

    ctx = bootstrap()
    with ctx.db.begin() as tx:
        have = tx.scalar("SELECT count(*) FROM validation_records WHERE reason = 'bench-decision'")
        bulk = tx.one("SELECT min(id) AS first, count(*) AS n FROM candidates WHERE created_by = 'bench-million'")
        if have < decisions and bulk["n"]:
            tx.execute(
                "INSERT INTO validation_records (candidate_id, action, actor, from_state, to_state, reason, "
                "created_at, version) SELECT %s + (g %% %s), k.action, "
                "CASE WHEN g %% 20 = 0 THEN 'ada' ELSE 'bench-v' || (g %% 20) END, 'IN_REVIEW', k.state, "
                "'bench-decision', now() - g * interval '2.592 seconds', 1 "
                "FROM generate_series(%s, %s) AS g, LATERAL (SELECT (ARRAY['approve','approve','approve','reject',"
                "'escalate','revise'])[1 + g %% 6] AS action, (ARRAY['APPROVED','APPROVED','APPROVED','REJECTED',"
                "'ESCALATED','REVISED'])[1 + g %% 6] AS state) AS k", (bulk["first"], bulk["n"], have + 1, decisions))
    vacuum("validation_records")
    ctx.close()


async def measure_my_work(rounds: int = 5) -> list[float]:
    """From asking for "My work" to its figures shown, a fresh screen each time."""
    from r2k.app.screens.mywork import MyWorkScreen
    from r2k.app.tui import R2KApp

    app = R2KApp(user="ada", listen=False, sweep_every=0)
    times = []
    async with app.run_test(size=(120, 40)):
        await until(lambda: app.actor is not None)
        for _ in range(rounds):
            t0 = time.perf_counter()
            app.open_screen("mywork")
            await until(lambda: isinstance(app.screen, MyWorkScreen) and app.screen.has_class("loaded"))
            times.append(time.perf_counter() - t0)
            app.pop_screen()
            await until(lambda: not isinstance(app.screen, MyWorkScreen))
            # Back on the dashboard, which reloads its counts over the million candidates: let it
            # settle, so the next opening is timed from a screen at rest, as a user opens it.
            await asyncio.sleep(2.0)
    return times


def report_sweep(rounds: int = 3) -> None:
    from r2k.core.bootstrap import bootstrap
    from r2k.core.domain import HORN_TYPES
    from r2k.core.services.operations import sweeps

    ctx = bootstrap()
    swept, floor = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        done = sweeps.sweep_all(ctx)
        swept.append(time.perf_counter() - t0)
        if "skipped" in done:
            raise SystemExit(f"the sweep did not run: {done['skipped']}")
        t0 = time.perf_counter()
        with ctx.db.read() as tx:
            for horn in HORN_TYPES:
                tx.scalar("SELECT count(*) FROM candidates WHERE horn_type = %s AND state IN ('PENDING', 'DISPUTED')",
                          (horn,))
        floor.append(time.perf_counter() - t0)
    ctx.close()
    print(f"sweep (leases, queues, grey, jobs)   median {median(swept) * 1000:6.1f} ms   (target < 5000 ms: "
          f"{verdict(median(swept), 5.0)}; the floor, a count of each Horn type's queued rows: "
          f"{median(floor) * 1000:.1f} ms)")


def report_my_work(decisions: int) -> None:
    from r2k.core.bootstrap import bootstrap

    setup_decisions(decisions)
    with bootstrap().db.read() as tx:
        decided = tx.scalar("SELECT count(*) FROM validation_records")
    my_work = median(asyncio.run(measure_my_work()))
    print(f"open My work (figures shown)         median {my_work * 1000:6.1f} ms   "
          f"(target < 1000 ms: {verdict(my_work, 1.0)}; {decided:,} decisions in the database)")


async def until(predicate, timeout: float = 60.0) -> None:
    """Wait, a millisecond at a time, until `predicate()` holds; give up after `timeout` seconds."""
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise SystemExit("timed out")
        await asyncio.sleep(0.001)


async def measure(approvals: int, undos: int, listen: bool = True) -> dict:
    from r2k.app.tui import R2KApp

    app = R2KApp(user="ada", listen=listen, sweep_every=0)  # no sweep in the middle of a timing
    async with app.run_test(size=(140, 45)) as pilot:
        await until(lambda: app.actor is not None)
        picker_times, review_times, floor_times = await first_draws(app, pilot, until, "RULE")

        # The clock runs inside the app: from the approve action's start to the end of the draw of
        # the next candidate (Pilot's own waiting after a key press is not the user's wait). The
        # screen's draw is its watcher of `current`, wrapped on this screen alone: it counts the
        # draws and notes which candidate each drew (None: the idle pane).
        screen = app.screen
        started: list[float] = []
        rendered: list[float] = []
        drawn = {"count": 0, "id": screen.current["id"]}
        approve, draw = screen.action_approve, screen.watch_current

        def timed_approve():
            started.append(time.perf_counter())
            approve()

        def timed_draw(data):
            draw(data)
            drawn["count"] += 1
            drawn["id"] = data["id"] if data is not None else None
            if data is not None:
                # ... and the frame that shows it: after the next screen refresh.
                app.call_after_refresh(lambda: rendered.append(time.perf_counter()))

        screen.action_approve, screen.watch_current = timed_approve, timed_draw
        # The core's part of each: its call, timed where the screen's worker makes it.
        from r2k.core.services.queue import claims, undo as undo_service

        core: dict[str, list[float]] = {"approve": [], "undo": []}

        def timing(name, fn):
            def timed_call(*args, **kwargs):
                t0 = time.perf_counter()
                try:
                    return fn(*args, **kwargs)
                finally:
                    core[name].append(time.perf_counter() - t0)
            return timed_call

        claims.decide_and_next = timing("approve", claims.decide_and_next)
        undo_service.undo_and_show = timing("undo", undo_service.undo_and_show)

        def next_drawn(count: int, shown, frames: int | None = None) -> bool:
            """Something other than candidate `shown` drawn since `count` draws, with no call in flight;
            given `frames`, a candidate, and the frame showing it out."""
            moved = drawn["count"] > count and drawn["id"] != shown and not screen.busy
            return moved and (frames is None or (drawn["id"] is not None and len(rendered) > frames))

        latencies = []
        for _ in range(approvals):
            count, shown, frames = drawn["count"], drawn["id"], len(rendered)
            await pilot.press("a")
            await until(lambda: next_drawn(count, shown, frames))
            latencies.append(rendered[-1] - started[-1])

        # Undo: approve the candidate shown (its next appears), then z brings it back as a new one.
        undo_started: list[float] = []
        undo = screen.action_undo

        def timed_undo():
            undo_started.append(time.perf_counter())
            undo()

        screen.action_undo = timed_undo
        undo_latencies = []
        for _ in range(undos):
            count, shown = drawn["count"], drawn["id"]
            await pilot.press("a")
            await until(lambda: next_drawn(count, shown))
            count, shown, frames = drawn["count"], drawn["id"], len(rendered)
            await pilot.press("z")
            await until(lambda: next_drawn(count, shown, frames))
            undo_latencies.append(rendered[-1] - undo_started[-1])
    approvals_core = core["approve"][:approvals]  # the undo rounds' approvals are not these
    return {"picker": picker_times, "review": review_times, "floor": floor_times, "approve": latencies,
            "undo": undo_latencies, "approve core": approvals_core, "undo core": core["undo"]}


async def first_draws(app, pilot, until, horn: str, rounds: int = 5) -> tuple[list, list, list]:
    """The queue picker's first draw (its counts shown), the review screen's (the claimed candidate
    shown) after enter on `horn`, and the floor (a bare screen's first frame), `rounds` each,
    alternating; the review screen is left open after the last round."""
    from textual.screen import Screen
    from textual.widgets import Static

    from r2k.app.screens.queues import QueuePickerScreen
    from r2k.app.screens.review import ReviewScreen
    from r2k.core.domain import HORN_TYPES

    class Bare(Screen):
        def compose(self):
            yield Static("floor")

    picker_times, review_times, floor_times = [], [], []
    for round_ in range(rounds):
        drawn: list[float] = []
        bare = Bare()
        t0 = time.perf_counter()
        app.push_screen(bare)
        await until(lambda bare=bare: app.screen is bare and bare.is_mounted)
        app.call_after_refresh(lambda drawn=drawn: drawn.append(time.perf_counter()))
        await until(lambda drawn=drawn: drawn)
        floor_times.append(drawn[0] - t0)
        app.pop_screen()
        await until(lambda bare=bare: app.screen is not bare)
        t0 = time.perf_counter()
        app.open_screen("queues")
        await until(lambda: isinstance(app.screen, QueuePickerScreen) and getattr(app.screen, "stats", None))
        picker_times.append(time.perf_counter() - t0)
        table = app.screen.query_one("#queue-table")
        table.move_cursor(row=HORN_TYPES.index(horn))
        t0 = time.perf_counter()
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, ReviewScreen) and app.screen.current is not None
                    and not app.screen.busy)
        review_times.append(time.perf_counter() - t0)
        if round_ < rounds - 1:  # back to the dashboard, so the next open builds the screens afresh
            await pilot.press("escape")
            await until(lambda: isinstance(app.screen, QueuePickerScreen))
            app.pop_screen()
            await until(lambda: not isinstance(app.screen, QueuePickerScreen))
    return picker_times, review_times, floor_times


async def measure_draws(user: str, horn: str) -> dict:
    from r2k.app.tui import R2KApp

    app = R2KApp(user=user, listen=True, sweep_every=0)
    async with app.run_test(size=(140, 45)) as pilot:
        await until(lambda: app.actor is not None)
        picker, review, floor = await first_draws(app, pilot, until, horn)
    return {"picker": picker, "review": review, "floor": floor}


def report_draws(result: dict, total: int, queued: int) -> None:
    picker, review, floor = median(result["picker"]), median(result["review"]), median(result["floor"])
    rounds = {k: " ".join(f"{v * 1000:.1f}" for v in result[k]) for k in ("picker", "review", "floor")}
    print(f"open queue picker (counts shown)     median {picker * 1000:6.1f} ms   floor {floor * 1000:5.1f} ms   "
          f"(target < 1000 ms: {verdict(picker, 1.0)}; rounds {rounds['picker']})")
    print(f"open review screen (candidate shown) median {review * 1000:6.1f} ms   floor {floor * 1000:5.1f} ms   "
          f"(target < 1000 ms: {verdict(review, 1.0)}; rounds {rounds['review']})")
    print(f"floor: a bare screen's first frame, rounds {rounds['floor']}; {total:,} candidates in the "
          f"database, {queued:,} in the queue opened; load average {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--approvals", type=int, default=40)
    parser.add_argument("--undos", type=int, default=20)
    parser.add_argument("--million", type=int, default=1_000_000)
    parser.add_argument("--decisions", type=int, default=1_000_000)
    parser.add_argument("--only-my-work", action="store_true", help="time only the My work screen")
    parser.add_argument("--draws-only", action="store_true", help="time only the first draws, on R2K_DATA_DIR as it is")
    parser.add_argument("--no-listen", action="store_true", help="the live listener off (as this bench ran before)")
    parser.add_argument("--user", default="bench")
    parser.add_argument("--horn", default="FACT")
    args = parser.parse_args()
    bench_env("review")
    if args.draws_only:
        from r2k.core.bootstrap import bootstrap
        from r2k.core.services.queue import queue_index

        ctx = bootstrap()
        with ctx.db.read() as tx:
            total = tx.scalar("SELECT count(*) FROM candidates")
        queued = queue_index.queue(ctx).length(args.horn)
        ctx.close()
        report_draws(asyncio.run(measure_draws(args.user, args.horn)), total, queued)
        return
    if args.only_my_work:
        setup(args.million, 0)
        report_my_work(args.decisions)
        return
    setup(args.million, args.approvals)
    from r2k.core.bootstrap import bootstrap
    from r2k.core.services.queue import queue_index

    ctx = bootstrap()
    with ctx.db.read() as tx:
        total = tx.scalar("SELECT count(*) FROM candidates")
    queued = queue_index.queue(ctx).length("RULE")
    ctx.close()
    result = asyncio.run(measure(args.approvals, args.undos, listen=not args.no_listen))
    approve = [v * 1000 for v in result["approve"]]
    p50, p95 = median(approve), percentile(approve, 95)
    print(f"candidates in the database: {total:,}; in the RULE queue reviewed: {queued:,}; "
          f"live listener {'off' if args.no_listen else 'on'}; load average {os.getloadavg()[0]:.2f}")
    print(f"approve -> next candidate rendered   median {p50:6.1f} ms   p95 {p95:6.1f} ms   "
          f"(n={len(approve)}; target median < 50 ms: {verdict(p50, 50)}; of which the core's "
          f"decide_and_next: median {median(result['approve core']) * 1000:.1f} ms)")
    if result["undo"]:
        undone = [v * 1000 for v in result["undo"]]
        u50, u95 = median(undone), percentile(undone, 95)
        print(f"undo -> candidate shown again        median {u50:6.1f} ms   p95 {u95:6.1f} ms   "
              f"(n={len(undone)}; target median < 100 ms: {verdict(u50, 100)}; of which the core's "
              f"undo_and_show: median {median(result['undo core']) * 1000:.1f} ms)")
    report_draws(result, total, queued)

    report_my_work(args.decisions)
    report_sweep()


if __name__ == "__main__":
    main()
