"""The live SSH sessions, as `r2k services status` shows them: each running `r2k serve ssh` keeps a
file `ssh/sessions-PORT.json` in the data dir (app/remote/ssh.py); a file whose server is gone
is left out. Imports nothing heavy: status runs it on every call."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path


def sessions_file(data_dir, port: int) -> Path:
    folder = Path(data_dir) / "ssh"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder / f"sessions-{port}.json"


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
        return True
    except PermissionError:
        return True
    except (OSError, ValueError, TypeError):
        return False


def servers(data_dir) -> list[dict]:
    """Each live server's file, as written."""
    found = []
    for path in sorted((Path(data_dir) / "ssh").glob("sessions-*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and _alive(data.get("pid")):
            found.append(data)
    return found


def status_rows(data_dir) -> list[dict]:
    """A `services status` row for each running SSH server, naming its sessions."""
    rows = []
    for server in servers(data_dir):
        sessions = server.get("sessions") or []
        now = time.time()
        named = ", ".join(f"{s.get('user')} ({_ago(now - float(s.get('started') or now))}, pid {s.get('pid')})"
                          for s in sessions)
        address = f"ssh://{server.get('host')}:{server.get('port')}"
        rows.append({"name": "ssh", "mode": "serve ssh", "url": address, "listens": address,
                     "answers": True, "credential": "public keys (users add-key)", "pid": server.get("pid"),
                     "detail": f"{len(sessions)} session(s)" + (f": {named}" if named else ""),
                     "sessions": sessions})
    return rows


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
