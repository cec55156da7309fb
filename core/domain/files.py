"""Files a caller names (docs/architecture.md, "Files given"): `--body-file`, `--key-file`, `--anchor`,
`--authorized-keys`, the keymap, R2K_SIGNING_KEY_FILE, R2K_TRUSTED_KEYS, and each file `ingest` reads.

Only a regular file is read, and never more of it than its kind may hold (`limits.FileKind`). A FIFO
would block the read until someone writes to it, a device such as /dev/zero never ends, a folder
cannot be read at all: each is refused with a line saying what it is, before anything is read. The
path is looked at first (so a device is never opened: opening some has effects), then opened without
blocking and looked at again through the open file (so one swapped in between is refused too).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import InvalidInput
from .limits import FileKind

_KINDS = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def kind_of(mode: int) -> str:
    """What a file of `mode` is, in words: "a regular file", "a folder", "a FIFO", "a character device" …"""
    return next((said for test, said in _KINDS if test(mode)), "not a regular file")


def kind_at(path: str | Path) -> str | None:
    """What `path` names (symbolic links followed), or None when it names nothing (or nothing that can
    be looked at: the caller's open says why)."""
    try:
        return kind_of(os.stat(path).st_mode)
    except (OSError, ValueError):
        return None


class NotARegularFile(OSError):
    """The path names a folder, a FIFO, a device or a socket: `kind` says which."""

    def __init__(self, kind: str):
        super().__init__(f"{kind}, not a regular file")
        self.kind = kind


class TooLarge(OSError):
    def __init__(self, size: int):
        super().__init__(f"{size:,} bytes")
        self.size = size


def read_bytes(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them: NotARegularFile before anything is
    read when it is not one, TooLarge when it holds more than `limit` (by its size, or by what a read
    found: a file that grows, or one of /proc whose size says 0); OSError and ValueError (a NUL in the
    path) as the system raises them."""
    kind = kind_of(os.stat(path).st_mode)
    if kind != "a regular file":
        raise NotARegularFile(kind)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):  # swapped for another kind since it was looked at
            raise NotARegularFile(kind_of(opened.st_mode))
        if opened.st_size > limit:
            raise TooLarge(opened.st_size)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise TooLarge(size)
    return b"".join(chunks)


def shown(path: str | Path) -> str:
    """A path as text that can be printed: bytes of a name that are not UTF-8 written as \\xNN."""
    try:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    except (UnicodeError, TypeError, ValueError):
        return str(path).encode("utf-8", "backslashreplace").decode("utf-8")


def read_argument(path: str | Path, what: str, kind: FileKind) -> bytes:
    """The bytes of the file a caller named as `what` ("--body-file", "the anchor file"): a 400 naming
    it and the path when it is not a regular file, cannot be read, or is larger than its kind may be
    ("--key-file a.pub has 3,000,000 bytes; a key file is at most 16 KB (16,384 bytes)")."""
    try:
        return read_bytes(path, kind.bytes)
    except NotARegularFile as exc:
        raise InvalidInput(f"{what} {shown(path)} is {exc.kind}, not a regular file: nothing was read") from None
    except TooLarge as exc:
        raise InvalidInput(f"{what} {shown(path)} has {exc.size:,} bytes; {kind.said()}") from None
    except OSError as exc:
        raise InvalidInput(f"{what} {shown(path)} cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL in the path
        raise InvalidInput(f"{what} {shown(path)} cannot be read: {exc}") from None


def read_text_argument(path: str | Path, what: str, kind: FileKind, errors: str = "strict") -> str:
    """`read_argument`, decoded as UTF-8 (a byte order mark dropped); bytes that are not UTF-8 a 400
    naming where, unless `errors` says what to make of them."""
    raw = read_argument(path, what, kind)
    try:
        return raw.decode("utf-8-sig", errors)
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{what} {shown(path)} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                           f"{exc.start:,})") from None
