"""Helpers for driving the workstation with Pilot: wait for conditions, never for fixed times."""
from __future__ import annotations

import asyncio
import time

FIXED_SERVICES = ("● postgres  embedded  postgresql://127.0.0.1/r2k\n● redis     embedded  redis://127.0.0.1/0\n"
                  "● graph     embedded  bolt://127.0.0.1\n● llm       circuit closed")


async def wait_for(pilot, predicate, timeout: float = 10.0, what: str = "condition"):
    """Pump the app until `predicate()` is truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause()
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def make_app(ctx, user: str, **kw):
    from app.tui import R2KApp

    return R2KApp(ctx, user, **kw)


async def settle_dashboard(pilot):
    """Wait for the dashboard's counts and replace the machine-specific service lines (ports, pids)."""
    from textual.widgets import Static

    await wait_for(pilot, lambda: pilot.app.screen.has_class("loaded"), what="dashboard counts")
    await wait_for(pilot, lambda: "postgres" in str(pilot.app.screen.query_one("#services", Static).render()),
                   what="service health")
    pilot.app.screen.query_one("#services", Static).update(FIXED_SERVICES)
    await pilot.pause()
