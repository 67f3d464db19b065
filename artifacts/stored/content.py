"""Reading an artifact's bytes: a stored prefix made of immutable segments.

A :class:`Content` is a snapshot of what was committed when it was taken (``size``).
Segments never change once published, so every read inside that size is stable
even while the writer keeps appending, and no read needs the whole artifact.

One module (about 510 lines) because a Content's segment lookups, its reads and
its line index share one cache of segments and decoded frames.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Iterator
from functools import partial
from itertools import chain
from typing import Any, NamedTuple, cast

from sqlalchemy import Row, Select, select
from sqlalchemy.orm import Session

from overspill.artifacts.blobs.base import BlobNotFound, BlobStore
from overspill.artifacts.blobs.keys import segment_key_base
from overspill.artifacts.db.models import Segment
from overspill.artifacts.db.unit import Database
from overspill.artifacts.errors import (
    DatabaseUnavailable,
    Gone,
    InvalidRange,
    NotFound,
    StorageUnavailable,
)
from overspill.artifacts.stored.decode_ahead import MIN_FRAMES, SLOW, Ahead, packed
from overspill.artifacts.stored.frame_cache import FRAMES, ROWS
from overspill.artifacts.stored.frames import FRAME_BYTES, decode

LONG_READ_KEEPS = 4 * 1024 * 1024
"""Decoded bytes a long read (of ``decode_ahead.MIN_FRAMES`` frames or more: a
grep, a download) puts in the frame cache first; past them it drops what it
has read. A 32 MiB grep that kept every frame took 26.9 ms, one that kept none
13.2: each frame kept is fresh memory to decode into, and pushes out what the
short reads keep."""

END_KEEPS = 1024 * 1024
"""... and the frames of the output's last bytes, which a tail reads again."""

PLANNED = 4096
"""Segments a read fetches before its first byte (32 GiB at the default 8 MiB)."""
_BATCH = 256
_FEW = 64  # at most this many segments are read once and kept by a Content
# ... or this many where its frames can be that many (a 32 MiB output's 128 read once:
# tail 14.8 -> 4.0 ms); a larger one keeps _FEW (512 rows read to be dropped: +3 ms).
_FEW_FRAMES = 512


def _few(size: int) -> int:
    """How many segments of an artifact of ``size`` bytes a Content keeps."""
    return _FEW_FRAMES if size <= _FEW_FRAMES * FRAME_BYTES else _FEW


class SegmentRef(NamedTuple):
    """One segment row as a read uses it. A tuple, made straight from the row's
    columns (``_columns``, in this order): a compacted 32 MiB output has 128 of
    them, and as a frozen dataclass building them was most of a cold read."""

    seq: int
    key: str
    offset: int
    size: int
    line_offset: int
    newlines: int
    blob_offset: int  # where offset sits in the blob
    codec: str | None = None  # a frame's codec (artifacts/stored/frames.py)
    stored_size: int | None = None  # a frame's bytes in its blob; None: not a frame

    @property
    def end(self) -> int:
        return self.offset + self.size


class Content:
    def __init__(
        self,
        db: Database | None,
        blobs: BlobStore,
        artifact_id: str,
        size: int,
        line_count: int,
        on_missing: Callable[[], Exception],
        version: Hashable | None = None,
    ) -> None:
        self._db = db
        self._blobs = blobs
        self.artifact_id = artifact_id
        self.size = size
        self.line_count = line_count
        # Called when a segment vanished under us: the store re-checks the row and
        # returns the right error (usually Gone, because a delete raced this read).
        self._on_missing = on_missing
        # What the artifact's row said of its bytes when this read began (None: a
        # read that does not share rows with others, such as a compaction's own).
        self._version = version
        self._few: list[SegmentRef] | None = None
        self._looked = False
        # Where each of those starts, for bisecting (made once per list: a tail
        # looks a segment up ten times, and a scan of 128 rows each time was a
        # sixth of a compacted tail's first read).
        self._starts: tuple[list[SegmentRef], list[int]] | None = None
        # The last page of segment rows fetched (too many to keep them all): a
        # grep reads the line that spans two frames again, by offset, once per
        # frame, and each of those reads was a query (338 for 128 MiB).
        self._page: list[SegmentRef] = []

    @classmethod
    def detached(
        cls,
        blobs: BlobStore,
        artifact_id: str,
        size: int,
        line_count: int,
        segments: list[SegmentRef],
        on_missing: Callable[[], Exception],
    ) -> Content:
        """A content read without the database, from segments known already (a
        search's worker process): what would need a query (a segment moved under
        the read) answers ``on_missing`` instead."""
        content = cls(None, blobs, artifact_id, size, line_count, on_missing)
        content._few, content._looked = segments, True
        return content

    def _database(self) -> Database:
        if self._db is None:
            raise self._on_missing()
        return self._db

    def known_segments(self) -> list[SegmentRef] | None:
        """Every segment, when they are few and already fetched (no query)."""
        return self._few if self._looked else None

    def know_segments(self, segments: list[SegmentRef]) -> None:
        """Segments fetched for many artifacts in one query (a search across
        outputs): when they are few, no query of its own is needed."""
        if len(segments) <= _few(self.size):
            self._few, self._looked = segments, True

    def _all_if_few(self) -> list[SegmentRef] | None:
        """Every segment, when there are few (read once): a tail or a line window
        of a small artifact asks for its segments four or five times, and each
        query costs more than the bytes it finds."""
        if not self._looked:
            self._looked = True
            if self._version is not None:
                kept = ROWS.get(self.artifact_id, (self.size, self._version))
                if kept is not None:
                    self._few = cast(list[SegmentRef], kept)
                    return self._few
            with self._database().read() as s:
                # Through the connection: plain rows, not the ORM's loading of
                # columns (a compacted 32 MiB output's 128 rows: 0.3 ms of a tail).
                rows = (
                    s.connection()
                    .execute(
                        _columns()
                        .where(Segment.artifact_id == self.artifact_id, Segment.offset < self.size)
                        .order_by(Segment.offset)
                        .limit(_few(self.size) + 1)
                    )
                    .all()
                )
            if len(rows) <= _few(self.size):
                self._few = [_ref(r) for r in rows]
                if self._version is not None:
                    ROWS.put(self.artifact_id, (self.size, self._version), self._few)
        return self._few

    def _at(self, few: list[SegmentRef], offset: int) -> int:
        """The index in ``few`` of the last segment that starts at or before
        ``offset`` (-1: none)."""
        if self._starts is None or self._starts[0] is not few:
            self._starts = (few, [seg.offset for seg in few])
        return bisect.bisect_right(self._starts[1], offset) - 1

    def _segment_at(self, offset: int) -> SegmentRef | None:
        """The last segment that starts at or before ``offset``."""
        few = self._all_if_few()
        if few is not None:
            i = self._at(few, offset)
            return few[i] if i >= 0 else None
        return self._stored_at(offset)

    def _stored_at(self, offset: int) -> SegmentRef | None:
        """The last segment that starts at or before ``offset``, from the database."""
        with self._database().read() as s:
            row = s.execute(
                _columns()
                .where(Segment.artifact_id == self.artifact_id, Segment.offset <= offset)
                .order_by(Segment.offset.desc())
                .limit(1)
            ).one_or_none()
        return _ref(row) if row is not None else None

    def _page_after(self, cursor: int, s: Session) -> list[Row[Any]]:
        """The next batch of segment rows after the one at ``cursor``."""
        return list(
            s.execute(
                _columns()
                .where(
                    Segment.artifact_id == self.artifact_id,
                    Segment.offset > cursor,
                    Segment.offset < self.size,
                )
                .order_by(Segment.offset)
                .limit(_BATCH)
            ).all()
        )

    def _segments_from(self, start: int) -> Iterator[SegmentRef]:
        """Segments overlapping [start, size), in order, fetched in small batches."""
        few = self._all_if_few()
        if few is not None:
            at = max(self._at(few, start), 0)
            if at < len(few) and few[at].end <= start:  # ends before start: the next one
                at += 1
            yield from few[at:]
            return
        page = self._page
        if page and page[0].offset <= start < page[-1].end:
            at = bisect.bisect_right([seg.offset for seg in page], start) - 1
            yield from page[at:]
            cursor = page[-1].offset
        else:
            first = self._stored_at(start)
            cursor = first.offset if first is not None else start
            if first is not None and first.end > start:
                yield first
        while True:
            # Mid-stream (the response has started): one more try on a dead connection.
            rows = self._database().query(partial(self._page_after, cursor))
            if not rows:
                return
            self._page = [_ref(row) for row in rows]
            yield from self._page
            cursor = self._page[-1].offset

    def plan(self, start: int, end: int) -> list[SegmentRef]:
        """The segments of [start, end), at most PLANNED of them, fetched now: a
        response that asks for them before its first byte needs the database no
        more while it streams (a restart mid-download cut bodies short), and a
        database that is down fails it before anything is sent."""
        planned: list[SegmentRef] = []
        for seg in self._segments_from(start):
            if seg.offset >= min(end, self.size) or len(planned) >= PLANNED:
                break
            planned.append(seg)
        return planned

    def iter_range(
        self, start: int, end: int, planned: list[SegmentRef] | None = None
    ) -> Iterator[bytes]:
        """Yield bytes [start, end) clipped to the snapshot size, in bounded chunks
        (from ``planned``, this range's ``plan``, when given)."""
        for chunk, _ in self.iter_counted(start, end, planned):
            yield chunk

    def iter_counted(
        self, start: int, end: int, planned: list[SegmentRef] | None = None
    ) -> Iterator[tuple[bytes, int | None]]:
        """``iter_range``'s chunks, each with its newlines when its segment's row
        says (a chunk that is a whole segment or frame), else None: a scan that
        numbers lines need not count what no match is in (a third of a
        no-match grep's time)."""
        if start < 0:
            raise InvalidRange(f"byte offsets are non-negative, got {start}")
        end = min(end, self.size)
        if start >= end:
            return
        pos = start
        segments: Iterator[SegmentRef] = iter(self.plan(start, end) if planned is None else planned)
        if planned is None or len(planned) >= PLANNED:  # past the plan, page on
            planned = list(segments)
            after = planned[-1].end if planned else start
            segments = chain(planned, self._segments_from(after) if len(planned) >= PLANNED else ())
        replanned = False
        while True:
            try:
                for chunk, newlines in self._read(segments, pos, end):
                    pos += len(chunk)
                    yield chunk, newlines
                return
            except BlobNotFound:
                # A compaction (or scrub) replaced the rows under this read: the
                # logical bytes are the same, so the read goes on from the new
                # rows -- once; a blob missing again means the artifact is gone.
                if replanned:
                    raise self._on_missing() from None
                replanned = True
                ROWS.drop(self.artifact_id)
                self._few, self._looked, self._page = None, False, []
                segments = self._segments_from(pos)
            except StorageUnavailable as exc:
                # A backend may say "deleted under you" otherwise than by a missing
                # blob (moto: a ValueError mid-GET). The row decides: an artifact
                # deleted or expired meanwhile is Gone, else the storage error stands.
                if isinstance(exc, DatabaseUnavailable):
                    raise
                why = self._on_missing()
                if isinstance(why, Gone | NotFound):
                    raise why from None
                raise

    def _read(
        self, segments: Iterator[SegmentRef], pos: int, end: int
    ) -> Iterator[tuple[bytes, int | None]]:
        """Bytes [pos, end) from ``segments`` (with newlines, see ``iter_counted``):
        a plain segment by a ranged read, a run of adjacent frames of one blob by
        one ranged read (one GET on S3)."""
        kept = 0  # bytes of decoded frames this read put in the frame cache
        long = end - pos >= MIN_FRAMES * FRAME_BYTES
        for run in _runs(segments, end):
            first, last = run[0], run[-1]
            if first.offset > pos:  # a hole: segments were purged mid-read
                raise self._on_missing()
            if last.stored_size is None:  # stored as it is
                shift = first.offset - first.blob_offset  # artifact offset -> blob offset
                whole = pos == first.offset and end >= first.end
                for chunk in self._blobs.read(first.key, pos - shift, min(end, first.end) - shift):
                    pos += len(chunk)
                    yield chunk, first.newlines if whole and len(chunk) == first.size else None
                continue
            stored, base = b"", -1
            ahead: Ahead | None = None
            try:
                for i, seg in enumerate(run):
                    if seg.offset > pos:
                        raise self._on_missing()
                    upto = min(end, seg.end) - seg.offset  # the frame's bytes this read needs
                    where = (seg.key, seg.blob_offset)
                    # Decoded by an earlier read, or by this one: a tail or a line
                    # lookup reaches the same frame several times.
                    frame = FRAMES.get(where) or b""
                    if len(frame) < upto:
                        if base < 0:  # the rest of the run, in one ranged read
                            base = seg.blob_offset
                            stored = b"".join(
                                self._blobs.read(seg.key, base, last.blob_offset + last.stored_size)
                            )
                            ahead = _ahead(run, stored, base, i + 1, end)
                        taken = ahead.take(i) if ahead is not None else None
                        frame = taken or decode(
                            seg.codec, packed(seg, stored, base), seg.size, upto
                        )
                        if not long or kept < LONG_READ_KEEPS or seg.end > self.size - END_KEEPS:
                            FRAMES.put(where, frame)  # whole, or the start a window needed
                            kept += len(frame)
                    whole = pos == seg.offset and upto == seg.size
                    piece = frame[pos - seg.offset : upto]
                    pos += len(piece)
                    yield piece, seg.newlines if whole else None
            finally:
                if ahead is not None:
                    ahead.close()
        if pos < end:
            raise self._on_missing()

    def read(self, start: int, end: int) -> bytes:
        """Bytes [start, end) as one value; callers keep ``end - start`` small."""
        return b"".join(self.iter_range(start, end))

    def line_start(self, number: int) -> int | None:
        """Byte offset where 1-based line ``number`` starts, or None past the end.

        Uses the per-segment newline index, so it reads at most one segment.
        """
        if number < 1:
            raise InvalidRange(f"line numbers start at 1, got {number}")
        if number == 1:
            return 0 if self.size > 0 else None
        want = number - 1  # newlines that precede the line
        few = self._all_if_few()
        if few is not None:
            found = next((seg for seg in few if seg.line_offset + seg.newlines >= want), None)
        else:
            with self._database().read() as s:
                row = s.execute(
                    _columns()
                    .where(
                        Segment.artifact_id == self.artifact_id,
                        Segment.line_offset + Segment.newlines >= want,
                        Segment.offset < self.size,
                    )
                    .order_by(Segment.offset)
                    .limit(1)
                ).one_or_none()
            found = _ref(row) if row is not None else None
        if found is None:
            return None
        ref = found
        need = want - ref.line_offset
        pos = ref.offset
        for chunk in self.iter_range(ref.offset, min(ref.end, self.size)):
            idx = -1
            while need:
                idx = chunk.find(b"\n", idx + 1)
                if idx < 0:
                    break
                need -= 1
            if need == 0:
                start = pos + idx + 1
                return start if start < self.size else None
            pos += len(chunk)
        return None

    def line_number_at(self, offset: int) -> int:
        """1-based number of the line that contains byte ``offset``.

        The segment's row knows how many newlines precede it and how many it
        holds, so the count is made from whichever end of the segment is nearer:
        a tail, near the end of its segment, reads only the bytes it shows."""
        if offset <= 0:
            return 1
        seg = self._segment_at(offset)
        if seg is None:
            return 1
        seg_end = seg.offset + seg.size
        if offset - seg.offset > seg_end - offset and seg_end <= self.size:
            after = sum(chunk.count(b"\n") for chunk in self.iter_range(offset, seg_end))
            return seg.line_offset + seg.newlines - after + 1
        count = seg.line_offset
        for chunk in self.iter_range(seg.offset, min(offset, self.size)):
            count += chunk.count(b"\n")
        return count + 1


_RUN_BYTES = 4 * 1024 * 1024
"""Adjacent frames read in one request, up to this many stored bytes."""


def _ahead(run: list[SegmentRef], stored: bytes, base: int, first: int, end: int) -> Ahead | None:
    """Decoding ahead for the frames from ``first`` on that this read needs whole,
    when there are enough of them (``decode_ahead.MIN_FRAMES``)."""
    last = first
    while last < len(run) and run[last].end <= end:
        last += 1
    slow = sum(1 for seg in run[first:last] if seg.codec in SLOW)
    return Ahead(run, stored, base, first, last) if slow >= MIN_FRAMES else None


def _runs(segments: Iterator[SegmentRef], end: int) -> Iterator[list[SegmentRef]]:
    """The segments before ``end`` in read order: a plain segment alone, frames in
    runs that sit back to back in one blob (at most _RUN_BYTES stored)."""
    run: list[SegmentRef] = []
    stored = 0
    for seg in segments:
        if seg.offset >= end:
            break
        joins = (
            run
            and seg.stored_size is not None
            and seg.key == run[-1].key
            and seg.offset == run[-1].end
            and seg.blob_offset == run[-1].blob_offset + (run[-1].stored_size or 0)
            and stored + seg.stored_size <= _RUN_BYTES
        )
        if run and not joins:
            yield run
            run, stored = [], 0
        if seg.stored_size is None:
            yield [seg]
            continue
        run.append(seg)
        stored += seg.stored_size
    if run:
        yield run


def _columns(*extra: Any) -> Select[Any]:
    """The segment columns a read uses, as plain rows: building ORM objects for
    them cost more than the bytes of a small window (32 frames of 8 MiB)."""
    return select(
        Segment.seq,
        Segment.blob_key,
        Segment.offset,
        Segment.size,
        Segment.line_offset,
        Segment.newlines,
        Segment.blob_offset,
        Segment.codec,
        Segment.stored_size,
        *extra,
    )


def _ref(row: Any) -> SegmentRef:
    """A row of ``_columns`` (the same order as SegmentRef's fields)."""
    if row[6] is None:  # a row from before blob_offset: the key says where the blob starts
        return SegmentRef._make((*row[:6], row[2] - segment_key_base(row[1]), *row[7:9]))
    return SegmentRef._make(row[:9])


def segments_of(db: Database, artifacts: dict[str, int]) -> dict[str, list[SegmentRef]]:
    """Every segment of each artifact (id -> stored size), in one query, for
    those that have few; an artifact with many is left out (it reads its own)."""
    if not artifacts:
        return {}
    found: dict[str, list[SegmentRef]] = {}
    with db.read() as s:
        rows = s.execute(
            _columns(Segment.artifact_id)
            .where(Segment.artifact_id.in_(list(artifacts)))
            .order_by(Segment.artifact_id, Segment.offset)
        )
        for row in rows:
            if row.offset < artifacts[row.artifact_id]:
                found.setdefault(row.artifact_id, []).append(_ref(row))
    return {k: v for k, v in found.items() if len(v) <= _few(artifacts[k])}
