"""Frames decoded ahead of a long read, on a thread of their own.

A grep over a compacted output decodes every frame and then scans it, on one
thread. zstd releases the GIL while it decodes, so a second thread decoding
every other frame while the reader decodes and scans the rest puts both cores
on the work. Only a read that needs
``MIN_FRAMES`` whole frames or more of one run is helped (a window or a tail
needs one or two, and a hand-over costs more than it saves there); at most
``AHEAD`` frames wait decoded, so memory stays bounded per read.

One decoding thread per process, shared by every read: what it holds at once is
``AHEAD`` frames per read in progress.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from overspill.artifacts.stored.frames import ZSTD, decode

SLOW = frozenset({ZSTD})
"""The codecs whose frames are worth a second thread. An lz4 frame decodes in
~60 us, less than the hand-over: sending every other one ahead made a 1 %
grep of 128 MiB of lz4 frames 144 -> 197 ms, a rare regex 152 -> 177."""

AHEAD = 4
"""Frames decoded ahead of the reader, at most (1 MiB of 256 KiB frames)."""

MIN_FRAMES = 4
"""Whole frames a read must still need in a run for decoding ahead to start."""

STRIDE = 2
"""Every other frame is sent ahead; the reader decodes the ones between itself.
The decoding is what takes the time (a scan for a rare string is a twentieth
of it), so two threads decoding beat one decoding while the other waits:
a no-match grep of 8 MiB of JSON lines (zstd) took 5.5-5.9 ms one after the
other, 6.2 ms with the decoder doing every frame, 3.7-4.2 ms with every other."""

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


class Frame(Protocol):
    @property
    def codec(self) -> str | None: ...
    @property
    def size(self) -> int: ...
    @property
    def blob_offset(self) -> int: ...
    @property
    def stored_size(self) -> int | None: ...


def packed(frame: Frame, stored: bytes, base: int) -> bytes:
    """``frame``'s stored bytes, out of those of its run read from blob offset
    ``base``."""
    at = frame.blob_offset - base
    return stored[at : at + (frame.stored_size or 0)]


def _decoder() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(1, thread_name_prefix="frame-decode")
        return _pool


class Ahead:
    """Decodes ``run[first:last]`` (frames the read needs whole) ahead of the
    reader, which takes each with ``take`` in order and ``close``s when done."""

    def __init__(
        self, run: Sequence[Frame], stored: bytes, base: int, first: int, last: int
    ) -> None:
        self._run = run
        self._stored = stored
        self._base = base
        self._next = first  # the next frame to hand to the decoder
        self._last = last
        self._jobs: dict[int, Future[bytes]] = {}
        for _ in range(AHEAD):
            self._submit()

    def _submit(self) -> None:
        i = self._next
        while i < self._last and self._run[i].codec not in SLOW:
            i += 1  # stored as it is, or quick to decode: quicker here than handed over
        if i >= self._last:
            return
        self._next = i + STRIDE
        seg = self._run[i]
        self._jobs[i] = _decoder().submit(
            decode, seg.codec, packed(seg, self._stored, self._base), seg.size
        )

    def take(self, i: int) -> bytes | None:
        """Frame ``i`` decoded whole, or None if it was not sent ahead (or its
        decoding failed: the reader decodes it itself and meets the error)."""
        job = self._jobs.pop(i, None)
        if job is None:
            return None
        self._submit()
        if job.cancel():  # not started yet: quicker here than waiting behind others
            return None
        try:
            return job.result()
        except ValueError:
            return None

    def close(self) -> None:
        """The read ended (or stopped early): frames not yet decoded are not."""
        for job in self._jobs.values():
            job.cancel()
        self._jobs.clear()
