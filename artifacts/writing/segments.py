"""The write path's seams: where a writer's segments are stored and who makes
them part of the artifact. The table of contents of ``artifacts.writing.writer``.

A writer (``ArtifactWriter``) takes a stream in any chunking and cuts it into
segments. Storing a segment's bytes and publishing it (the row that makes it
visible to readers) are two steps behind two interfaces:

* a **store** for the bytes: a ``SegmentStager`` takes a whole segment at once
  (S3, an HTTP append), a ``SegmentPlacer`` is written through piece by piece
  from the producer's own buffer (a local file that grows);
* a **publisher** for the rows: ``SegmentPublisher``, the database transaction
  in this process (``artifacts.writing.publishing``) or the same step on a server.

Every offset and total handed across these seams counts from the artifact's
byte 0. Standard library only: the CLI's sinks implement them without the store.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from overspill.artifacts.writing.writes import Ending


class StagedSegment(NamedTuple):
    """A segment whose bytes are stored but not yet part of the artifact."""

    offset: int
    size: int
    key: str
    newlines: int
    ends_with_newline: bool


class WriteResult(NamedTuple):
    """How a write ended, as the executor reports it (sizes are this writer's)."""

    id: str
    state: str
    size_bytes: int
    total_bytes: int
    sha256: str | None
    error: str | None = None
    # A full disk's reason without its count: a caller that learns the final size
    # from the store (over HTTP) says the count from that, not from this writer.
    disk_full: str | None = None


def stored_account(reason: str, size: int, total: int) -> str:
    """``disk full at …: N of M bytes stored``, N counted once the writer stopped."""
    return f"{reason}: {size} of {total} bytes stored"


class SegmentPublisher(Protocol):
    """Makes stored segments part of the artifact, under the writer's lease."""

    def publish(self, staged: Sequence[StagedSegment]) -> tuple[int, str | None]:
        """Make staged segments visible, in order, in one step. Returns the bytes
        published and, if the owner's quota stopped it early, why; segments past
        that point are never part of the artifact. Raises OverspillError."""
        ...

    def renew(self) -> None:
        """Extend the writer's lease."""
        ...

    def finish(self, ending: Ending) -> None:
        """Record how the writer ended."""
        ...


class FinishingPublisher(SegmentPublisher, Protocol):
    """A publisher whose every call is a round trip (a local server's socket):
    the writer hands it the last batch with the end, one request for both."""

    def finish_with(self, last: Sequence[StagedSegment], ending: Ending) -> int:
        """Publish ``last`` and record the end, in one step; the bytes published
        (fewer than ``last`` holds if the owner's quota stopped them)."""
        ...


class SegmentStager(Protocol):
    """Stores a whole segment at once (the buffered producer)."""

    def stage(self, offset: int, data: memoryview) -> str | None:
        """Store one segment's bytes. Returns the key of the blob that holds them,
        which ``publish`` needs, or None when storing already made them visible
        (an HTTP append). Raises OverspillError (QuotaExceeded: stop storing)."""
        ...

    def discard(self, staged: Sequence[StagedSegment]) -> None:
        """Storing failed: give back at once the bytes of segments that will never
        be published, so a full disk recovers without waiting for the
        reconciler. Never raises."""
        ...


class SegmentPlacer(Protocol):
    """A blob the producer writes through (a backend that can append): bytes go
    from the producer's own buffer straight into the blob that will hold them,
    and the writer's thread reads them back from the page cache to hash them,
    so the producer never waits for a hash and no segment sits in memory."""

    def place(self, offset: int, data: memoryview, into: str | None) -> str:
        """Write ``data`` at ``offset`` into blob ``into`` (None: start a new blob
        there) and return the blob's key. Raises OverspillError."""
        ...

    def read_back(self, key: str, offset: int, size: int) -> Iterator[memoryview]:
        """The placed bytes ``[offset, offset + size)`` of blob ``key``, in pieces
        each valid until the next is asked for."""
        ...

    def discard(self, staged: Sequence[StagedSegment]) -> None:
        """As ``SegmentStager.discard``: the blobs of these were never published."""
        ...

    def close(self) -> None:
        """Release the blob being placed into (called on the producer's thread)."""
        ...
