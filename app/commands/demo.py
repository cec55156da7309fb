"""demo: the demo corpus and users loaded, then the workstation opened. The command tree; the
handlers are app/handlers/demo.py, imported when one runs."""
from __future__ import annotations


def register(commands) -> None:
    demo = commands.command("demo", "load the demo corpus and users (idempotent; loading needs an admin, or "
                            "the data dir's owner while no admin exists), then open the workstation", "demo:demo_cmd",
                            authority="own")
    demo.add_argument("--no-tui", action="store_true", help="only load; do not open the workstation (so does "
                      "--json, and without a terminal the workstation is refused)")
