"""The two producers of an ArtifactWriter: how the caller's bytes become segments.

* ``BufferedProducer``: the caller's thread only copies into a segment buffer;
  the writer's loop stores each full segment through a ``SegmentStager`` while
  a second thread hashes it. Two buffers are reused (one fills while the other
  is stored), so memory is two segments whatever the size.
* ``PlacingProducer``: the caller's thread writes each chunk straight into the
  blob that will hold it (a ``SegmentPlacer``: a local file) and counts its
  newlines; the loop hashes the segment -- from the caller's ``bytes`` when they
  are immutable, else read back from the page cache -- so no segment is
  buffered in memory and the producer never waits for a hash. At most
  ``max_buffers + 1`` placed segments wait to be hashed (page cache, not memory).

Both share the writer's condition: every ``*_locked`` method is called with it
held, everything else on the thread the name says.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from overspill.artifacts.errors import OverspillError
from overspill.artifacts.newlines import count_newlines
from overspill.artifacts.writing.segments import SegmentPlacer, SegmentStager, StagedSegment

if TYPE_CHECKING:
    import threading
    from collections import deque
    from typing import Any


class ProducerHost(Protocol):
    """What a producer asks of the writer that owns it (``ArtifactWriter``): its
    lock and state, where the next segment starts, and the hand-over to its
    loop. A Protocol, so the producers never import the writer (no cycle)."""

    id: str
    base: int  # the artifact offset of the writer's first byte
    segment_bytes: int
    max_buffers: int
    hasher: Any  # the running sha256 of the artifact's bytes
    cond: threading.Condition  # guards everything below and the producer's state
    pending: deque[Pending]
    error: str | None
    stopped: str | None

    def next_offset_locked(self) -> int: ...
    def hand_over_locked(self, item: Pending) -> None: ...
    def wait_locked(self, blocked: Any) -> bool: ...
    def fail_and_discard(self, message: str, *, cause: OverspillError | None = None) -> None: ...
    def error_to_raise(self) -> OverspillError: ...


class Pending(NamedTuple):
    """A segment the producer handed over, waiting to be indexed by the loop."""

    offset: int  # from the writer's first byte
    fill: int
    buf: bytearray | None = None  # buffered bytes (None: placed, in blob ``key``)
    key: str | None = None
    newlines: int = 0  # placed bytes: counted by the producer as they were placed
    ends_with_newline: bool = False
    # Placed bytes the caller handed over as immutable ``bytes``: hashed from these
    # views instead of read back (None: some piece was a buffer the caller reuses).
    chunks: list[memoryview] | None = None


class Producer:
    """What the writer and its loop ask of a producer."""

    def __init__(self, writer: ProducerHost) -> None:
        # Weakly: a strong reference would make writer and producer a cycle, and
        # a writer dropped without close() must be freed by refcounting at once
        # (its loop then ends and its lease lapses, see artifacts.writing.writer._drive).
        self.w: ProducerHost = weakref.proxy(writer)
        self.fill = 0  # bytes of the current segment
        self.since = 0.0  # when the current segment got its first byte
        self.busy = False  # writing outside the lock: the loop must not cut now

    def write(self, data: bytes | bytearray | memoryview, newlines: int | None) -> None:
        """The caller's thread: take ``data`` (already clipped to the cap)."""
        raise NotImplementedError

    def cut_locked(self, *, wait: bool, refill: bool = True) -> None:
        """Hand the current segment, if it has bytes, to the loop (once the
        writer failed or stopped, drop it). ``wait`` (the producer) blocks for
        room, which is the writer's backpressure; ``refill`` is off at close (no
        more bytes will come)."""
        w = self.w
        if not self.fill:
            return
        if w.error or w.stopped:
            self.fill = 0
            return
        self.cut_at_locked(w.next_offset_locked() - self.fill, wait=wait, refill=refill)

    def filled_locked(self, n: int) -> None:
        """``n`` more bytes are in the current segment: cut it when full."""
        self.fill += n
        if self.fill >= self.w.segment_bytes:
            self.cut_locked(wait=True)

    def cut_at_locked(self, offset: int, *, wait: bool, refill: bool) -> None:
        """``cut_locked``'s own part: the segment at ``offset`` to the writer."""
        raise NotImplementedError

    def full_locked(self) -> bool:
        """Whether handing over a segment now would wait for storage."""
        return len(self.w.pending) >= self.w.max_buffers

    def index(self, item: Pending) -> StagedSegment | None:
        """The loop's thread: store and hash a buffered segment, or hash a placed
        one. None when storing made it visible already (an HTTP append)."""
        raise NotImplementedError

    def indexed_locked(self, item: Pending) -> None:
        """After ``index`` succeeded (a buffer can be reused)."""

    def published_locked(self, batch: Sequence[StagedSegment]) -> None:
        """After a batch was published."""

    def unpublished_locked(self, staged: list[StagedSegment]) -> list[StagedSegment]:
        """Storing failed: every stored segment no row will ever use."""
        return staged

    def discard(self, segments: Sequence[StagedSegment]) -> None:
        """Give back the blobs of ``segments`` (never raises)."""
        raise NotImplementedError

    def forget_locked(self) -> None:
        """Drop the current segment (the writer is abandoned)."""
        self.fill = 0

    def close(self, *, wait: bool) -> None:
        """The writer is done: release threads and open blobs."""


class BufferedProducer(Producer):
    def __init__(self, writer: ProducerHost, stager: SegmentStager) -> None:
        super().__init__(writer)
        self._stager = stager
        # Segment buffers, reused: no reallocation churn, so RSS stays flat. A new
        # one starts empty and grows to a segment as data arrives (a reused one is
        # overwritten in place), so an artifact of a few hundred KB costs that much
        # memory, not an 8 MiB zero-fill.
        self._pool: list[bytearray] = []
        self._buffer = bytearray()
        self._made = 1
        # Started on the first segment, so a small artifact never spawns it (and
        # imported here: concurrent.futures brings logging, which a placing
        # writer on the CLI's path never needs).
        from concurrent.futures import ThreadPoolExecutor

        self._hash_thread = ThreadPoolExecutor(1, thread_name_prefix=f"hash-{writer.id}")

    def full_locked(self) -> bool:
        return not self._pool and self._made >= self.w.max_buffers

    def write(self, data: bytes | bytearray | memoryview, newlines: int | None) -> None:
        w = self.w
        view = memoryview(data)
        while view:
            piece = view[: w.segment_bytes - self.fill]
            with w.cond:
                if not self.fill:
                    self.since = time.monotonic()
                self._buffer[self.fill : self.fill + len(piece)] = piece
                self.filled_locked(len(piece))
            view = view[len(piece) :]

    def cut_at_locked(self, offset: int, *, wait: bool, refill: bool) -> None:
        w = self.w
        w.hand_over_locked(Pending(offset, self.fill, buf=self._buffer))
        self.fill = 0
        if not refill:
            return
        if wait and not w.wait_locked(self.full_locked):
            return
        if self._pool:
            self._buffer = self._pool.pop()
        else:
            self._buffer = bytearray()
            self._made += 1

    def index(self, item: Pending) -> StagedSegment | None:
        assert item.buf is not None
        w = self.w
        with memoryview(item.buf)[: item.fill] as data:
            # hashlib releases the GIL on large updates, so the hash runs beside
            # the store and the count below. The count (which holds the GIL) comes
            # after the store so it never delays it, and here rather than on the
            # hash thread, which is the slower of the two. Waiting for the hash
            # before the next segment keeps it in segment order and the buffer
            # unshared.
            digested = self._hash_thread.submit(w.hasher.update, data)
            try:
                key = self._stager.stage(w.base + item.offset, data)
                if key is None:
                    return None
                return StagedSegment(
                    w.base + item.offset,
                    item.fill,
                    key,
                    count_newlines(data),
                    data[item.fill - 1] == 10,
                )
            finally:
                digested.result()

    def indexed_locked(self, item: Pending) -> None:
        assert item.buf is not None
        self._pool.append(item.buf)

    def discard(self, segments: Sequence[StagedSegment]) -> None:
        self._stager.discard(segments)

    def close(self, *, wait: bool) -> None:
        self._hash_thread.shutdown(wait=wait)


class PlacingProducer(Producer):
    def __init__(self, writer: ProducerHost, placer: SegmentPlacer) -> None:
        super().__init__(writer)
        self._placer = placer
        self._key: str | None = None  # the blob the current segment is placed into
        self._new_blob = True  # the next segment starts a blob (none yet, or one was published)
        self._newlines = 0  # in the current segment
        self._ends_nl = False
        self._chunks: list[memoryview] | None = []
        self._published: set[str] = set()

    def write(self, data: bytes | bytearray | memoryview, newlines: int | None) -> None:
        w = self.w
        view = memoryview(data)
        immutable = isinstance(data, bytes) or isinstance(view.obj, bytes)
        size = len(view)  # the caller's count holds for all of it, not a part
        while view:
            with w.cond:
                if w.error or w.stopped:
                    return
                if not self.fill:
                    self.since = time.monotonic()
                    self._chunks = []
                    if self._new_blob:
                        self._key, self._new_blob = None, False
                offset = w.next_offset_locked()
                piece = view[: w.segment_bytes - self.fill]
                into = self._key
                self.busy = True
            try:
                key = self._placer.place(w.base + offset, piece, into)
            except OverspillError as exc:
                with w.cond:
                    self.busy = False
                if not w.stopped:  # after a quota stop, a lost piece is no failure
                    w.fail_and_discard(exc.message, cause=exc)
                    raise w.error_to_raise() from None
                return
            whole = len(piece) == size and newlines is not None
            counted = newlines if whole and newlines is not None else count_newlines(piece)
            with w.cond:
                self.busy = False
                self._key = key
                self._newlines += counted
                self._ends_nl = piece[-1] == 10
                if self._chunks is not None:
                    if immutable:
                        self._chunks.append(piece)
                    else:
                        self._chunks = None
                self.filled_locked(len(piece))
            view = view[len(piece) :]

    def cut_at_locked(self, offset: int, *, wait: bool, refill: bool) -> None:
        w = self.w
        w.hand_over_locked(
            Pending(
                offset,
                self.fill,
                key=self._key,
                newlines=self._newlines,
                ends_with_newline=self._ends_nl,
                chunks=self._chunks,
            )
        )
        self.fill = 0
        self._newlines = 0
        self._chunks = []
        if refill and wait:
            w.wait_locked(lambda: len(w.pending) > w.max_buffers)

    def index(self, item: Pending) -> StagedSegment:
        """Hash a placed segment, reading it back from its blob (the page cache,
        just written). sha256 releases the GIL on these chunks, so the producer
        goes on placing meanwhile; its newlines were counted as it was placed."""
        assert item.key is not None
        w = self.w
        if item.chunks is not None:  # immutable: hashed as handed over, no read-back
            for piece in item.chunks:
                w.hasher.update(piece)
        else:
            for chunk in self._placer.read_back(item.key, w.base + item.offset, item.fill):
                w.hasher.update(chunk)
        return StagedSegment(
            w.base + item.offset, item.fill, item.key, item.newlines, item.ends_with_newline
        )

    def published_locked(self, batch: Sequence[StagedSegment]) -> None:
        # A blob that holds published bytes is never discarded, and the next
        # segment starts a new one.
        self._published.update(seg.key for seg in batch)
        self._new_blob = True

    def unpublished_locked(self, staged: list[StagedSegment]) -> list[StagedSegment]:
        w = self.w
        placed = [(p.offset, p.fill, p.key) for p in w.pending]
        if self._key is not None:
            placed.append((0, self.fill, self._key))
        staged = staged + [StagedSegment(o, n, k, 0, False) for o, n, k in placed if k]
        return [seg for seg in staged if seg.key not in self._published]

    def discard(self, segments: Sequence[StagedSegment]) -> None:
        self._placer.discard(segments)

    def close(self, *, wait: bool) -> None:
        self._placer.close()
