"""A file on this machine into the store, and the original removed only once its
bytes are safely there: what ``overspill adopt`` does for the leftovers of other
tools, and opencode's hook for the file where opencode kept a cut output.

The file is opened without following a link, must be a regular file of this
user, and is uploaded in pieces (never held whole); the redactor runs on it as
on any upload. It is removed only if the artifact is complete, holds exactly the
file's size, its sha256 is the file's (or the store masked secrets, which keeps
lengths), and the file is still the one read (same inode, size and mtime).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any

from overspill.artifacts.errors import InvalidArgument

if TYPE_CHECKING:
    from .calls import ApiCalls

CHUNK = 1024 * 1024


def chunks(
    f: IO[bytes], digest: Any, advance: Callable[[int], None] | None = None
) -> Iterator[bytes]:
    """The file's bytes in pieces, hashed (and counted) as they go."""
    while chunk := f.read(CHUNK):
        digest.update(chunk)
        if advance is not None:
            advance(len(chunk))
        yield chunk


def not_safe_to_remove(
    stored: dict[str, Any], sha: str, path: str, read: os.stat_result
) -> str | None:
    """Why the original must stay (None: its bytes are stored and it is unchanged)."""
    if stored["state"] != "complete":
        return f"stored as {stored['state']}"
    if stored["size_bytes"] != read.st_size:
        return f"stored {stored['size_bytes']} of {read.st_size} bytes"
    masked = (stored.get("source") or {}).get("redactions") or {}
    if stored.get("sha256") != sha and not masked.get("count"):
        return "the stored bytes differ from the file's"
    try:
        now = os.lstat(path)
    except OSError:
        return "gone before it could be removed"
    if (now.st_dev, now.st_ino, now.st_size, now.st_mtime) != (
        read.st_dev,
        read.st_ino,
        read.st_size,
        read.st_mtime,
    ):
        return "changed while being stored"
    return None


def store_file(calls: ApiCalls, path: str, *, remove: bool, **fields: Any) -> dict[str, Any]:
    """Store the file at ``path`` as a new artifact (``fields``: how it is
    created); remove the original where that is safe. The artifact as stored."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        read = os.fstat(f.fileno())
        if not stat.S_ISREG(read.st_mode) or read.st_uid != os.getuid():
            raise InvalidArgument(f"{path} is not a regular file of this user's")
        made = calls.create(kind="output", **fields)
        digest = hashlib.sha256()
        stored = calls.upload(made["id"], chunks(f, digest))
    if remove and not not_safe_to_remove(stored, digest.hexdigest(), path, read):
        os.unlink(path)
    return stored
