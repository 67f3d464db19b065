"""Counting newlines in a segment without holding the GIL on long streams.

``bytes.count(b"\\n")`` scans at about the speed sha256 hashes (~1.6 GB/s here)
and holds the GIL while it does, so on a long, fast stream the writer's
producer and hasher threads stall behind it. numpy's comparison and count run
vectorised (~4x faster) and release the GIL, which lets the stages of a write
overlap on two cores: 1.9x the writer's throughput, measured with
bench/store.py.

But importing numpy costs ~80 ms and ~10 MB of RSS, more than counting a
typical overflowing output (a few MB) costs with ``bytes.count``. So a counter
switches to numpy only once its stream has passed ``NUMPY_AFTER`` bytes, or
when numpy is already loaded. The scratch array is bounded, never the size of
the segment.
"""

from __future__ import annotations

import sys
from typing import Any

NUMPY_AFTER = 32 * 1024 * 1024
_SLICE = 1 << 20


class NewlineCounter:
    """One per thread: reuses a fixed scratch buffer (not thread-safe)."""

    def __init__(self) -> None:
        self._seen = 0
        self._scratch: Any = None

    def count(self, data: bytes | bytearray | memoryview) -> int:
        view = memoryview(data).cast("B")
        self._seen += len(view)
        use_numpy = self._scratch is not None or "numpy" in sys.modules
        if len(view) < _SLICE or not (use_numpy or self._seen > NUMPY_AFTER):
            # Bounded copies (memoryview has no count): ~5x cheaper than the count.
            return sum(
                bytes(view[i : i + _SLICE]).count(b"\n") for i in range(0, len(view), _SLICE)
            )
        return self._count_vectorised(view)

    def _count_vectorised(self, view: memoryview) -> int:
        import numpy as np

        if self._scratch is None:
            self._scratch = np.empty(_SLICE, dtype=np.bool_)
        array = np.frombuffer(view, dtype=np.uint8)
        total = 0
        for start in range(0, len(array), _SLICE):
            part = array[start : start + _SLICE]
            out = self._scratch[: len(part)]
            np.equal(part, 10, out=out)
            total += int(np.count_nonzero(out))
        return total
