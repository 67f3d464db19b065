"""A search's greps, run ahead on every core by worker processes.

RE2 and StringZilla hold the GIL while they scan, so threads slowed a search
down (RE2 in two threads: 0.68x serial, measured); processes do not share it.
While the search walks its listing and takes each output's answer in order,
workers (``search_worker``) grep the outputs ahead of it in batches of a few
MiB (one task per output cost more to send than a small output costs to
search). The calling thread drives the workers' pipes itself: threads that
served them here waited up to the interpreter's 5 ms switch interval for the
GIL on every batch, and the parallel walk was slower than the serial one.

The answers are the serial search's, byte for byte: a worker greps a batch
with the bounds the call had left when the batch was sent (fewer matches or
bytes may be left by the time the call reaches it), and the call takes a
worker's answer for an output only when it cannot differ from its own -- the
output was searched to its end with fewer matches and fewer bytes than the
call has left, so no bound of the call could have cut it short. Any other
output (a bound reached, a segment moved, segments too many to send) the call
greps itself.

The workers start with the first search big enough to need them -- that
search runs serially while they start, so a one-off search never waits for
them -- and stop after ``IDLE_S`` unused or when the store closes. A search
takes the workers that are free; one that finds none (another search has
them) greps alone.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from overspill.artifacts.grep import search_worker
from overspill.artifacts.grep.search_worker import Answers, Batch, Output

if TYPE_CHECKING:
    from overspill.artifacts.queries import GrepQuery
    from overspill.artifacts.records import ArtifactInfo, GrepResult
    from overspill.artifacts.stored.content import Content

BATCH_BYTES = 4 * 1024 * 1024
"""Bytes of outputs one batch greps (at most BATCH_OUTPUTS of them)."""
BATCH_OUTPUTS = 256
PER_WORKER = 2
"""Batches sent to a worker before its first answer is read: one to grep, one queued."""
PARALLEL_BYTES = 16 * 1024 * 1024
"""A listing page with fewer bytes than this to search is grepped by the call alone."""
PARALLEL_OUTPUT_BYTES = 1024 * 1024
"""... and whose outputs average less than this are grepped alone too. Measured
on 2 cores: 32 outputs of 16 MiB took 0.18 s with two workers against 0.21 s
alone; 10,000 of 214 KB took 1.36 s against 1.26 s alone (each output's answer
costs the caller about what grepping it costs, and the workers add their own
share of the two cores)."""
IDLE_S = 30.0


_WORKER_ENV = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TMPDIR")
"""All of the environment a worker gets: what the interpreter needs to start.
It reads local blobs named on its command line, so no setting and no
credential of the serving process reaches it."""


class _Worker:
    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", search_worker.__name__, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
            env={k: os.environ[k] for k in _WORKER_ENV if k in os.environ},
        )
        self.up = False
        self.pending: deque[int] = deque()  # batches sent, answers not read yet

    def is_up(self) -> bool:
        """Whether it said it is up (checked without waiting)."""
        out = self.proc.stdout
        assert out is not None
        if not self.up and self.proc.poll() is None and select.select([out], [], [], 0)[0]:
            self.up = out.read(1) == b"+"
        return self.up and self.proc.poll() is None

    def send(self, batch_id: int, batch: Batch) -> None:
        assert self.proc.stdin is not None
        search_worker.send(self.proc.stdin, batch)
        self.pending.append(batch_id)

    def receive(self) -> tuple[int, Answers]:
        """The answers of the oldest batch sent (waits for them)."""
        assert self.proc.stdout is not None
        answers: Answers = search_worker.receive(self.proc.stdout)
        return self.pending.popleft(), answers

    def drain(self) -> bool:
        """Read what it still owes (answers no one wants); False if it failed."""
        try:
            while self.pending:
                self.receive()
        except (OSError, EOFError, ValueError):
            return False
        return True

    def stop(self) -> None:
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class SearchPool:
    """Worker processes for one store's searches, each with its (local) blob store open."""

    def __init__(self, blob_url: str, workers: int) -> None:
        self._args = [blob_url]
        self.workers = workers
        self._lock = threading.Lock()
        self._free: list[_Worker] = []
        self._busy = 0
        self._closed_at = 0.0  # when close() ran while workers were busy
        self._idle: threading.Timer | None = None

    def checkout(self) -> list[_Worker]:
        """The free workers that are up, for one search (none: it greps alone).
        The first call starts them and does not wait for them."""
        with self._lock:
            self._touch()
            if not self._free and not self._busy:
                self._free = [_Worker(self._args) for _ in range(self.workers)]
                return []
            for w in [w for w in self._free if w.proc.poll() is not None]:
                self._free.remove(w)  # it died: the next start replaces it
                w.stop()
            taken = [w for w in self._free if w.is_up()]
            self._free = [w for w in self._free if w not in taken]
            self._busy += len(taken)
            return taken

    def up(self) -> int:
        """How many free workers are up now (starting none)."""
        with self._lock:
            return sum(1 for w in self._free if w.is_up())

    def checkin(self, workers: list[_Worker], lost: int, checked_out_at: float) -> None:
        """Workers back from a search (drained; ``lost``: how many it stopped as
        failed, replaced at the next start); a closed pool stops them."""
        with self._lock:
            self._busy -= len(workers) + lost
            closed = self._closed_at > checked_out_at
            if not closed:
                self._free.extend(workers)
                self._touch()
        if closed:
            for w in workers:
                w.stop()

    def _touch(self) -> None:
        """Restart the idle countdown (the lock is held)."""
        if self._idle is not None:
            self._idle.cancel()
        self._idle = threading.Timer(IDLE_S, self.close)
        self._idle.daemon = True
        self._idle.start()

    def close(self) -> None:
        """Stop the free workers now, the busy ones when their search ends."""
        with self._lock:
            free, self._free = self._free, []
            self._closed_at = time.monotonic()
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None
        for w in free:
            w.stop()


class Lookahead:
    """One listing page's outputs, grepped ahead by the pool (see the module)."""

    def __init__(
        self,
        pool: SearchPool,
        workers: list[_Worker],
        items: list[ArtifactInfo],
        contents: dict[str, Content],
        query: GrepQuery,
        *,
        first_offset: int,
        max_bytes: int,
    ) -> None:
        self._pool, self._workers = pool, workers
        self._since = time.monotonic()
        self._query = {
            k: v for k, v in query.__dict__.items() if k not in ("max_matches", "offset")
        }
        self._max_bytes = max_bytes
        self._outputs: list[Output | None] = []  # None: segments unknown, the caller greps
        self._sizes: list[int] = []  # bytes each output has to search
        for i, info in enumerate(items):
            offset = first_offset if i == 0 else 0
            segments = contents[info.id].known_segments()
            self._sizes.append(max(0, info.size_bytes - offset))
            self._outputs.append(
                None
                if segments is None
                else Output(
                    info.id, info.size_bytes, info.line_count, segments, offset, info.complete
                )
            )
        self._position = 0  # the output the caller takes next
        self._sent = 0  # outputs before this one were sent (or passed over)
        self._batches: list[tuple[int, int, _Worker]] = []  # (first output, count, worker)
        self._answers: dict[int, Answers] = {}
        self._stopped = False

    def take(self, matches_left: int, scan_left: int) -> GrepResult | None:
        """The workers' answer for the next output when it is the serial one, else
        None (the caller greps it itself). Outputs are taken in listing order, with
        the bounds the call has left before each."""
        at = self._position
        self._position += 1
        if self._stopped:
            return None
        self._top_up(at, matches_left, scan_left)
        found = next(
            (
                (i, start)
                for i, (start, n, _) in enumerate(self._batches)
                if start <= at < start + n
            ),
            None,
        )
        if found is None:
            return None
        batch_id, start = found
        answers = self._answers_of(batch_id)
        if answers is None:
            return None
        res = answers[at - start] if at - start < len(answers) else None
        if res is None or not res.eof or res.truncated:
            return None
        if len(res.matches) >= matches_left or res.next_offset - res.scanned_from >= scan_left:
            return None
        return res

    def _answers_of(self, batch_id: int) -> Answers | None:
        """A batch's answers, reading its worker's pipe up to them (kept while
        the caller is inside the batch; earlier batches' are dropped)."""
        worker = self._batches[batch_id][2]
        for done in [b for b in self._answers if b < batch_id]:
            del self._answers[done]
        try:
            while batch_id not in self._answers:
                got, answers = worker.receive()
                self._answers[got] = answers
        except (OSError, EOFError, ValueError):  # the worker died: the caller greps
            self.stop()
            return None
        return self._answers[batch_id]

    def _top_up(self, at: int, matches_left: int, scan_left: int) -> None:
        """Send batches while a worker has room, or until the call's bytes are
        spoken for (as if every output before a batch were searched whole)."""
        self._sent = max(self._sent, at)
        while self._sent < len(self._outputs):
            worker = min(self._workers, key=lambda w: len(w.pending))
            if len(worker.pending) >= PER_WORKER:
                return
            while self._sent < len(self._outputs) and self._outputs[self._sent] is None:
                self._sent += 1
            scan = scan_left - sum(self._sizes[at : self._sent])
            if scan <= 0:
                return
            start, nbytes = self._sent, 0
            outputs: list[Output] = []
            while (
                self._sent < len(self._outputs)
                and nbytes < BATCH_BYTES
                and len(outputs) < BATCH_OUTPUTS
            ):
                out = self._outputs[self._sent]
                if out is None:
                    break
                outputs.append(out)
                nbytes += self._sizes[self._sent]
                self._sent += 1
            if not outputs:
                return
            batch = Batch(outputs, self._query, matches_left, scan, self._max_bytes)
            try:
                worker.send(len(self._batches), batch)
            except (OSError, ValueError):
                self.stop()
                return
            self._batches.append((start, len(outputs), worker))

    def stop(self) -> None:
        """The call ended (or a worker failed): the workers go back, each once it
        has answered what it was sent; one that failed is stopped."""
        if self._stopped:
            return
        self._stopped = True
        healthy = []
        for w in self._workers:
            if w.drain():
                healthy.append(w)
            else:
                w.stop()
        self._answers.clear()
        self._pool.checkin(healthy, len(self._workers) - len(healthy), self._since)


def cores() -> int:
    """The cores this process may run on (its affinity where the system has one:
    Linux; the machine's count elsewhere, as on macOS)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def worthwhile(items: list[ArtifactInfo], first_offset: int) -> bool:
    """Whether a page is worth sending to workers: enough bytes in all, in outputs
    big enough that grepping them, not sending and taking them, is the work."""
    total = sum(info.size_bytes for info in items) - first_offset
    return total >= PARALLEL_BYTES and total >= PARALLEL_OUTPUT_BYTES * len(items)
