"""The demo corpus and users shipped with the package (`r2k demo`): an operations handbook."""
from __future__ import annotations

import json
from pathlib import Path

from ..context import Context
from ..domain import Actor

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"


def demo_users() -> list[dict]:
    return json.loads((HERE / "users.json").read_text())


def load(ctx: Context, by: str = "demo") -> dict:
    """Add the demo users and ingest the corpus; running it again adds nothing."""
    from ..services import ingest, users

    added = []
    with ctx.db.read() as tx:
        existing = {r["name"] for r in tx.all("SELECT name FROM users")}
    for user in demo_users():
        if user["name"] not in existing:
            users.add(ctx, user["name"], user["role"], user["horn_types"], by=by)
            added.append(user["name"])
    summary = ingest.ingest(ctx, Actor("root", "admin"), [CORPUS])
    return {"users": demo_users(), "users_added": added, "ingest": summary}
