"""The frame codecs: an artifact's bytes at rest as independent compressed frames.

A frame holds ``FRAME_BYTES`` logical bytes (the last one fewer), compressed on
its own, so a read of any window decompresses only the frames it touches and a
ranged GET fetches only those. A frame that does not shrink is kept raw (codec
``None``), so random bytes cost nothing extra. Each frame row names its codec,
so a store holds frames of both codecs and reads any of them. Both are
standard frame formats (``lz4 -d`` and ``zstd -d`` read a frame as it is
stored): no bespoke format.

Why two codecs, by measurement (256 KiB frames, on a 2-core machine):

| data | zstd -3 stores | lz4 -9 stores |
|---|---|---|
| compiler log, pytest run, npm install, JSON lines (bench/storage.py) | 13.6, 10.5, 11.9, 15.9 % | 13.5, 13.9, 12.2, 19.6 % |
| dpkg.log; Debian changelogs; ``seq 1 300000`` | 8.9; 20.0; 5.7 % | 12.1; 23.7; 60.1 % |

zstd decodes at 1.0-1.7 GB/s here, lz4 at 4.4-5.8. A compacted output is read
the way a hot one is (a window, a tail, a grep), and zstd's decoding was most
of each first read: a 64 KiB window cost 0.78 ms against 0.41 raw, a grep
1.3-3x raw. lz4 has no entropy stage, so where the bytes are few symbols in
many orders (digits) it stores several times more. ``auto`` (the default)
compresses each frame with both and keeps lz4 unless it costs more than
``LZ4_MARGIN`` of the frame's bytes beyond zstd: a log reads 3-4x faster for
at most 5 % of its size, and digits stay small. What it costs is compaction
(lz4 -9 compresses at 13-41 MB/s), on a server's background thread once the
output has gone cold.
"""

from __future__ import annotations

from types import ModuleType

FRAME_BYTES = 256 * 1024
ZSTD = "zstd"
LZ4 = "lz4"
AUTO = "auto"

LZ4_LEVEL = 9
"""lz4's high-compression level: 6 stored the JSON lines in 20.1 %, 12 gained
0.3 points at a third of the speed."""

LZ4_MARGIN = 1 / 20
"""``auto`` keeps an lz4 frame when it stores at most this share of the frame's
logical bytes more than zstd's would."""

_zstd: ModuleType | None = None
_lz4_module: ModuleType | None = None


def _codec() -> ModuleType:
    """zstd, imported on first use (a verb that never compresses never pays):
    the standard library's (``compression.zstd``, Python 3.14) or its backport."""
    global _zstd
    if _zstd is None:
        try:
            from compression import zstd  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            from backports import zstd  # type: ignore[import-not-found,no-redef,unused-ignore]
        _zstd = zstd
    return _zstd


def _lz4_frame() -> ModuleType:
    """lz4's frame format, imported on first use."""
    global _lz4_module
    if _lz4_module is None:
        import lz4.frame

        _lz4_module = lz4.frame
    return _lz4_module


def _lz4(data: bytes | memoryview) -> bytes:
    # 64 KiB blocks: a window near a frame's start decodes only the blocks it needs.
    lz4 = _lz4_frame()
    packed: bytes = lz4.compress(
        data, compression_level=LZ4_LEVEL, block_size=lz4.BLOCKSIZE_MAX64KB, store_size=True
    )
    return packed


def encode(data: bytes | memoryview, codec: str, level: int) -> tuple[str | None, bytes]:
    """The frame as stored: ``(codec, compressed)``, or ``(None, raw)`` when
    compressing would not save a byte (or ``level`` is 0: compression off).
    ``codec`` is a setting's (``auto`` chooses per frame); ``level`` is zstd's."""
    if level <= 0:
        return None, bytes(data)
    if codec == LZ4:
        chosen, packed = LZ4, _lz4(data)
    elif codec in (ZSTD, AUTO):
        chosen, packed = ZSTD, _codec().compress(data, level=level)
        # What zstd cannot shrink, lz4 cannot either: random bytes pay one pass.
        if codec == AUTO and len(packed) < len(data):
            fast = _lz4(data)
            if len(fast) - len(packed) <= len(data) * LZ4_MARGIN:
                chosen, packed = LZ4, fast
    else:
        raise ValueError(f"unknown frame codec {codec!r}")
    if len(packed) < len(data):
        return chosen, packed
    return None, bytes(data)


def decode(codec: str | None, stored: bytes, size: int, upto: int | None = None) -> bytes:
    """The frame's logical bytes, or its first ``upto`` of them (a window near a
    frame's start decompresses only that far); a frame whose length is wrong is
    corrupt."""
    want = size if upto is None else min(upto, size)
    data: bytes
    if codec is None:
        data = stored[:want]
    elif codec == LZ4:
        lz4 = _lz4_frame()
        if want < size:
            data = lz4.LZ4FrameDecompressor().decompress(stored, max_length=want)
        else:
            data = lz4.decompress(stored)
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
