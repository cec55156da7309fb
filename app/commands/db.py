"""db: the database schema upgraded. The command tree; the handlers are app/handlers/db.py, imported
when one runs."""
from __future__ import annotations


def register(commands) -> None:
    db = commands.group("db", "the database schema")
    db.command("upgrade", "apply the schema migrations (Alembic) up to the newest (an admin)", "db:db_upgrade",
               authority="admin", checks_schema=False)
