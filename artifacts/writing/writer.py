"""Streaming writes: append any chunking, bounded memory, live visibility, a lease.

A writer is a producer on the caller's side and one publisher loop on a
background thread:

* the **producer** (``artifacts.writing.producers``) takes the caller's bytes and cuts
  them into segments: buffered (the bytes are copied into a segment buffer and
  stored whole by a ``SegmentStager``: S3, an HTTP append) or placing (each
  chunk is written straight into the blob that will hold it by a
  ``SegmentPlacer``: the local filesystem, no copy, nothing buffered);
* the **loop** here indexes each segment the producer hands over (stores and
  hashes it, or hashes what was placed), then publishes stored segments through
  the ``SegmentPublisher`` in batches: every ``publish_segments`` segments, when
  stored data has waited ``flush_interval``, and on ``flush()``/``close()``.
  One transaction per batch instead of per segment keeps the database off a
  fast writer's critical path. Between batches it renews the lease.

If the process dies, the lease lapses and the artifact becomes ``incomplete``
with every published segment readable; stored but unpublished blobs are
orphans the reconciler reclaims. Storage never holds the producer (a command's
pipe) longer than ``stall_s``: past it the artifact fails and the command goes
on with its tail exact.

About 470 lines because the loop, ``flush``/``close`` and the failure path share
one condition with the producers, and their locking is checked best in one place.
"""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from collections import deque
from types import TracebackType
from typing import Any

from overspill.artifacts.errors import (
    Conflict,
    DatabaseUnavailable,
    DiskFull,
    OverspillError,
    QuotaExceeded,
    StorageUnavailable,
)
from overspill.artifacts.writing.db_retry import retrying
from overspill.artifacts.writing.producers import (
    BufferedProducer,
    Pending,
    PlacingProducer,
    Producer,
)
from overspill.artifacts.writing.segments import (
    FinishingPublisher,
    SegmentPlacer,
    SegmentPublisher,
    SegmentStager,
    StagedSegment,
    WriteResult,
    stored_account,
)
from overspill.artifacts.writing.writes import Ending


class ArtifactWriter:
    def __init__(
        self,
        artifact_id: str,
        publisher: SegmentPublisher,
        *,
        stager: SegmentStager | None = None,
        placer: SegmentPlacer | None = None,
        max_bytes: int,
        segment_bytes: int,
        flush_interval: float,
        lease_seconds: float,
        base: int = 0,
        max_buffers: int = 2,
        publish_segments: int = 8,
        stall_s: float | None = 10.0,
        retry_s: float = 0.0,
    ) -> None:
        if (stager is None) == (placer is None):
            raise TypeError("a writer stores through a stager or a placer, one of them")
        self.id = artifact_id
        self.base = base  # the artifact offset of this writer's first byte
        self._publisher = publisher
        # Its last batch rides with finish() (one round trip for both, on a socket).
        self._finishing: FinishingPublisher | None = (
            publisher if hasattr(publisher, "finish_with") else None  # type: ignore[assignment]
        )
        self.max_bytes = max_bytes
        self.segment_bytes = segment_bytes
        self.flush_interval = flush_interval
        self.max_buffers = max_buffers
        self.stall_s = stall_s
        # A producer's writer (never a server's request) retries a publish and its
        # end for this long while the database is briefly away (``db_retry``).
        self.retry_s = retry_s
        self._renew_every = lease_seconds / 3
        self._publish_segments = publish_segments
        self.hasher = hashlib.sha256()
        self.cond = threading.Condition()
        self.pending: deque[Pending] = deque()
        self._staged: list[StagedSegment] = []
        self._staged_bytes = 0
        self._staged_since = 0.0
        self._flush_requests = 0
        self.in_flight = 0
        self._accepted = 0  # bytes taken into the artifact (<= max_bytes)
        self.committed = 0  # bytes readers can see
        self._total = 0  # bytes the producer offered
        self._closing = False
        self._result: WriteResult | None = None
        self.error: str | None = None
        self._failure: OverspillError | None = None  # the store's own error, if it was one
        self.stopped: str | None = None  # why storing stopped early (quota), if it did
        self._last_renew = time.monotonic()
        self.producer: Producer = (
            PlacingProducer(self, placer) if placer is not None else BufferedProducer(self, stager)  # type: ignore[arg-type]
        )
        self._thread = threading.Thread(
            target=_drive, args=(weakref.ref(self),), name=f"writer-{artifact_id}", daemon=True
        )
        self._thread.start()

    # -- the caller's side -------------------------------------------------------------

    @property
    def total_bytes(self) -> int:
        return self._total

    def would_wait(self, n: int) -> bool:
        """Whether writing ``n`` more bytes now would wait for storage (the
        segment they fill would find no free buffer): a caller that must not wait
        keeps them elsewhere meanwhile."""
        with self.cond:
            if self.error or self.stopped:
                return False
            return self.producer.fill + n >= self.segment_bytes and self.producer.full_locked()

    @property
    def progress(self) -> int:
        """Bytes stored so far, published or not (grows with each segment a
        storage call finishes: the headway a caller waiting on the end watches)."""
        return self.committed + self._staged_bytes

    @property
    def stored_bytes(self) -> int:
        return self.committed

    @property
    def capped(self) -> bool:
        if self.stopped:
            return True
        return self._total > self._accepted and self._accepted >= self.max_bytes

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
            raise self.error_to_raise()
        n = len(data)
        self._total += n
        room = self.max_bytes - self._accepted
        if room <= 0 or n == 0 or self.stopped:
            return
        if n > room:
            data = memoryview(data)[:room]
            n = room
            newlines = None
        self._accepted += n
        self.producer.write(data, newlines)

    def flush(self) -> None:
        """Publish everything written so far and wait until readers can see it."""
        with self.cond:
            self.producer.cut_locked(wait=True)
            self._flush_requests += 1
            self.cond.notify_all()
            try:
                while self._unpublished_locked() and not self.error and not self.stopped:
                    self.cond.wait()
            finally:
                self._flush_requests -= 1
        if self.error:
            raise self.error_to_raise()

    def close(
        self,
        state: str | None = None,
        error: str | None = None,
        source_update: dict[str, Any] | None = None,
        total: int | None = None,
    ) -> WriteResult:
        """Publish the rest and record the final state (complete/capped/failed);
        ``source_update`` adds what was only known at the end (an exit code), and
        ``total`` how many bytes the producer's source printed in all when some
        never reached this writer (the store records that total, and never calls
        an artifact that holds fewer bytes complete).

        Never raises for storage trouble: the result's ``error`` says what went wrong.
        """
        if total is not None and total > self._total:
            self._total = total
        if self._result is not None:
            return self._result
        with self.cond:
            if not self.error and not self.stopped:
                self.producer.cut_locked(wait=False, refill=False)
            self._closing = True
            self.cond.notify_all()
        self._thread.join(self.stall_s)
        if self._thread.is_alive():
            # A storage call that does not return: finish without it (the row is
            # marked failed; anything it stores later is in no row, and the
            # reconciler takes it back).
            self.fail(f"storage did not answer within {self.stall_s:g} s")
        self.producer.close(wait=not self._thread.is_alive())
        err = self.error or error
        disk_full = self._failure.message if isinstance(self._failure, DiskFull) else None
        if err:
            final = "failed"
        else:
            final = state or ("capped" if self.capped else "complete")
        with self.cond:
            last = list(self._staged) if not self.error else []
        if final == "complete" and self._total > self.committed + sum(s.size for s in last):
            # Bytes were offered that never reached this writer: not the whole output.
            final = "incomplete"
            err = (
                f"{self.committed} of {self._total} bytes were stored; the rest never reached "
                "the store"
            )
        # After a quota stop the hash covers bytes that were never stored: drop it.
        sha = (
            self.hasher.hexdigest()
            if final in ("complete", "capped") and not self.stopped
            else None
        )
        err = err or self.stopped
        try:
            ending = Ending(final, self.base + self._total, sha, err, source_update)
            if self._finishing is not None:
                finishing = self._finishing
                published = retrying(lambda: finishing.finish_with(last, ending), self.retry_s)
                self.committed += published
                if published < sum(seg.size for seg in last):  # the quota stopped them
                    final, sha = "capped", None
            else:
                retrying(lambda: self._publisher.finish(ending), self.retry_s)
        except OverspillError as exc:
            err = err or exc.message
            if final in ("complete", "capped"):
                # The state could not be recorded: the artifact is not known to be
                # whole, and saying so here keeps the caller from claiming it is.
                final = "incomplete"
                sha = None
        if disk_full is not None:  # counted after the last publish, not before it
            err = stored_account(disk_full, self.committed, self._total)
        self._result = WriteResult(
            id=self.id,
            state=final,
            size_bytes=self.committed,
            total_bytes=self._total,
            sha256=sha,
            error=err,
            disk_full=disk_full,
        )
        return self._result

    def abandon(self) -> None:
        """Stop the background thread without finishing (an HTTP append ends, or a
        test simulates a dead process): whatever was stored but not published is
        left for the reconciler."""
        with self.cond:
            self._closing = True
            self.pending.clear()
            self._staged.clear()
            self.producer.forget_locked()
            self.cond.notify_all()
        self._thread.join()
        self.producer.close(wait=True)
        self._result = WriteResult(
            id=self.id,
            state="writing",
            size_bytes=self.committed,
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

    # -- what the producers share with the loop (called with ``cond`` held) --------------

    def next_offset_locked(self) -> int:
        """Where the producer's next byte goes, counted from this writer's start."""
        queued = sum(p.fill for p in self.pending)
        return self.committed + self._staged_bytes + self.in_flight + queued + self.producer.fill

    def hand_over_locked(self, item: Pending) -> None:
        self.pending.append(item)
        self.cond.notify_all()

    def wait_locked(self, blocked: Any) -> bool:
        """Backpressure: wait while ``blocked()``, failing the artifact if storage
        takes nothing for ``stall_s``. False when the producer must stop."""
        deadline = None if self.stall_s is None else time.monotonic() + self.stall_s
        while blocked() and not self.error and not self.stopped:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                self.fail(
                    f"storage fell behind: no segment stored for {self.stall_s:g} s; "
                    "stopped storing (the output shown is unaffected)"
                )
                return False
            self.cond.wait(remaining)
        return not self.error and not self.stopped

    def error_to_raise(self) -> OverspillError:
        """A lost race (another appender got the offset first, the lease went)
        stays a Conflict for the caller, with the current size, and a full disk
        stays DiskFull; anything else means the bytes could not be stored."""
        if isinstance(self._failure, Conflict | DiskFull | DatabaseUnavailable):
            return self._failure  # (a database away for a moment: the producer retries)
        return StorageUnavailable(self.error or "storage failed")

    def fail_and_discard(self, message: str, *, cause: OverspillError | None = None) -> None:
        """Storing failed: stop, and give back every blob no row will ever use."""
        with self.cond:
            unused = self.producer.unpublished_locked(list(self._staged))
        self.fail(message, cause=cause)
        self.producer.discard(unused)

    def fail(
        self, message: str, *, quota: bool = False, cause: OverspillError | None = None
    ) -> None:
        with self.cond:
            if quota:
                self.stopped = message
            elif self.error is None:  # the first failure is the cause; later ones follow it
                self.error = message
                self._failure = cause
            self.in_flight = 0
            self.pending.clear()
            self._staged.clear()
            self._staged_bytes = 0
            self.cond.notify_all()

    def _unpublished_locked(self) -> bool:
        return bool(self.pending or self.in_flight or self._staged)

    # -- the loop --------------------------------------------------------------------------

    def _step(self) -> bool:
        """One turn of the background loop: index a segment, publish a batch, or
        renew the lease. False once the writer is closing and all is done."""
        with self.cond:
            item = self._next_item_locked()
            batch: list[StagedSegment] = []
            if item is not None:
                self.in_flight = item.fill
            elif self._staged and self._publish_due_locked():
                batch = list(self._staged)
            elif self._closing and not self.pending:
                return False
        if item is not None:
            self._index(item)
        elif batch:
            self._publish(batch)
        elif time.monotonic() - self._last_renew >= self._renew_every:
            try:
                self._publisher.renew()
                self._last_renew = time.monotonic()
            except OverspillError:
                pass  # retried next tick; the lease is generous
        return True

    def _publish_due_locked(self) -> bool:
        if self._closing and self._finishing is not None:
            return bool(self._flush_requests)  # close() takes the rest to finish_with
        return bool(
            self._closing
            or self._flush_requests
            or len(self._staged) >= self._publish_segments
            # A partial segment was cut by the flush interval: it is already late.
            or self._staged[-1].size < self.segment_bytes
            or time.monotonic() - self._staged_since >= self.flush_interval
        )

    def _next_item_locked(self) -> Pending | None:
        deadline = time.monotonic() + min(self.flush_interval, self._renew_every)
        producer = self.producer
        while not self.pending and not self._closing:
            now = time.monotonic()
            if producer.fill and not producer.busy and now - producer.since >= self.flush_interval:
                producer.cut_locked(wait=False)
                break
            if self._staged and self._publish_due_locked():
                return None
            remaining = deadline - now
            if producer.fill:
                remaining = min(remaining, producer.since + self.flush_interval - now)
            if self._staged:
                remaining = min(remaining, self._staged_since + self.flush_interval - now)
            if remaining <= 0:
                return None
            self.cond.wait(remaining)
        return self.pending.popleft() if self.pending else None

    def _index(self, item: Pending) -> None:
        """Store (or, for placed bytes, hash) one segment and stage it; a storage
        failure fails the artifact, a quota stop caps it."""
        try:
            staged = self.producer.index(item)
        except QuotaExceeded as exc:
            # Not a failure: the artifact keeps its prefix and becomes capped.
            self._publish_remaining_then_stop(exc.message)
            return
        except OverspillError as exc:
            self.fail_and_discard(exc.message, cause=exc)
            return
        except Exception as exc:  # a bug or an unexpected driver error: never hang the producer
            self.fail_and_discard(f"storage failed: {type(exc).__name__}: {exc}")
            return
        with self.cond:
            self.producer.indexed_locked(item)
            self.in_flight = 0
            late: list[StagedSegment] = []
            if staged is None:  # storing made it visible (an HTTP append)
                self.committed += item.fill
                self._last_renew = time.monotonic()
            elif self.error:
                # It failed while this segment was indexed: no row will ever name
                # it, and publishing it after the gap would fail on its offset.
                late = self.producer.unpublished_locked([staged])
            else:
                if not self._staged:
                    self._staged_since = time.monotonic()
                self._staged.append(staged)
                self._staged_bytes += item.fill
            self.cond.notify_all()
        if late:
            self.producer.discard(late)

    def _publish_remaining_then_stop(self, reason: str) -> None:
        with self.cond:
            batch = list(self._staged)
        if batch:
            self._publish(batch)
        self.fail(self.stopped or reason, quota=True)

    def _publish(self, batch: list[StagedSegment]) -> None:
        try:
            published, stop = retrying(
                lambda: self._publisher.publish(batch), self.retry_s, lambda: bool(self.error)
            )
        except OverspillError as exc:
            self.fail(exc.message, cause=exc)
            return
        except Exception as exc:  # never hang the producer
            self.fail(f"storage failed: {type(exc).__name__}: {exc}")
            return
        with self.cond:
            self.committed += published
            self.producer.published_locked(batch)
            del self._staged[: len(batch)]
            self._staged_bytes -= sum(s.size for s in batch)
            self._staged_since = time.monotonic()
            self._last_renew = time.monotonic()
            self.cond.notify_all()
        if stop:
            self.fail(stop, quota=True)


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
