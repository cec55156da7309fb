"""Schema migrations (Alembic). `r2k db upgrade` applies them; the embedded default applies them itself.

HEAD names the newest revision so a command can compare it with the database's
`alembic_version` without importing Alembic (which costs ~0.4 s); a test keeps it in step
with the scripts.
"""
from __future__ import annotations

from pathlib import Path

from psycopg.rows import tuple_row

HEAD = "0029"
HERE = Path(__file__).resolve().parent


def _alembic():
    """Alembic with its commands, imported on first use: 276 ms (python -X importtime) that only a
    command which migrates pays (every other one compares the database's revision with HEAD)."""
    import alembic.command
    import alembic.config

    return alembic


def alembic_config(url: str):
    cfg = _alembic().config.Config()
    cfg.set_main_option("script_location", str(HERE))
    # Escaped for the config's interpolation: a URL may hold %-escapes (a socket path, a password).
    cfg.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
    return cfg


def sqlalchemy_url(url: str) -> str:
    """SQLAlchemy needs the psycopg 3 dialect named; plain postgresql:// URLs are accepted."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def upgrade(url: str, revision: str = "head") -> None:
    _alembic().command.upgrade(alembic_config(url), revision)


def current(conn) -> str | None:
    """The revision a psycopg connection's database is at (None when never migrated)."""
    cursor = conn.cursor(row_factory=tuple_row)
    if not cursor.execute("SELECT to_regclass('alembic_version') IS NOT NULL").fetchone()[0]:
        return None
    row = cursor.execute("SELECT version_num FROM alembic_version").fetchone()
    return row[0] if row else None
