"""A one-line progress meter on stderr for long transfers: bytes, rate and (when
the size is known) percent. Only on a terminal, and never where it would mix
with the data: when the data goes to the same terminal, the meter's carriage
returns would land inside the bytes on screen."""

from __future__ import annotations

import sys
import threading
import time

from overspill.artifacts.units import format_bytes

_MIN_BYTES = 8 * 1024 * 1024  # below this a transfer is too short to watch
_EVERY_S = 0.2


class Progress:
    def __init__(self, total: int | None, verb: str, *, data_to_stdout: bool = True) -> None:
        self.total = total
        self.done = 0
        self._verb = verb
        big = total is None or total >= _MIN_BYTES
        self.enabled = big and sys.stderr.isatty() and not (data_to_stdout and sys.stdout.isatty())
        self._shown = False
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._last = self._start

    def advance(self, n: int) -> None:
        with self._lock:  # adopt's workers advance one meter
            self.done += n
        now = time.monotonic()
        if not self.enabled or now - self._last < _EVERY_S or self.done < _MIN_BYTES:
            return
        self._last = now
        rate = self.done / max(now - self._start, 1e-6)
        line = f"{self._verb} {format_bytes(self.done)}"
        if self.total:
            line += f" of {format_bytes(self.total)} ({100 * self.done / self.total:.0f}%)"
        sys.stderr.write(f"\r{line}, {format_bytes(int(rate))}/s\x1b[K")
        sys.stderr.flush()
        self._shown = True

    def finish(self) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
