"""Commands that take one id or many (docs/architecture.md, "Bulk actions"): `ID...` and
`--from-file FILE`. One id keeps the command's own output; several give the per-item report of
core/services/bulk.py on stdout; when an item failed, the command also prints the one error line
of the CLI's contract on stderr (the first failure's, with the count) and exits with its code, after
trying every item."""
from __future__ import annotations

import argparse
from typing import Callable

from r2k.core.domain import files, limits
from r2k.core.errors import InvalidInput, exit_code
from r2k.core.services import bulk

from .output import Text
from .safe import visible


def add_ids(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("id", nargs="*", metavar="ID", help=f"the {what}'s id; several for a bulk action, "
                        "each its own move")
    parser.add_argument("--from-file", metavar="FILE", help="ids one a line (blank lines and # notes left out), "
                        "with or after those given")


def run_each(cli, args, what: str, move: Callable[..., dict], said: Callable[[dict], str] | None = None):
    """`move(id, idempotency_key=…, expected_version=…)` for the one id given, as the command always
    did; for several, each in turn, with the report of every item."""
    given = list(args.id)
    if args.from_file:
        given += bulk.ids_in(files.read_text_argument(args.from_file, "--from-file", limits.IDS_FILE))
    opts = cli.opts()
    if len(given) == 1 and not args.from_file:
        return move(given[0], **opts)
    ids = bulk.ids_of(given, what)
    if opts["expected_version"] is not None and len(ids) > 1:
        raise InvalidInput("--expected-version is one entity's version: give one id with it")
    cli.actor  # before anything moves: an unknown user is a 403, not one per item
    with cli.progress() as bar:
        bar.start(f"{args.command} {getattr(args, f'{args.command}_command', '')}", len(ids))
        report = bulk.each(ids, lambda entity_id, key: move(entity_id, idempotency_key=key,
                                                             expected_version=opts["expected_version"]),
                           idempotency_key=opts["idempotency_key"], progress=lambda n, total: bar.update(n, total))
    first = next((item for item in report["items"] if not item["ok"]), None)
    lines = [f"{what} {item['id']}: " + ((said or _state)(item["result"]) if item["ok"] else
                                         f"{item['error']['error']} ({item['error']['status']}): "
                                         f"{visible(item['error']['message'], multiline=False)}")
             for item in report["items"]]
    lines.append(f"{report['done']:,} done, {report['failed']:,} failed")
    if first is None:
        return Text(report, "\n".join(lines)), 0
    error = {**first["error"], "message": f"{report['failed']:,} of {len(ids):,} failed (the report is on stdout); "
                                           f"the first, {what} {first['id']}: {first['error']['message']}"}
    return Text(report, "\n".join(lines)), exit_code(first["error"]["status"]), error


def _state(row: dict) -> str:
    return str(row.get("status") or row.get("state") or "done")
