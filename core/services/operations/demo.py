"""The demo corpus and users shipped with the package (`r2k demo`): an operations handbook."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ...domain import Actor
from .. import tasks
from ..documents import ingest
from ..people import users

if TYPE_CHECKING:
    from ...context import Context

HERE = Path(__file__).resolve().parents[2] / "demo"  # core/demo/: the corpus and users, shipped as data
CORPUS = HERE / "corpus"


def demo_users() -> list[dict]:
    return json.loads((HERE / "users.json").read_text())


def _corpus_hashes() -> set[str]:
    return {hashlib.sha256(path.read_bytes()).hexdigest() for path in CORPUS.iterdir() if path.is_file()}


def loaded(ctx: Context) -> bool:
    """Whether every demo user and document is there already (then `load` adds nothing)."""
    with ctx.db.read() as tx:
        users = {r["name"] for r in tx.all("SELECT name FROM users WHERE name = ANY(%s)",
                                           ([u["name"] for u in demo_users()],))}
        hashes = {r["content_hash"] for r in tx.all("SELECT content_hash FROM source_documents "
                                                    "WHERE content_hash = ANY(%s)", (list(_corpus_hashes()),))}
    return len(users) == len(demo_users()) and hashes == _corpus_hashes()


def load(ctx: Context, by: Actor) -> dict:
    """Add the demo users and ingest the corpus, as `by` (an admin); running it again adds nothing."""
    added = []
    with ctx.db.read() as tx:
        existing = {r["name"] for r in tx.all("SELECT name FROM users")}
    for user in demo_users():
        if user["name"] not in existing:
            users.add(ctx, user["name"], user["role"], user["horn_types"], by=by)
            added.append(user["name"])
    summary = ingest.ingest(ctx, by, [CORPUS])

    articles = tasks.demo_articles(ctx, by)  # three durable tasks: in review, to resolve, published
    return {"users": demo_users(), "users_added": added, "ingest": summary,
            "articles": [{"id": a["id"], "title": a["title"], "state": a["state"]} for a in articles]}
