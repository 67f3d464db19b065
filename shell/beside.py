"""The copies of an overflowing stream that no reader waits for -- the failure
scan and the legacy spill file -- on a thread of their own beside the pump.

The pump thread reads the command's pipe, masks, keeps the tail and writes the
artifact; profiled on 256 MiB of log lines it spent 9 % of its time in the
failure scan and 3 % in the legacy copy. Handed over here, they run on the
other core while the pump reads on. The hand-over is bounded (``PENDING``
bytes): a slow disk under the legacy file holds the pump back, as it did when
the pump wrote it, instead of growing memory. Order is kept (one thread), and
``close`` returns once both have every byte.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .failures import FailureScan
    from .spill import SpillFile

PENDING = 4 * 1024 * 1024
"""Bytes handed over and not yet copied, at most (a read of the pipe is up to
1 MiB; one chunk is always taken, whatever its size)."""


class Beside:
    def __init__(self, scan: FailureScan | None, spill: SpillFile | None) -> None:
        self._scan = scan
        self._spill = spill
        self._chunks: deque[tuple[bytes, int] | None] = deque()
        self._held = 0  # bytes in _chunks
        self._cond = threading.Condition()
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="overspill-beside", daemon=True)
        self._thread.start()

    def put(self, chunk: bytes | memoryview, newlines: int) -> None:
        """Hand one chunk over (copied: the pump may reuse its buffer)."""
        if self._error is not None or self._closed:  # the copies stopped, or ended
            return
        with self._cond:
            while self._held and self._held + len(chunk) > PENDING and self._thread.is_alive():
                self._cond.wait()
            self._chunks.append((bytes(chunk), newlines))
            self._held += len(chunk)
            self._cond.notify_all()

    def close(self) -> None:
        """Wait until every chunk handed over is copied; a failure of the copies
        is raised here, on the caller's thread."""
        with self._cond:
            if not self._closed:
                self._closed = True
                self._chunks.append(None)
                self._cond.notify_all()
        self._thread.join()
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._chunks:
                    self._cond.wait()
                item = self._chunks.popleft()
            if item is None:
                return
            chunk, newlines = item
            try:
                if self._scan is not None:
                    self._scan.feed(chunk, newlines)
                if self._spill is not None:
                    self._spill.write(chunk)
            except BaseException as exc:  # raised again by close, on the caller's thread
                self._error = exc
                with self._cond:
                    self._chunks.clear()
                    self._held = 0
                    self._cond.notify_all()
                return
            with self._cond:
                self._held -= len(chunk)
                self._cond.notify_all()
