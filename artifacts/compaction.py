"""Compaction: a finished artifact's bytes rewritten as compressed frames, with
frames its owner already stores shared instead of written again.

Capture stays the raw path (as fast as ``cmd | cat > f``, and a crash loses what
it lost before); a server compacts each artifact once it has ended, on a thread
of its own, and a sweep picks up what no server saw end. A compaction writes
its frames into new blobs ("packs", one per FRAMES_PER_PACK frames), then swaps
the artifact's segment rows for the frame rows in one transaction, then deletes
the raw blobs. Until the swap nothing a reader uses has changed; a crash before
it leaves packs no row names (the orphan pass takes them back), after it raw
blobs no row names (the same). A read in flight across the swap goes on from
the new rows (``Content`` re-plans once on a missing blob: the bytes are equal).

One copy: a frame whose sha256 another artifact *of the same owner* already
stores is not written again; its row names that blob. Never across owners (a
shared frame would tell one owner what another stored). A pack is deleted when
the last row naming it goes: every transaction that adds or drops a reference
to a pack first locks the row of the artifact whose id starts the pack's key (its
origin), so "is anyone still using it?" has one answer at a time, on PostgreSQL
as on SQLite.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import delete, select

from .blob_refs import lock_origins, named
from .blobs.keys import segment_key
from .content import Content
from .context import Part, StoreContext
from .db.models import Artifact, Segment
from .errors import OverspillError, StorageUnavailable
from .frames import FRAME_BYTES, encode
from .newlines import count_newlines
from .records import GONE_STATES
from .usage import bump_usage, charged

FRAMES_PER_PACK = 32
"""A pack holds up to 8 MiB of logical bytes: a bounded buffer, one PUT on S3."""


class _Vanished(Exception):
    """The artifact's bytes went while it was being read (deleted meanwhile)."""


@dataclass
class _Frame:
    offset: int
    size: int
    digest: str
    line_offset: int
    newlines: int
    key: str = ""
    blob_offset: int = 0
    codec: str | None = None
    stored_size: int = 0
    shared: bool = False  # names a blob that another artifact wrote
    repeat: bool = False  # the same bytes as an earlier frame of this artifact


@dataclass
class CompactionReport:
    """What one pass did (``overspill cleanup`` prints it)."""

    compacted: int = 0
    logical_bytes: int = 0
    stored_bytes: int = 0  # written by these artifacts (shared frames excluded)
    shared_frames: int = 0
    skipped: int = 0  # changed or deleted meanwhile: the next pass tries again
    ids: list[str] = field(default_factory=list)


class Compactor(Part):
    def __init__(self, ctx: StoreContext) -> None:
        super().__init__(ctx)
        # Ids that could not be read here (a blob gone under a live row): not
        # retried by this process's passes, so they never crowd out the rest.
        self._unreadable: set[str] = set()

    @property
    def enabled(self) -> bool:
        return self.settings.compression_level > 0

    def pending(self, limit: int) -> list[str]:
        """Ended artifacts not compacted yet, oldest end first."""
        with self._read() as s:
            found = list(
                s.execute(
                    select(Artifact.id)
                    .where(
                        Artifact.stored_bytes.is_(None),
                        Artifact.state.not_in([*GONE_STATES, "writing"]),
                    )
                    .order_by(Artifact.completed_at, Artifact.id)
                    .limit(limit + len(self._unreadable))
                ).scalars()
            )
        return [i for i in found if i not in self._unreadable][:limit]

    def run(self, limit: int = 100) -> CompactionReport:
        report = CompactionReport()
        if not self.enabled:
            return report
        for artifact_id in self.pending(limit):
            self.compact(artifact_id, report)
        return report

    def compact(self, artifact_id: str, report: CompactionReport | None = None) -> bool:
        """Rewrite one ended artifact as frames; False when there was nothing to do
        or it changed meanwhile (then nothing it wrote is left behind)."""
        report = report if report is not None else CompactionReport()
        with self._read() as s:
            row = s.get(Artifact, artifact_id)
            if not _compactable(row):
                return False
            assert row is not None
            owner, size, lines = row.owner, row.size_bytes, row.line_count

        def vanished() -> Exception:
            return _Vanished()

        content = Content(self._ctx.db, self.blobs, artifact_id, size, lines, vanished)
        frames: list[_Frame] = []
        packs: list[str] = []
        try:
            self._write_frames(artifact_id, owner, content, frames, packs)
            done = self._swap(artifact_id, owner, size, frames)
        except _Vanished:
            self._unreadable.add(artifact_id)
            done = None
        except OverspillError:  # storage trouble: a later pass tries again
            done = None
        if done is None:
            report.skipped += 1
            self._forget(packs)
            return False
        old_keys, stored = done
        self._forget(old_keys)
        report.compacted += 1
        report.logical_bytes += size
        report.stored_bytes += stored
        report.shared_frames += sum(f.shared for f in frames)
        report.ids.append(artifact_id)
        return True

    # -- writing the frames --------------------------------------------------------------

    def _write_frames(
        self,
        artifact_id: str,
        owner: str,
        content: Content,
        frames: list[_Frame],
        packs: list[str],
    ) -> None:
        """Frames of ``content`` into ``frames``; the packs written into ``packs``
        (so a failure can give them back). Memory: one pack's frames."""
        mine: dict[str, _Frame] = {}  # this artifact's frames by digest
        batch: list[tuple[_Frame, bytes]] = []
        line_offset = 0
        for offset, data in _frames_of(content):
            n = count_newlines(data)
            frame = _Frame(offset, len(data), hashlib.sha256(data).hexdigest(), line_offset, n)
            line_offset += n
            batch.append((frame, data))
            if len(batch) == FRAMES_PER_PACK:
                self._store_batch(artifact_id, owner, batch, mine, packs)
                frames.extend(f for f, _ in batch)
                batch = []
        if batch:
            self._store_batch(artifact_id, owner, batch, mine, packs)
            frames.extend(f for f, _ in batch)

    def _store_batch(
        self,
        artifact_id: str,
        owner: str,
        batch: list[tuple[_Frame, bytes]],
        mine: dict[str, _Frame],
        packs: list[str],
    ) -> None:
        known = self._owned_frames(owner, {f.digest for f, _ in batch} - mine.keys())
        pack = bytearray()
        key = segment_key(artifact_id, batch[0][0].offset, secrets.token_hex(4))
        for frame, data in batch:
            same = mine.get(frame.digest) or known.get((frame.digest, frame.size))
            if same is not None:
                frame.key, frame.blob_offset = same.key, same.blob_offset
                frame.codec, frame.stored_size = same.codec, same.stored_size
                frame.repeat, frame.shared = same.digest in mine, same.digest not in mine
                continue
            frame.codec, stored = encode(data, self.settings.compression_level)
            frame.key, frame.blob_offset, frame.stored_size = key, len(pack), len(stored)
            pack += stored
            mine[frame.digest] = frame
        if pack:
            packs.append(key)
            self.blobs.put(key, pack)

    def _owned_frames(self, owner: str, digests: set[str]) -> dict[tuple[str, int], _Frame]:
        """Frames with these digests that the owner's compacted artifacts store."""
        if not digests:
            return {}
        with self._read() as s:
            rows = s.execute(
                select(
                    Segment.digest,
                    Segment.size,
                    Segment.blob_key,
                    Segment.blob_offset,
                    Segment.codec,
                    Segment.stored_size,
                )
                .join(Artifact, Artifact.id == Segment.artifact_id)
                .where(
                    Segment.digest.in_(sorted(digests)),
                    Artifact.owner == owner,
                    Artifact.state.not_in(GONE_STATES),
                    Artifact.stored_bytes.is_not(None),
                )
            ).all()
        found: dict[tuple[str, int], _Frame] = {}
        for digest, size, key, at, codec, stored in rows:
            frame = _Frame(0, size, str(digest), 0, 0, key, at or 0, codec, stored or 0)
            found.setdefault((frame.digest, size), frame)
        return found

    # -- the swap ------------------------------------------------------------------------

    def _swap(
        self, artifact_id: str, owner: str, size: int, frames: list[_Frame]
    ) -> tuple[list[str], int] | None:
        """Replace the artifact's rows with ``frames`` if it is still as it was read;
        returns the raw blobs to delete and the bytes its own packs hold."""
        now = self.clock.now()
        shared = {f.key for f in frames if f.shared}
        with self._write() as s:
            lock_origins(s, {artifact_id, *shared})
            row = s.get(Artifact, artifact_id)
            if not _compactable(row) or row is None or row.size_bytes != size:
                return None
            # Each shared pack must still be named by a row: under its origin's
            # lock, no purge can be deleting it now.
            if shared and named(s, sorted(shared)) != shared:
                return None
            old_keys = list(
                dict.fromkeys(
                    s.execute(
                        select(Segment.blob_key).where(Segment.artifact_id == artifact_id)
                    ).scalars()
                )
            )
            s.execute(delete(Segment).where(Segment.artifact_id == artifact_id))
            s.add_all(_rows(artifact_id, frames, now))
            stored = sum(f.stored_size for f in frames if not (f.shared or f.repeat))
            bump_usage(s, owner, stored - charged(row.stored_bytes, row.size_bytes), 0)
            row.stored_bytes = stored
            row.segment_count = len(frames)
        return old_keys, stored

    def _forget(self, keys: list[str]) -> None:
        """Delete blobs no row names (a failure leaves them to the orphan pass)."""
        if keys:
            try:
                self.blobs.delete_many(keys)
            except StorageUnavailable:
                pass


def _compactable(row: Artifact | None) -> bool:
    """Ended, not gone, not compacted yet."""
    return (
        row is not None
        and row.stored_bytes is None
        and row.state not in GONE_STATES
        and row.state != "writing"
    )


def _rows(artifact_id: str, frames: list[_Frame], now: datetime) -> Iterator[Segment]:
    for seq, f in enumerate(frames):
        yield Segment(
            artifact_id=artifact_id,
            seq=seq,
            offset=f.offset,
            size=f.size,
            blob_key=f.key,
            blob_offset=f.blob_offset,
            line_offset=f.line_offset,
            newlines=f.newlines,
            created_at=now,
            codec=f.codec,
            stored_size=f.stored_size,
            digest=f.digest,
        )


def _frames_of(content: Content) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) of each FRAME_BYTES piece of the content, in order."""
    buf = bytearray()
    at = 0
    for chunk in content.iter_range(0, content.size):
        view = memoryview(chunk)
        while view:
            take = view[: FRAME_BYTES - len(buf)]
            buf += take
            view = view[len(take) :]
            if len(buf) == FRAME_BYTES:
                yield at, bytes(buf)
                at += len(buf)
                buf.clear()
    if buf:
        yield at, bytes(buf)
