"""The blob seam: byte objects by key, never rewritten: put whole (every backend)
or grown by appends (backends that can, see AppendableBlobStore). Nothing here
knows about owners, states or retention; the store above gives keys their meaning.

Every backend proves itself with the same contract suite (tests/test_blobs.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import NamedTuple, Protocol, runtime_checkable

from overspill.artifacts.errors import InvalidArgument

# Keys are produced by the store ("art_…/0000000007"); anything else is refused so
# a key can never climb out of a backend's root or prefix.
_KEY_RE = re.compile(r"^[A-Za-z0-9_]+(?:/[A-Za-z0-9_]+)*$")


class BlobNotFound(Exception):
    """The key names no object (already deleted, or never published)."""


class BlobInfo(NamedTuple):
    key: str
    size: int
    modified: datetime


class BlobStore(Protocol):
    @property
    def url(self) -> str:
        """The backend's URL (file:///root, s3://bucket/prefix)."""
        ...

    # The segment size a writer uses on this backend unless configured otherwise.
    segment_bytes: int

    def put(self, key: str, data: bytes | bytearray | memoryview) -> None:
        """Publish ``data`` under ``key`` atomically: readers see all of it or nothing.

        Raises StorageUnavailable on any backend failure; the key must not exist yet.
        """
        ...

    def read(self, key: str, start: int, end: int) -> Iterator[bytes]:
        """Yield bytes ``[start, end)`` of the object in bounded chunks.

        Raises BlobNotFound if the object is gone, StorageUnavailable otherwise.
        """
        ...

    def delete_many(self, keys: Iterable[str]) -> int:
        """Delete the objects (missing ones are fine); return how many were removed."""
        ...

    def list(self, prefix: str = "") -> Iterator[BlobInfo]:
        """Every object whose key starts with ``prefix`` (for the orphan reconciler)."""
        ...

    def discard_partial(self, older_than: datetime, *, dry_run: bool = False) -> int:
        """Remove partial writes left by crashed writers (temp files, unfinished
        multipart uploads) started before ``older_than``; return how many."""
        ...

    def check(self) -> None:
        """Raise StorageUnavailable with the reason if the backend cannot be used."""
        ...


class Appender(Protocol):
    """One open object being grown: a writer places many pieces through it
    without reopening the object (and re-walking its path) for each."""

    def write_at(self, position: int, data: bytes | bytearray | memoryview) -> None:
        """Write ``data`` at ``position``. Raises StorageUnavailable."""
        ...

    def close(self) -> None:
        """Release the object (idempotent)."""
        ...


@runtime_checkable
class AppendableBlobStore(BlobStore, Protocol):
    """A backend that can also grow an object in place (the local filesystem).

    The store uses it to put a publish batch's segments in one object: many
    small files cost the page cache more than one growing file."""

    def append(self, key: str, position: int, data: bytes | bytearray | memoryview) -> None:
        """Write ``data`` at ``position``, creating the object exclusively at 0.

        Nothing already written is ever overwritten by the store: each position is
        written once, and readers only read ranges a published segment row covers.
        Raises StorageUnavailable on any failure."""
        ...

    def open_appender(self, key: str, *, create: bool) -> Appender:
        """An Appender for ``key``, created exclusively when ``create`` (as
        ``append`` at position 0 does). Raises StorageUnavailable."""
        ...

    def truncate(self, key: str, size: int) -> None:
        """Cut the object back to ``size`` bytes (segments a quota refused)."""
        ...

    def read_into(self, key: str, position: int, buffer: memoryview) -> int:
        """Fill ``buffer`` from ``position``; return the bytes read (fewer only at
        the end). For reading back what was just appended without allocating.
        Raises BlobNotFound or StorageUnavailable as ``read`` does."""
        ...


def check_key(key: str) -> str:
    if not _KEY_RE.match(key):
        raise InvalidArgument(f"invalid blob key {key!r}")
    return key
