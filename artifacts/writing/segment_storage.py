"""Where a writer's segment bytes go on a blob backend, before any row names them.

``BlobStager`` stores each segment as a blob of its own (``put``: S3, where an
object cannot grow). ``BlobPlacer`` writes the producer's chunks straight into
a growing blob through one open ``Appender`` (the local filesystem), a blob per
publish batch. Either gives back every unpublished blob the moment storing
fails, so a full disk recovers at once.

Nothing here touches the database: the local server's clients place bytes into
the home's blob directory with these and only publish through the server.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence

from overspill.artifacts.blobs.base import AppendableBlobStore, Appender, BlobStore
from overspill.artifacts.blobs.keys import segment_key, segment_key_base
from overspill.artifacts.errors import OverspillError, StorageUnavailable
from overspill.artifacts.writing.segments import StagedSegment

_READ_BACK = 1024 * 1024


def _give_back(blobs: BlobStore, artifact_id: str, keys: set[str]) -> None:
    try:
        blobs.delete_many(sorted(keys))  # none of them is in a row yet
    except OverspillError as exc:
        import logging

        logging.getLogger(__name__).warning(
            "artifact %s: unpublished blobs left to the reconciler: %s", artifact_id, exc
        )


class BlobStager:
    """A segment a blob: ``put`` whole, atomically."""

    def __init__(self, blobs: BlobStore, artifact_id: str) -> None:
        self._blobs = blobs
        self._id = artifact_id

    def stage(self, offset: int, data: memoryview) -> str:
        key = segment_key(self._id, offset, secrets.token_hex(4))
        self._blobs.put(key, data)
        return key

    def discard(self, staged: Sequence[StagedSegment]) -> None:
        _give_back(self._blobs, self._id, {seg.key for seg in staged})


class BlobPlacer:
    """Pieces written in place into a growing blob, kept open between pieces
    (only the producer's thread opens, writes and closes it)."""

    def __init__(self, blobs: AppendableBlobStore, artifact_id: str) -> None:
        self._blobs = blobs
        self._id = artifact_id
        self._open: tuple[str, Appender] | None = None
        self._back: bytearray | None = None  # read_back's buffer, made on first use

    def place(self, offset: int, data: memoryview, into: str | None) -> str:
        # The writer names the blob (``into``) for every piece until it starts a
        # new one (None).
        if into is None or self._open is None or self._open[0] != into:
            self.close()
            if into is None:
                key = segment_key(self._id, offset, secrets.token_hex(4))
                self._open = (key, self._blobs.open_appender(key, create=True))
            else:
                self._open = (into, self._blobs.open_appender(into, create=False))
        key, appender = self._open
        try:
            appender.write_at(offset - segment_key_base(key), data)
        except BaseException:
            # Closed now, so the space of what the writer discards is free at once
            # (an open file keeps its blocks). A blob this piece made is named in no
            # segment the writer knows: it is given back here, or a full disk stays
            # full until the reconciler comes.
            self.close()
            if into is None:
                _give_back(self._blobs, self._id, {key})
            raise
        return key

    def read_back(self, key: str, offset: int, size: int) -> Iterator[memoryview]:
        # Into one reused buffer: a fresh 1 MiB bytes per read cost an allocation
        # (and its page faults) per MiB captured.
        if self._back is None:
            self._back = bytearray(_READ_BACK)
        buf = memoryview(self._back)
        where = offset - segment_key_base(key)
        end = where + size
        while where < end:
            n = self._blobs.read_into(key, where, buf[: min(_READ_BACK, end - where)])
            if not n:
                raise StorageUnavailable(f"blob {key} is shorter than its placed bytes")
            yield buf[:n]
            where += n

    def discard(self, staged: Sequence[StagedSegment]) -> None:
        _give_back(self._blobs, self._id, {seg.key for seg in staged})

    def close(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None
