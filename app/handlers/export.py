"""export: the registry, the decisions and the article tasks as JSON Lines or CSV
(core/services/answers/export.py), on stdout or into a file. The handlers of the tree in app/commands/export.py."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from r2k.core.domain import files
from r2k.core.errors import InvalidInput
from r2k.core.services.answers import export

from ..output import Text
from ..safe import safe_json, visible


def run(cli, args):
    actor = cli.actor
    status = getattr(args, "status", None)
    if args.output is None:
        if getattr(args, "json", False):
            raise InvalidInput("--json prints a summary of an export written with --output FILE; without "
                               "--output the export itself goes to stdout")
        tty = sys.stdout.isatty()
        shown = (lambda line: visible(line)) if tty and args.format == "csv" else safe_json
        with cli.progress() as bar:
            bar.start(f"export {args.kind}", None)
            export.export(cli.ctx, actor, args.kind, args.format, lambda line: sys.stdout.write(shown(line)),
                          status=status, progress=lambda done, total: bar.update(done, total))
        sys.stdout.flush()
        return None
    target = _target(args.output)
    # Into a file beside the target, renamed over it once complete: a crash or an error midway
    # leaves the target as it was, never half an export.
    try:
        fd, partial = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    except OSError as exc:
        raise InvalidInput(f"--output {target.name!r} cannot be written: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out, cli.progress() as bar:
            bar.start(f"export {args.kind}", None)
            line_of = safe_json if args.format == "jsonl" else (lambda line: line)
            summary = export.export(cli.ctx, actor, args.kind, args.format, lambda line: out.write(line_of(line)),
                                    status=status, progress=lambda done, total: bar.update(done, total))
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    result = {"kind": summary.kind, "format": summary.format, "rows": summary.rows, "path": str(target)}
    if summary.statuses is not None:
        result["statuses"] = summary.statuses
    return Text(result, f"exported {summary.rows:,} {_noun(summary.kind, summary.rows)} to "
                        f"{visible(str(target), multiline=False)}")


def _target(output: str) -> Path:
    """The file an export goes to: a 400 naming it when it is a folder, its folder is missing or not
    writable, or the path itself is one the system refuses (too long, a NUL)."""
    said = repr(output) if len(output) <= 200 else f"{output[:120]!r}… ({len(output):,} characters)"

    try:
        # The file a link names is the one replaced, never the link; and only a regular file (or none)
        # is replaced: renaming over /dev/null or a FIFO would put a file where the device was.
        target = Path(os.path.realpath(Path(output).expanduser()))
        kind = files.kind_at(target)
        if kind == "a folder":
            raise InvalidInput(f"--output {said} is a folder: name a file")
        if kind not in (None, "a regular file"):
            raise InvalidInput(f"--output {said} is {kind}, not a regular file: an export replaces a file "
                               "whole (without --output it goes to stdout, which may be piped anywhere)")
        if not target.parent.is_dir():
            raise InvalidInput(f"--output {said}: its folder does not exist")
        if not os.access(target.parent, os.W_OK):
            raise InvalidInput(f"--output {said}: its folder is not writable")
        os.stat(target.parent)  # a name too long for the system fails here, not midway
        if len(target.name.encode("utf-8", "surrogateescape")) > 200:
            raise InvalidInput(f"--output {said}: a file name is at most 200 bytes here")
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"--output {said} cannot be written: {getattr(exc, 'strerror', None) or exc}") from None
    return target


def _noun(kind: str, n: int) -> str:
    return {"registry": "answer", "decisions": "decision", "tasks": "task"}[kind] + ("" if n == 1 else "s")
