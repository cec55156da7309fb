"""The checkpoints file in the data dir (`audit/checkpoints.jsonl`): one whole record per line,
outside the database's reach, appended under a lock, a torn last line cut off; and anchors read back."""
from __future__ import annotations

import fcntl
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..domain import files
from ..domain.limits import ANCHOR_FILE, JSONTooDeep, loads_json
from ..errors import InvalidInput
from .records import delta_digest, header

if TYPE_CHECKING:
    from .verifying import Inspection

log = logging.getLogger("r2k.core.audit")


def checkpoint_file(settings) -> Path:
    return Path(settings.data_dir) / "audit" / "checkpoints.jsonl"


def append_to_file(settings, record: dict) -> None:
    """One line per checkpoint, the whole record with its delta, outside the database."""
    path = checkpoint_file(settings)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # concurrent writers' lines never interleave
        _drop_torn_tail(fd, path)
        line = memoryview((json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode())
        while line:  # a write may be cut short: the rest follows
            line = line[os.write(fd, line):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _drop_torn_tail(fd: int, path: Path) -> None:
    """A writer killed in the middle of its line (a process ending while its checkpoint thread
    wrote) leaves a fragment with no newline: cut it off, so this line starts on a line of its own.
    Only such a fragment goes: every whole line ends with a newline. The database holds that
    checkpoint, so the file is only behind by it, which is no problem for verify."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    pos = size
    while pos > 0:
        step = min(65536, pos)
        chunk = os.pread(fd, step, pos - step)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            pos = pos - step + cut + 1
            break
        pos -= step
    os.ftruncate(fd, pos)
    log.warning("%s ended in a partly written line (%d bytes, a writer that died while writing): cut off",
                path, size - pos)


_CHUNK = 1 << 20  # bytes read at a time from the file's end


def last_file_record(settings) -> dict | None:
    """The file's last whole line, read from the end (the file grows with every checkpoint), in
    chunks kept apart and joined once: the line after a whole tree was built holds a million
    chains' delta (95 MiB), and growing one buffer chunk by chunk, as this did, copied and searched
    it over again per chunk: quadratic, 54 s of the first checkpoint after a build at 1M chains
    (docs/architecture.md, "The checkpoints' tree"); now about the 1.5 s of parsing that line."""
    path = checkpoint_file(settings)
    try:
        with open(path, "rb") as handle:
            pos = handle.seek(0, os.SEEK_END)
            chunks: list[bytes] = []
            newlines = 0
            while pos > 0:
                step = min(_CHUNK, pos)
                pos -= step
                handle.seek(pos)
                chunks.append(handle.read(step))
                newlines += chunks[-1].count(b"\n")
                if newlines < 2 and pos > 0:
                    continue
                # Whole lines only: not the first piece unless the file starts there, nor the last
                # (empty after the final newline, or the start of a torn line).
                pieces = b"".join(reversed(chunks)).split(b"\n")[1 if pos > 0 else 0:-1]
                lines = [line for line in pieces if line.strip()]
                if lines:
                    return json.loads(lines[-1])
            return None
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return {"unreadable": str(exc)}


def read_anchor(path: Path) -> dict:
    """A checkpoint printed by `audit anchor --json` (or a line of a checkpoints file; of several
    lines, the newest)."""
    path = Path(path)
    text = files.read_text_argument(path, "the anchor file", ANCHOR_FILE)  # never a FIFO, a device, too much
    records = []
    try:
        records = [loads_json(text)]
    except ValueError:
        try:
            records = [loads_json(line) for line in text.splitlines() if line.strip()]
        except JSONTooDeep as exc:
            raise InvalidInput(f"the anchor file {path} is not a checkpoint: {exc}") from None
        except ValueError:
            raise InvalidInput(f"the anchor file {path} is not JSON: give the output of "
                               f"`r2k audit anchor --json`") from None
    records = [r for r in records if isinstance(r, dict) and isinstance(r.get("number"), int)]
    if not records:
        raise InvalidInput(f"the anchor file {path} holds no checkpoint: give the output of "
                           f"`r2k audit anchor --json`")
    return max(records, key=lambda r: r["number"])


def scan_file(path: Path, inspection: Inspection) -> dict[int, tuple[dict, int]]:
    """Every record of the checkpoints file: number -> (header, offset of its line)."""
    found: dict[int, tuple[dict, int]] = {}
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return found
    with handle:
        offset = 0
        for n, line in enumerate(handle, 1):
            start, offset = offset, offset + len(line)
            if not line.strip() or not line.endswith(b"\n"):  # the last, torn by a writer that died: not a record
                continue
            try:
                record = json.loads(line)
                number = record["number"]
                ok = isinstance(number, int) and delta_digest(record["delta"]) == record.get("delta_digest")
            except (ValueError, KeyError, TypeError):
                inspection.add(None, f"line {n} of {path} is not a checkpoint record")
                continue
            if not ok:
                inspection.add(number if isinstance(number, int) else None,
                               f"checkpoint {number} in {path} (line {n}): its delta does not match its digest")
                continue
            if number in found and header(found[number][0]) != header(record):
                inspection.add(number, f"checkpoint {number} appears twice in {path}, differently")
                continue
            found[number] = (header(record), start)
    return found


def file_delta(path: Path, offset: int) -> list:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return json.loads(handle.readline())["delta"]
