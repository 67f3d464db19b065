"""Streaming writes: append any chunking, bounded memory, live visibility, a lease.

The caller's thread only copies into a segment buffer. One background thread
publishes full segments (blob first, then the row that makes it visible),
publishes a partial segment when data has waited ``flush_interval`` (so slow
output still shows up), and renews the lease. While it counts newlines and
writes a segment, a second thread hashes that same segment: the three stages
overlap, which is what lets a write keep pace with a plain file (hashing alone
costs as much as the write). At most ``max_pending`` segments wait, plus the
one being published: that is the whole of the writer's memory. If the process
dies, the lease lapses and the artifact becomes ``incomplete`` with every
published segment still readable.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from artifacts.errors import Conflict, OverspillError, QuotaExceeded, StorageUnavailable
from artifacts.newlines import NewlineCounter
from artifacts.records import WriteResult

CommitFn = Callable[[int, memoryview, int], None]
"""commit(offset, data, newlines): publish one segment; raises on failure."""

RenewFn = Callable[[], None]
FinishFn = Callable[[str, int, int, "str | None", "str | None", "dict[str, Any] | None"], None]
"""finish(state, size, total, sha256, error, source_update): record the final state."""


@dataclass(frozen=True)
class _Pending:
    offset: int
    buf: bytearray
    fill: int


class ArtifactWriter:
    def __init__(
        self,
        artifact_id: str,
        *,
        max_bytes: int,
        segment_bytes: int,
        flush_interval: float,
        lease_seconds: float,
        commit: CommitFn,
        renew: RenewFn,
        finish: FinishFn,
        max_pending: int = 1,
    ) -> None:
        self.id = artifact_id
        self._max_bytes = max_bytes
        self._segment_bytes = segment_bytes
        self._flush_interval = flush_interval
        self._renew_every = lease_seconds / 3
        self._commit_fn = commit
        self._renew_fn = renew
        self._finish_fn = finish
        self._max_pending = max_pending
        self._hasher = hashlib.sha256()
        # Started on the first publish, so a small artifact never spawns it.
        self._hash_thread = ThreadPoolExecutor(1, thread_name_prefix=f"hash-{artifact_id}")
        self._newlines = NewlineCounter()
        # Fixed-size buffers, reused: no reallocation churn, so RSS stays flat.
        self._pool: list[bytearray] = []
        self._buffer = bytearray(segment_bytes)
        self._fill = 0
        self._buffer_since = 0.0
        self._pending: deque[_Pending] = deque()
        self._cond = threading.Condition()
        self._in_flight = 0
        self._accepted = 0  # bytes taken into the artifact (<= max_bytes)
        self._committed = 0
        self._total = 0  # bytes the producer offered
        self._closing = False
        self._closed = False
        self._result: WriteResult | None = None
        self.error: str | None = None
        self.stopped: str | None = None  # why storing stopped early (quota), if it did
        self._last_renew = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=f"writer-{artifact_id}", daemon=True)
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

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes. Past the cap they are counted but not stored.

        Raises StorageUnavailable once a segment failed to publish; what was
        published before stays readable.
        """
        if self._closing:
            raise Conflict(f"artifact {self.id} writer is closed")
        if self.error:
            raise StorageUnavailable(self.error)
        n = len(data)
        self._total += n
        room = self._max_bytes - self._accepted
        if room <= 0 or n == 0 or self.stopped:
            return
        if n > room:
            data = memoryview(data)[:room]
            n = room
        self._accepted += n
        view = memoryview(data)
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

    def flush(self) -> None:
        """Publish everything written so far and wait until readers can see it."""
        with self._cond:
            if self._fill:
                self._enqueue_buffer_locked(wait=True)
            while (self._pending or self._in_flight) and not self.error and not self.stopped:
                self._cond.wait()
        if self.error:
            raise StorageUnavailable(self.error)

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
                self._enqueue_buffer_locked(wait=False)
            self._closing = True
            self._cond.notify_all()
        self._thread.join()
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
            self._finish_fn(final, self._committed, self._total, sha, err, source_update)
        except OverspillError as exc:
            err = err or exc.message
        self._closed = True
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
        """Stop the background thread without finishing (simulates a dead process)."""
        with self._cond:
            self._closing = True
            self._pending.clear()
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

    def _enqueue_buffer_locked(self, *, wait: bool) -> None:
        while wait and len(self._pending) >= self._max_pending and not self.error:
            self._cond.wait()
        if self.error or self.stopped:
            self._fill = 0
            return
        # Hand the buffer itself over (no copy) and start a fresh one.
        queued = sum(p.fill for p in self._pending)
        offset = self._committed + self._in_flight + queued
        self._pending.append(_Pending(offset, self._buffer, self._fill))
        self._buffer = self._pool.pop() if self._pool else bytearray(self._segment_bytes)
        self._fill = 0
        self._cond.notify_all()

    # -- background publisher --------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                item = self._next_item_locked()
                if item is None and self._closing and not self._pending:
                    return
                if item is not None:
                    self._in_flight = item.fill
            if item is not None:
                self._publish(item)
            elif time.monotonic() - self._last_renew >= self._renew_every:
                try:
                    self._renew_fn()
                    self._last_renew = time.monotonic()
                except OverspillError:
                    pass  # retried next tick; the lease is generous

    def _next_item_locked(self) -> _Pending | None:
        deadline = time.monotonic() + min(self._flush_interval, self._renew_every)
        while not self._pending and not self._closing:
            if self._fill and time.monotonic() - self._buffer_since >= self._flush_interval:
                self._enqueue_buffer_locked(wait=False)
                break
            remaining = deadline - time.monotonic()
            if self._fill:
                remaining = min(
                    remaining, self._buffer_since + self._flush_interval - time.monotonic()
                )
            if remaining <= 0:
                return None
            self._cond.wait(remaining)
        return self._pending.popleft() if self._pending else None

    def _publish(self, item: _Pending) -> None:
        try:
            with memoryview(item.buf)[: item.fill] as data:
                # hashlib releases the GIL on large updates, so this runs beside the
                # count and the write below. Waiting for it before the next segment
                # keeps the hash in segment order and the buffer unshared.
                hashed = self._hash_thread.submit(self._hasher.update, data)
                try:
                    self._commit_fn(item.offset, data, self._newlines.count(data))
                finally:
                    hashed.result()
        except QuotaExceeded as exc:
            # Not a failure: the artifact keeps its prefix and becomes capped.
            with self._cond:
                self.stopped = exc.message
                self._in_flight = 0
                self._pending.clear()
                self._cond.notify_all()
            return
        except OverspillError as exc:
            with self._cond:
                self.error = exc.message
                self._in_flight = 0
                self._pending.clear()
                self._cond.notify_all()
            return
        except Exception as exc:  # a bug or an unexpected driver error: never hang the producer
            with self._cond:
                self.error = f"storage failed: {type(exc).__name__}: {exc}"
                self._in_flight = 0
                self._pending.clear()
                self._cond.notify_all()
            return
        with self._cond:
            self._committed += item.fill
            self._pool.append(item.buf)
            self._in_flight = 0
            self._last_renew = time.monotonic()
            self._cond.notify_all()
