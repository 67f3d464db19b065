"""Streaming writes: append any chunking, bounded memory, live visibility, a lease.

Two ways in, one pipeline after them:

* **Buffered** (S3, the HTTP client): the caller's thread only copies into a
  segment buffer; the background thread stores each full segment (its blob)
  while a second thread hashes it.
* **Placing** (a backend that can append: the local filesystem, see
  PlacingTarget): the caller's thread writes each chunk straight into the blob
  that will hold it, from the caller's own buffer, and counts its newlines; the
  background thread hashes the segment -- from the caller's ``bytes`` when they
  are immutable, else read back from the page cache -- so no segment is
  buffered in memory and the producer never waits for a hash.

Either way the background thread then publishes stored segments (the rows that
make them visible) in batches: every ``publish_segments`` segments, when stored
data has waited ``flush_interval``, and on ``flush()``/``close()``. One
transaction per batch instead of per segment is what keeps the database off a
fast writer's critical path.

Memory: buffered, ``max_buffers`` segment buffers (one fills while the other is
stored); placing, none (at most ``max_buffers + 1`` placed segments wait to be
hashed, in the page cache). If the process dies, the lease lapses and the
artifact becomes ``incomplete`` with every published segment readable; stored
but unpublished blobs are orphans the reconciler reclaims.

One module (about 680 lines): the producer, the background thread and close()
share one condition, one segment cursor and one failure path for both ways in,
and their locking is easiest to check when it is all in view.
"""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

from overspill.artifacts.errors import Conflict, OverspillError, QuotaExceeded, StorageUnavailable
from overspill.artifacts.newlines import count_newlines
from overspill.artifacts.records import WriteResult


@dataclass(frozen=True)
class StagedSegment:
    """A segment whose bytes are stored but not yet part of the artifact."""

    offset: int
    size: int
    key: str
    newlines: int
    ends_with_newline: bool


class SegmentTarget(Protocol):
    """Where a writer's segments go: the store in-process, or a server over HTTP."""

    def stage(self, offset: int, data: memoryview) -> str | None:
        """Store one segment's bytes. Returns the key of the blob that holds them,
        which ``publish`` needs to make them visible, or None when storing already
        made them visible (an HTTP append). Raises OverspillError on failure
        (QuotaExceeded: stop storing, not a failure)."""
        ...

    def publish(self, staged: Sequence[StagedSegment]) -> tuple[int, str | None]:
        """Make staged segments visible, in order, in one step. Returns the bytes
        published and, if the owner's quota stopped it early, why; segments past
        that point are discarded by the target. Raises OverspillError on failure."""
        ...

    def renew(self) -> None:
        """Extend the writer's lease."""
        ...

    def discard(self, staged: Sequence[StagedSegment]) -> None:
        """Storing failed: give back at once the bytes of segments that will never
        be published (and of the one that failed), so a full disk recovers
        without waiting an hour for the reconciler. Never raises."""
        ...

    def finish(
        self,
        state: str,
        size: int,
        total: int,
        sha256: str | None,
        error: str | None,
        source_update: dict[str, Any] | None,
    ) -> None:
        """Record the final state; ``total`` counts bytes offered past a cap too."""
        ...


class PlacingTarget(SegmentTarget, Protocol):
    """A target the producer writes through (a backend that can append: the local
    filesystem). Bytes go from the producer's own buffer straight into the blob
    that will hold them, one copy; the writer's thread reads them back from the
    page cache to hash and index them, so the producer never waits for a hash
    and no segment is buffered in memory."""

    def place(self, offset: int, data: memoryview, into: str | None) -> str:
        """Write ``data`` at writer ``offset`` into blob ``into`` (None: start a
        new blob there) and return the blob's key. Raises OverspillError."""
        ...

    def read_back(self, key: str, offset: int, size: int) -> Iterator[memoryview]:
        """The placed bytes ``[offset, offset + size)`` of blob ``key``, in pieces
        each valid until the next is asked for."""
        ...


@dataclass(frozen=True)
class _Pending:
    offset: int
    buf: bytearray | None  # None: placed bytes, in blob ``key`` already
    fill: int
    key: str | None = None
    newlines: int = 0  # placed bytes: counted by the producer as they were placed
    ends_with_newline: bool = False
    # Placed bytes the caller handed over as immutable ``bytes``: hashed from these
    # views instead of read back from the blob (None: some piece was a buffer the
    # caller reuses, so only the blob holds them).
    chunks: list[memoryview] | None = None


class ArtifactWriter:
    def __init__(
        self,
        artifact_id: str,
        target: SegmentTarget,
        *,
        max_bytes: int,
        segment_bytes: int,
        flush_interval: float,
        lease_seconds: float,
        max_buffers: int = 2,
        publish_segments: int = 8,
        stall_s: float | None = 10.0,
        placing: bool = False,
    ) -> None:
        self.id = artifact_id
        self._target = target
        # Placing (see PlacingTarget): ``_fill`` counts the current segment's bytes
        # already in blob ``_seg_key``; at most ``max_buffers + 2`` placed segments
        # wait to be indexed (page cache, not memory) before the producer waits.
        self._placer: PlacingTarget | None = target if placing else None  # type: ignore[assignment]
        self._seg_key: str | None = None
        self._new_blob = True  # the next segment starts a blob (none yet, or one was published)
        self._placing = False  # the producer is writing outside the lock
        self._seg_newlines = 0  # in the current placed segment
        self._seg_ends_nl = False
        self._seg_chunks: list[memoryview] | None = []
        self._published_keys: set[str] = set()
        self._max_bytes = max_bytes
        self._segment_bytes = segment_bytes
        self._flush_interval = flush_interval
        self._renew_every = lease_seconds / 3
        self._max_buffers = max_buffers
        # Storage never holds the producer (a command's pipe) longer than this: a
        # store that has not taken a segment for stall_s fails the artifact, and
        # the command goes on with its tail and spill file exact.
        self._stall_s = stall_s
        self._publish_segments = publish_segments
        self._hasher = hashlib.sha256()
        # Started on the first segment, so a small artifact never spawns it.
        self._hash_thread = ThreadPoolExecutor(1, thread_name_prefix=f"hash-{artifact_id}")
        # Segment buffers, reused: no reallocation churn, so RSS stays flat. Two
        # suffice: one fills while the other is stored (double buffering). A new
        # one starts empty and grows to a segment as data arrives (a reused one is
        # overwritten in place), so an artifact of a few hundred KB costs that much
        # memory, not an 8 MiB zero-fill.
        self._pool: list[bytearray] = []
        self._buffer = bytearray()
        self._buffers_made = 1
        self._fill = 0
        self._buffer_since = 0.0
        self._pending: deque[_Pending] = deque()
        self._staged: list[StagedSegment] = []
        self._staged_bytes = 0
        self._staged_since = 0.0
        self._flush_requests = 0
        self._cond = threading.Condition()
        self._in_flight = 0
        self._accepted = 0  # bytes taken into the artifact (<= max_bytes)
        self._committed = 0  # bytes readers can see
        self._total = 0  # bytes the producer offered
        self._closing = False
        self._result: WriteResult | None = None
        self.error: str | None = None
        self._failure: OverspillError | None = None  # the store's own error, if it was one
        self.stopped: str | None = None  # why storing stopped early (quota), if it did
        self._last_renew = time.monotonic()
        self._thread = threading.Thread(
            target=_drive, args=(weakref.ref(self),), name=f"writer-{artifact_id}", daemon=True
        )
        self._thread.start()

    # -- producer side -------------------------------------------------------------

    @property
    def total_bytes(self) -> int:
        return self._total

    @property
    def stored_bytes(self) -> int:
        return self._committed

    @property
    def capped(self) -> bool:
        if self.stopped:
            return True
        return self._total > self._accepted and self._accepted >= self._max_bytes

    def write(self, data: bytes | bytearray | memoryview, newlines: int | None = None) -> None:
        """Append bytes. Past the cap they are counted but not stored.

        ``newlines``, when the caller already counted them in ``data`` (the
        executor does, for the model's view), saves counting them again.

        Raises StorageUnavailable once a segment failed to store; what was
        published before stays readable.
        """
        if self._closing:
            raise Conflict(f"artifact {self.id} writer is closed")
        if self.error:
            raise self._error_to_raise()
        n = len(data)
        self._total += n
        room = self._max_bytes - self._accepted
        if room <= 0 or n == 0 or self.stopped:
            return
        if n > room:
            data = memoryview(data)[:room]
            n = room
            newlines = None
        self._accepted += n
        view = memoryview(data)
        if self._placer is not None:
            self._place(view, newlines, isinstance(data, bytes) or _backed_by_bytes(view))
            return
        while view:
            piece = view[: self._segment_bytes - self._fill]
            with self._cond:
                if not self._fill:
                    self._buffer_since = time.monotonic()
                self._buffer[self._fill : self._fill + len(piece)] = piece
                self._fill += len(piece)
                if self._fill >= self._segment_bytes:
                    self._enqueue_buffer_locked(wait=True)
            view = view[len(piece) :]

    def _place(self, view: memoryview, newlines: int | None, immutable: bool) -> None:
        """The placing producer: each piece goes straight into its blob; a segment
        is cut when it reaches ``segment_bytes`` (or by the flush interval)."""
        assert self._placer is not None
        size = len(view)  # the caller's count holds for all of it, not a part
        while view:
            with self._cond:
                if self.error or self.stopped:
                    return
                if not self._fill:
                    self._buffer_since = time.monotonic()
                    self._seg_chunks = []
                    if self._new_blob:
                        self._seg_key, self._new_blob = None, False
                offset = self._next_offset_locked()
                piece = view[: self._segment_bytes - self._fill]
                into = self._seg_key
                self._placing = True
            try:
                key = self._placer.place(offset, piece, into)
            except OverspillError as exc:
                with self._cond:
                    self._placing = False
                if not self.stopped:  # after a quota stop, a lost piece is no failure
                    self._fail_and_discard(exc.message, cause=exc)
                    raise self._error_to_raise() from None
                return
            whole = len(piece) == size and newlines is not None
            counted = newlines if whole and newlines is not None else count_newlines(piece)
            with self._cond:
                self._placing = False
                self._seg_key = key
                self._seg_newlines += counted
                self._seg_ends_nl = piece[-1] == 10
                if self._seg_chunks is not None:
                    if immutable:
                        self._seg_chunks.append(piece)
                    else:
                        self._seg_chunks = None
                self._fill += len(piece)
                if self._fill >= self._segment_bytes:
                    self._enqueue_buffer_locked(wait=True)
            view = view[len(piece) :]

    def _next_offset_locked(self) -> int:
        queued = sum(p.fill for p in self._pending)
        return self._committed + self._staged_bytes + self._in_flight + queued + self._fill

    def _error_to_raise(self) -> OverspillError:
        """A lost race (another appender got the offset first, the lease went)
        stays a Conflict for the caller, with the current size; anything else
        means the bytes could not be stored."""
        if isinstance(self._failure, Conflict):
            return self._failure
        return StorageUnavailable(self.error or "storage failed")

    def flush(self) -> None:
        """Publish everything written so far and wait until readers can see it."""
        with self._cond:
            if self._fill:
                self._enqueue_buffer_locked(wait=True)
            self._flush_requests += 1
            self._cond.notify_all()
            try:
                while self._unpublished_locked() and not self.error and not self.stopped:
                    self._cond.wait()
            finally:
                self._flush_requests -= 1
        if self.error:
            raise self._error_to_raise()

    def close(
        self,
        state: str | None = None,
        error: str | None = None,
        source_update: dict[str, Any] | None = None,
    ) -> WriteResult:
        """Publish the rest and record the final state (complete/capped/failed);
        ``source_update`` adds what was only known at the end (an exit code).

        Never raises for storage trouble: the result's ``error`` says what went wrong.
        """
        if self._result is not None:
            return self._result
        with self._cond:
            if self._fill and not self.error and not self.stopped:
                self._enqueue_buffer_locked(wait=False, refill=False)
            self._closing = True
            self._cond.notify_all()
        self._thread.join(self._stall_s)
        if self._thread.is_alive():
            # A storage call that does not return: finish without it (the row is
            # marked failed; anything it stores later is in no row, and the
            # reconciler takes it back).
            self._fail(f"storage did not answer within {self._stall_s:g} s")
        else:
            self._hash_thread.shutdown()
        err = self.error or error
        if err:
            final = "failed"
        else:
            final = state or ("capped" if self.capped else "complete")
        # After a quota stop the hash covers bytes that were never stored: drop it.
        sha = (
            self._hasher.hexdigest()
            if final in ("complete", "capped") and not self.stopped
            else None
        )
        err = err or self.stopped
        try:
            self._target.finish(final, self._committed, self._total, sha, err, source_update)
        except OverspillError as exc:
            err = err or exc.message
        self._result = WriteResult(
            id=self.id,
            state=final,
            size_bytes=self._committed,
            total_bytes=self._total,
            sha256=sha,
            error=err,
        )
        return self._result

    def abandon(self) -> None:
        """Stop the background thread without finishing (simulates a dead process);
        whatever was stored but not published is left for the reconciler."""
        with self._cond:
            self._closing = True
            self._pending.clear()
            self._staged.clear()
            self._fill = 0
            self._cond.notify_all()
        self._thread.join()
        self._hash_thread.shutdown()
        self._result = WriteResult(
            id=self.id,
            state="writing",
            size_bytes=self._committed,
            total_bytes=self._total,
            sha256=None,
            error="abandoned",
        )

    def __enter__(self) -> ArtifactWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(error=f"producer failed: {exc_type.__name__}" if exc_type else None)

    def _unpublished_locked(self) -> bool:
        return bool(self._pending or self._in_flight or self._staged)

    def _enqueue_buffer_locked(self, *, wait: bool, refill: bool = True) -> None:
        """Hand the filled buffer to the publisher (no copy) and take a free one.

        ``wait`` (the producer): block until a buffer is free, which is the
        writer's backpressure. The publisher's own time-based flush never waits:
        it runs only when nothing is in flight, so a buffer is free anyway.
        ``refill`` is off at close: no more bytes will come."""
        if self.error or self.stopped:
            self._fill = 0
            return
        offset = self._next_offset_locked() - self._fill
        if self._placer is not None:
            self._pending.append(
                _Pending(
                    offset,
                    None,
                    self._fill,
                    self._seg_key,
                    self._seg_newlines,
                    self._seg_ends_nl,
                    self._seg_chunks,
                )
            )
            self._seg_newlines = 0
            self._seg_chunks = []
        else:
            self._pending.append(_Pending(offset, self._buffer, self._fill))
        self._fill = 0
        self._cond.notify_all()
        if not refill:
            return
        if self._placer is not None:
            self._wait_for_index_locked(wait)
            return
        deadline = None if self._stall_s is None else time.monotonic() + self._stall_s
        while (
            wait
            and not self._pool
            and self._buffers_made >= self._max_buffers
            and not self.error
            and not self.stopped
        ):
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                self._fail(
                    f"storage fell behind: no segment stored for {self._stall_s:g} s; "
                    "stopped storing (the output shown is unaffected)"
                )
                self._fill = 0
                return
            self._cond.wait(remaining)
        if self._pool:
            self._buffer = self._pool.pop()
        else:
            self._buffer = bytearray()
            self._buffers_made += 1

    def _wait_for_index_locked(self, wait: bool) -> None:
        """Placing backpressure: the producer waits while too many placed segments
        are not yet indexed (hashed and counted), and fails the artifact, as the
        buffered path does, if none is indexed for ``stall_s``."""
        deadline = None if self._stall_s is None else time.monotonic() + self._stall_s
        while (
            wait and len(self._pending) > self._max_buffers and not self.error and not self.stopped
        ):
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                self._fail(
                    f"storage fell behind: no segment stored for {self._stall_s:g} s; "
                    "stopped storing (the output shown is unaffected)"
                )
                return
            self._cond.wait(remaining)

    # -- background publisher --------------------------------------------------------

    def _step(self) -> bool:
        """One turn of the background loop: store a segment, publish a batch, or
        renew the lease. False once the writer is closing and all is stored."""
        with self._cond:
            item = self._next_item_locked()
            batch: list[StagedSegment] = []
            if item is not None:
                self._in_flight = item.fill
            elif self._staged and self._publish_due_locked():
                batch = list(self._staged)
            elif self._closing and not self._pending:
                return False
        if item is not None:
            self._store(item)
        elif batch:
            self._publish(batch)
        elif time.monotonic() - self._last_renew >= self._renew_every:
            try:
                self._target.renew()
                self._last_renew = time.monotonic()
            except OverspillError:
                pass  # retried next tick; the lease is generous
        return True

    def _publish_due_locked(self) -> bool:
        return bool(
            self._closing
            or self._flush_requests
            or len(self._staged) >= self._publish_segments
            # A partial segment was cut by the flush interval: it is already late.
            or self._staged[-1].size < self._segment_bytes
            or time.monotonic() - self._staged_since >= self._flush_interval
        )

    def _next_item_locked(self) -> _Pending | None:
        deadline = time.monotonic() + min(self._flush_interval, self._renew_every)
        while not self._pending and not self._closing:
            now = time.monotonic()
            if (
                self._fill
                and not self._placing
                and now - self._buffer_since >= self._flush_interval
            ):
                self._enqueue_buffer_locked(wait=False)
                break
            if self._staged and self._publish_due_locked():
                return None
            remaining = deadline - now
            if self._fill:
                remaining = min(remaining, self._buffer_since + self._flush_interval - now)
            if self._staged:
                remaining = min(remaining, self._staged_since + self._flush_interval - now)
            if remaining <= 0:
                return None
            self._cond.wait(remaining)
        return self._pending.popleft() if self._pending else None

    def _fail_and_discard(self, message: str, *, cause: OverspillError | None = None) -> None:
        with self._cond:
            staged = list(self._staged)
            if self._placer is not None:
                placed = [(p.offset, p.fill, p.key) for p in self._pending]
                if self._seg_key is not None:
                    placed.append((0, self._fill, self._seg_key))
                staged += [StagedSegment(o, n, k, 0, False) for o, n, k in placed if k]
                staged = [seg for seg in staged if seg.key not in self._published_keys]
        self._fail(message, cause=cause)
        self._target.discard(staged)

    def _fail(
        self, message: str, *, quota: bool = False, cause: OverspillError | None = None
    ) -> None:
        with self._cond:
            if quota:
                self.stopped = message
            else:
                self.error = message
                self._failure = cause
            self._in_flight = 0
            self._pending.clear()
            self._staged.clear()
            self._staged_bytes = 0
            self._cond.notify_all()

    def _index_placed(self, item: _Pending) -> StagedSegment:
        """Hash a placed segment, reading it back from its blob (the page cache,
        just written). sha256 releases the GIL on these chunks, so the producer
        goes on placing meanwhile; its newlines were counted as it was placed."""
        assert self._placer is not None and item.key is not None
        if item.chunks is not None:  # immutable: hashed as handed over, no read-back
            for piece in item.chunks:
                self._hasher.update(piece)
        else:
            for chunk in self._placer.read_back(item.key, item.offset, item.fill):
                self._hasher.update(chunk)
        return StagedSegment(
            item.offset, item.fill, item.key, item.newlines, item.ends_with_newline
        )

    def _store(self, item: _Pending) -> None:
        """Store (or, for placed bytes, hash) one segment and stage it; a storage
        failure fails the artifact, a quota stop caps it."""
        try:
            staged = self._index_placed(item) if item.buf is None else self._stage_buffer(item)
        except QuotaExceeded as exc:
            # Not a failure: the artifact keeps its prefix and becomes capped.
            self._publish_remaining_then_stop(exc.message)
            return
        except OverspillError as exc:
            self._fail_and_discard(exc.message, cause=exc)
            return
        except Exception as exc:  # a bug or an unexpected driver error: never hang the producer
            self._fail_and_discard(f"storage failed: {type(exc).__name__}: {exc}")
            return
        with self._cond:
            if item.buf is not None:
                self._pool.append(item.buf)
            self._in_flight = 0
            if staged is None:
                self._committed += item.fill
                self._last_renew = time.monotonic()
            else:
                if not self._staged:
                    self._staged_since = time.monotonic()
                self._staged.append(staged)
                self._staged_bytes += item.fill
            self._cond.notify_all()

    def _stage_buffer(self, item: _Pending) -> StagedSegment | None:
        """Store a buffered segment's bytes; None when storing already made them
        visible (an HTTP append, counted by the server that stores it)."""
        assert item.buf is not None
        with memoryview(item.buf)[: item.fill] as data:
            # hashlib releases the GIL on large updates, so the hash runs beside
            # the write and the count below. The count (which holds the GIL) comes
            # after the write so it never delays it, and here rather than on the
            # hash thread, which is the slower of the two. Waiting for the hash
            # before the next segment keeps it in segment order and the buffer
            # unshared.
            digested = self._hash_thread.submit(self._hasher.update, data)
            try:
                key = self._target.stage(item.offset, data)
                if key is None:
                    return None
                return StagedSegment(
                    item.offset, item.fill, key, count_newlines(data), data[item.fill - 1] == 10
                )
            finally:
                digested.result()

    def _publish_remaining_then_stop(self, reason: str) -> None:
        with self._cond:
            batch = list(self._staged)
        if batch:
            self._publish(batch)
        self._fail(self.stopped or reason, quota=True)

    def _publish(self, batch: list[StagedSegment]) -> None:
        try:
            published, stop = self._target.publish(batch)
        except OverspillError as exc:
            self._fail(exc.message, cause=exc)
            return
        except Exception as exc:  # never hang the producer
            self._fail(f"storage failed: {type(exc).__name__}: {exc}")
            return
        with self._cond:
            self._committed += published
            if self._placer is not None:
                # A blob that holds published bytes is never discarded, and the
                # next segment starts a new one (as a stage batch does).
                self._published_keys.update(seg.key for seg in batch)
                self._new_blob = True
            del self._staged[: len(batch)]
            self._staged_bytes -= sum(s.size for s in batch)
            self._staged_since = time.monotonic()
            self._last_renew = time.monotonic()
            self._cond.notify_all()
        if stop:
            self._fail(stop, quota=True)


def _drive(ref: weakref.ref[ArtifactWriter]) -> None:
    """The writer's background loop. It holds the writer only between steps (each
    waits at most a flush interval or a renewal period), so a writer its producer
    dropped without closing is collected and the loop ends: the lease stops being
    renewed and lapses, and the reaper records the artifact ``incomplete`` with
    every published byte, exactly as when the producer's process dies. (Holding
    the writer for good, as a bound method would, renewed that lease forever.)"""
    while True:
        writer = ref()
        if writer is None or not writer._step():
            return
        del writer


def _backed_by_bytes(view: memoryview) -> bool:
    """A view whose memory is an immutable ``bytes`` (it can be hashed later)."""
    return isinstance(view.obj, bytes)
