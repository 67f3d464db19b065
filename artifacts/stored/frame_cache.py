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

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")
_Rows = TypeVar("_Rows")


class _Recent(Generic[_K, _V]):
    """Values by key, the most recently used kept within ``capacity`` (the sum of
    the values' ``weight``); thread-safe (a server's requests share it)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[_K, _V] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def _get(self, key: _K) -> _V | None:
        with self._lock:
            value = self._kept.get(key)
            if value is not None:
                self._kept.move_to_end(key)
            return value

    def weight(self, value: _V) -> int:
        raise NotImplementedError

    def _put(self, key: _K, value: _V) -> None:
        if self.weight(value) > self.capacity:
            return
        with self._lock:
            self._pop(key)
            self._kept[key] = value
            self._held += self.weight(value)
            while self._held > self.capacity:
                _, gone = self._kept.popitem(last=False)
                self._held -= self.weight(gone)

    def _pop(self, key: _K) -> None:
        old = self._kept.pop(key, None)
        if old is not None:
            self._held -= self.weight(old)

    def drop(self, key: _K) -> None:
        with self._lock:
            self._pop(key)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._held = 0

    @property
    def size(self) -> int:
        return self._held


class FrameCache(_Recent[tuple[str, int], bytes]):
    """Decoded frames (whole, or the start a read needed) by blob key and offset."""

    def weight(self, value: bytes) -> int:
        return len(value)

    def get(self, where: tuple[str, int]) -> bytes | None:
        return self._get(where)

    def put(self, where: tuple[str, int], frame: bytes) -> None:
        self._put(where, frame)


FRAMES = FrameCache(CAPACITY)
"""The process's one cache (a server's requests, a verb's own store)."""


class RowCache(_Recent[str, tuple[Hashable, Sequence[_Rows]]]):
    """Segment-row lists by artifact id, each with the version of the artifact's
    row it was read at, the most recently used kept within ``capacity`` rows."""

    def weight(self, value: tuple[Hashable, Sequence[_Rows]]) -> int:
        return len(value[1])

    def get(self, artifact_id: str, version: Hashable) -> Sequence[_Rows] | None:
        """The rows read at ``version``, or None (none kept, or kept at another)."""
        kept = self._get(artifact_id)
        return kept[1] if kept is not None and kept[0] == version else None

    def put(self, artifact_id: str, version: Hashable, rows: Sequence[_Rows]) -> None:
        self._put(artifact_id, (version, rows))


ROW_CAPACITY = 64 * 1024
"""Segment rows kept in all (~150 bytes each: about 10 MB at most)."""

ROWS: RowCache[object] = RowCache(ROW_CAPACITY)
"""The process's segment rows (``SegmentRef`` lists, see ``stored.content``)."""


def clear_read_caches() -> None:
    """Empty both: a server gone idle, a scrub."""
    FRAMES.clear()
    ROWS.clear()
