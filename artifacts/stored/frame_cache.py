"""Decoded frames, and each artifact's segment rows, shared by every read in this
process, most recently used kept.

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

``ROWS`` keeps the segment rows of the artifacts read last (those with few:
a 32 MiB output's 128 frames), so a read whose frames are decoded already
does not query and rebuild them (a 64 KiB window of a compacted 32 MiB output:
~2.0 ms, most of it that, against 0.8 ms raw). An entry is keyed by what the
artifact's row says of its bytes (size, stored size, last change): a rewrite
that changes those makes a new key. One that does not (a compaction or a
rehome: the same bytes in other blobs) leaves rows that name the old blobs,
which hold the same bytes or are gone, and a read that finds one gone drops
the entry and asks the database again. A scrub empties it with the frames.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

CAPACITY = 32 * 1024 * 1024

_Where = tuple[str, int]  # the blob key and the frame's offset in it
_Rows = TypeVar("_Rows")


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


class RowCache(Generic[_Rows]):
    """Segment-row lists by artifact id, each with the version of the artifact's
    row it was read at, the most recently used kept within ``capacity`` rows."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._lists: OrderedDict[str, tuple[Hashable, Sequence[_Rows]]] = OrderedDict()
        self._rows = 0
        self._lock = threading.Lock()

    def get(self, artifact_id: str, version: Hashable) -> Sequence[_Rows] | None:
        """The rows read at ``version``, or None (none kept, or kept at another)."""
        with self._lock:
            kept = self._lists.get(artifact_id)
            if kept is None or kept[0] != version:
                return None
            self._lists.move_to_end(artifact_id)
            return kept[1]

    def put(self, artifact_id: str, version: Hashable, rows: Sequence[_Rows]) -> None:
        if len(rows) > self.capacity:
            return
        with self._lock:
            self._drop(artifact_id)
            self._lists[artifact_id] = (version, rows)
            self._rows += len(rows)
            while self._rows > self.capacity:
                _, (_, gone) = self._lists.popitem(last=False)
                self._rows -= len(gone)

    def drop(self, artifact_id: str) -> None:
        """Forget an artifact's rows (a read found one naming a blob that is gone)."""
        with self._lock:
            self._drop(artifact_id)

    def _drop(self, artifact_id: str) -> None:
        kept = self._lists.pop(artifact_id, None)
        if kept is not None:
            self._rows -= len(kept[1])

    def clear(self) -> None:
        with self._lock:
            self._lists.clear()
            self._rows = 0

    @property
    def size(self) -> int:
        return self._rows


ROW_CAPACITY = 64 * 1024
"""Segment rows kept in all (~150 bytes each: about 10 MB at most)."""

ROWS: RowCache[object] = RowCache(ROW_CAPACITY)
"""The process's segment rows (``SegmentRef`` lists, see ``stored.content``)."""


def clear_read_caches() -> None:
    """Empty both: a server gone idle, a scrub."""
    FRAMES.clear()
    ROWS.clear()
