"""The frame codec: an artifact's bytes at rest as independent zstd frames.

A frame holds ``FRAME_BYTES`` logical bytes (the last one fewer), compressed on
its own, so a read of any window decompresses only the frames it touches and a
ranged GET fetches only those. A frame that does not shrink is kept raw (codec
``None``), so random bytes cost nothing extra. The codec is zstd from the
standard library (``compression.zstd``, Python 3.14) or its backport: no
bespoke format, and any zstd tool can read a frame.

Level 3 by measurement (bench/storage.py): on a 32 MiB service log, 256 KiB
frames at level 3 store 14% of the bytes at ~450 MB/s and read back at
~1.4 GB/s; higher levels gain a point or two at a third of the speed.
"""

from __future__ import annotations

from types import ModuleType

FRAME_BYTES = 256 * 1024
ZSTD = "zstd"
DEFAULT_LEVEL = 3

_zstd: ModuleType | None = None


def _codec() -> ModuleType:
    """zstd, imported on first use (a verb that never compresses never pays)."""
    global _zstd
    if _zstd is None:
        try:
            from compression import zstd  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            from backports import zstd  # type: ignore[import-not-found,no-redef,unused-ignore]
        _zstd = zstd
    return _zstd


def encode(data: bytes | memoryview, level: int) -> tuple[str | None, bytes]:
    """The frame as stored: ``("zstd", compressed)``, or ``(None, raw)`` when
    compressing would not save a byte (or ``level`` is 0: compression off)."""
    if level <= 0:
        return None, bytes(data)
    packed: bytes = _codec().compress(data, level=level)
    if len(packed) < len(data):
        return ZSTD, packed
    return None, bytes(data)


def decode(codec: str | None, stored: bytes, size: int, upto: int | None = None) -> bytes:
    """The frame's logical bytes, or its first ``upto`` of them (a window near a
    frame's start decompresses only that far); a frame whose length is wrong is
    corrupt."""
    want = size if upto is None else min(upto, size)
    if codec is None:
        data = stored[:want]
    elif codec == ZSTD:
        if want < size:
            data = _codec().ZstdDecompressor().decompress(stored, max_length=want)
        else:
            data = _codec().decompress(stored)
    else:
        raise ValueError(f"unknown frame codec {codec!r}")
    if len(data) != want:
        raise ValueError(f"frame gave {len(data)} bytes where its row says {want}")
    return data
