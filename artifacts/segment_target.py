"""The in-process writer's segment target: where an ArtifactWriter's segments go
when the store is in this process. It owns the batch file a publish batch's
segments share (on a backend that can append), and gives back every unpublished
blob the moment storing fails, so a full disk recovers at once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from overspill.artifacts.blobs.base import Appender
from overspill.artifacts.content import segment_key_base
from overspill.artifacts.errors import OverspillError, StorageUnavailable
from overspill.artifacts.writer import StagedSegment

if TYPE_CHECKING:
    from overspill.artifacts.ingest import Ingest

log = logging.getLogger(__name__)
_READ_BACK = 1024 * 1024


class StoreTarget:
    """An in-process writer's segments: blobs through the store's backend, rows in
    its database, under the writer's lease (``token``; None for HTTP appends)."""

    def __init__(self, store: Ingest, artifact_id: str, token: str | None, start: int):
        self._store = store
        self._id = artifact_id
        self._token = token
        self._start = start
        self._batch_blob: str | None = None  # the blob this publish batch appends to
        self._back: bytearray | None = None  # read_back's buffer, made on first use
        # The blob the producer is placing into, open (only the producer's thread
        # opens, writes and closes it).
        self._placing: tuple[str, Appender] | None = None

    def stage(self, offset: int, data: memoryview) -> str | None:
        self._batch_blob = self._store.stage_segment(
            self._id, self._start + offset, data, self._batch_blob
        )
        return self._batch_blob

    def place(self, offset: int, data: memoryview, into: str | None) -> str:
        # Only when the backend can append (the writer is built placing then).
        # The blob being placed into stays open: the writer names it (``into``)
        # for every piece until it starts a new one (None).
        where = self._start + offset
        if into is None or self._placing is None or self._placing[0] != into:
            self._close_placing()
            if into is None:
                self._placing = self._store.start_blob(self._id, where)
            else:
                assert self._store.appender is not None
                self._placing = (into, self._store.appender.open_appender(into, create=False))
        key, appender = self._placing
        appender.write_at(where - segment_key_base(key), data)
        return key

    def _close_placing(self) -> None:
        if self._placing is not None:
            self._placing[1].close()
            self._placing = None

    def read_back(self, key: str, offset: int, size: int) -> Iterator[memoryview]:
        # Into one reused buffer: a fresh 1 MiB bytes per read cost an allocation
        # (and its page faults) per MiB captured.
        appender = self._store.appender
        assert appender is not None
        if self._back is None:
            self._back = bytearray(_READ_BACK)
        buf = memoryview(self._back)
        where = self._start + offset - segment_key_base(key)
        end = where + size
        while where < end:
            n = appender.read_into(key, where, buf[: min(_READ_BACK, end - where)])
            if not n:
                raise StorageUnavailable(f"blob {key} is shorter than its placed bytes")
            yield buf[:n]
            where += n

    def publish(self, staged: Sequence[StagedSegment]) -> tuple[int, str | None]:
        # The writer publishes all it staged, so the next segment starts a new blob.
        self._batch_blob = None
        if self._start:  # the writer counts from where it started; rows from byte 0
            staged = [replace(seg, offset=self._start + seg.offset) for seg in staged]
        return self._store.publish_segments(self._id, self._token, staged)

    def renew(self) -> None:
        self._store.renew_lease(self._id, self._token)

    def discard(self, staged: Sequence[StagedSegment]) -> None:
        keys = {seg.key for seg in staged} | ({self._batch_blob} if self._batch_blob else set())
        self._batch_blob = None
        try:
            self._store.blobs.delete_many(sorted(keys))  # none of them is in a row yet
        except OverspillError as exc:
            log.warning("artifact %s: unpublished blobs left to the reconciler: %s", self._id, exc)

    def finish(
        self,
        state: str,
        size: int,
        total: int,
        sha256: str | None,
        error: str | None,
        source_update: dict[str, Any] | None,
    ) -> None:
        self._close_placing()  # close() calls this on the producer's thread
        self._store.finish_artifact(
            self._id, self._token, state, self._start + total, sha256, error, source_update
        )
