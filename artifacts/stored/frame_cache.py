"""Decoded frames shared by every read in this process, most recently used kept.

A model reads a compacted output in several calls -- its tail, a grep, a window
around a match -- and each call is a request of its own, with a ``Content`` of
its own: without a cache shared between them, each decodes the same frames
again (a 64 KiB window costs ~0.3 ms more compacted than raw, mostly that). A
frame's blob key names it for good (an artifact id, an offset and a random
nonce: no key is written twice with other bytes), so a decoded frame can be
reused by any later read that reaches it through its own, authorised, segment
row; the cache is never a way in.

Bounded by bytes (``CAPACITY``: 128 frames of 256 KiB); emptied by a server
that goes idle (nothing is kept for a read that may not come) and after a
scrub (no decoded copy of a secret outlives the blob that held it).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

CAPACITY = 32 * 1024 * 1024

_Where = tuple[str, int]  # the blob key and the frame's offset in it


class FrameCache:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._frames: OrderedDict[_Where, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, where: _Where) -> bytes | None:
        with self._lock:
            frame = self._frames.get(where)
            if frame is not None:
                self._frames.move_to_end(where)
            return frame

    def put(self, where: _Where, frame: bytes) -> None:
        """Keep a whole decoded frame (the oldest go past ``capacity``)."""
        if len(frame) > self.capacity:
            return
        with self._lock:
            old = self._frames.pop(where, None)
            if old is not None:
                self._bytes -= len(old)
            self._frames[where] = frame
            self._bytes += len(frame)
            while self._bytes > self.capacity:
                _, gone = self._frames.popitem(last=False)
                self._bytes -= len(gone)

    def clear(self) -> None:
        with self._lock:
            self._frames.clear()
            self._bytes = 0

    @property
    def size(self) -> int:
        return self._bytes


FRAMES = FrameCache(CAPACITY)
"""The process's one cache (a server's requests, a verb's own store)."""
