"""db: the database schema upgraded. The handlers of the tree in app/commands/db.py."""
from __future__ import annotations

from r2k.core.services.operations import admin


def db_upgrade(cli, args):
    return admin.db_upgrade(cli.ctx)
