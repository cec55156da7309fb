"""replay: every projection rebuilt from the events, compared, repaired. The command tree; the
handlers are app/handlers/replay.py, imported when one runs."""
from __future__ import annotations


def register(commands) -> None:
    replay = commands.command("replay", "rebuild every projection from the events and compare", "replay:replay_cmd")
    replay.add_argument("--verify", action="store_true", help="report differences (exit 1 when any)")
    replay.add_argument("--repair", action="store_true", help="rewrite every damaged projection row from its "
                        "events (an admin) and report what changed")
