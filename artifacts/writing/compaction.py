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

The hot tier: an artifact is compacted only once cold -- ``hot_s`` (15 minutes
by default) after its last write, with no read in that time (``read_backs``,
the context ledger) -- so the reads an agent makes right after a command (the
tail, a grep, a window) run on raw segments at file speed. Why 15 minutes: the
harness sessions here read an output back within seconds of its making, inside
the same turn, and a person looks at it within minutes; what it costs is the
raw bytes of the last 15 minutes' outputs (one 1 MiB log every 10 s: ~75 MiB
more than their frames), given back as they cool. ``OVERSPILL_HOT_S=0``
compacts as soon as an output ends.

A scrub (``redact --scrub``) is the same rewrite with the redactor in the
stream and no frame shared with what was stored, so that no blob that held a
secret stays named; ``rehome`` rewrites the others that named those blobs.
About 470 lines because the three are one rewrite (read, frame, pack, swap)
with three policies, and the swap's locking is easiest to check in one place.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, select
from sqlalchemy.orm import Session

from overspill.artifacts.blobs.keys import segment_key
from overspill.artifacts.catalog import audit
from overspill.artifacts.catalog.usage import bump_usage, charged
from overspill.artifacts.context import Part, StoreContext
from overspill.artifacts.db.models import Artifact, ReadBack, Segment
from overspill.artifacts.errors import OverspillError, StorageUnavailable
from overspill.artifacts.newlines import count_newlines
from overspill.artifacts.records import GONE_STATES
from overspill.artifacts.stored.blob_refs import lock_origins, named
from overspill.artifacts.stored.content import Content
from overspill.artifacts.stored.frame_cache import clear_read_caches
from overspill.artifacts.stored.frames import FRAME_BYTES, encode

Transform = Callable[[Iterator[bytes]], Iterator[bytes]]
"""A rewrite of a stream that keeps every length (a scrub's redactor)."""

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
        """Ended artifacts not compacted yet and cold (``hot_s`` without a write
        or a read), oldest end first."""
        with self._read() as s:
            found = list(
                s.execute(
                    select(Artifact.id)
                    .where(
                        Artifact.stored_bytes.is_(None),
                        Artifact.state.not_in([*GONE_STATES, "writing"]),
                        *self._cold(),
                    )
                    .order_by(Artifact.completed_at, Artifact.id)
                    .limit(limit + len(self._unreadable))
                ).scalars()
            )
        return [i for i in found if i not in self._unreadable][:limit]

    def _cold(self) -> list[Any]:
        """The hot tier's conditions: ended and unread for ``hot_s``."""
        hot = self.settings.hot_s
        if hot <= 0:
            return []
        since = self.clock.now() - timedelta(seconds=hot)
        recent = select(ReadBack.artifact_id).where(
            ReadBack.artifact_id == Artifact.id, ReadBack.last_at > since
        )
        return [Artifact.updated_at <= since, ~recent.exists()]

    def is_hot(self, artifact_id: str) -> bool:
        """Ended or not, written or read within ``hot_s`` (or gone: False)."""
        if self.settings.hot_s <= 0:
            return False
        with self._read() as s:
            row = s.execute(
                select(and_(*self._cold())).where(
                    Artifact.id == artifact_id, Artifact.state.not_in(GONE_STATES)
                )
            ).first()
        return row is not None and not row[0]

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
        return self._rewrite(artifact_id, report or CompactionReport(), None) is not None

    def scrub(
        self, artifact_id: str, transform: Transform, audit_details: dict[str, Any], actor: str
    ) -> list[str] | None:
        """Rewrite an ended artifact's bytes through ``transform`` (which keeps
        every length: the redactor masks a secret at its own length), compacted or
        not, into frames of its own: no frame is shared with what was stored, so
        no blob that held the old bytes is named by it. Recorded in the audit log.
        Returns the old blobs another artifact still names (their holders must be
        rewritten too before those bytes are gone), or None if it changed meanwhile.
        The process's decoded frames are dropped: none of the old bytes stays in
        memory for a read that can no longer name them."""
        try:
            return self._rewrite(
                artifact_id, CompactionReport(), transform, scrub=(actor, audit_details)
            )
        finally:
            clear_read_caches()

    def rehome(self, artifact_id: str) -> list[str] | None:
        """Rewrite an artifact's frames into blobs of its own (same bytes): done to
        the others that named a scrubbed artifact's old blobs, so those can go."""
        return self._rewrite(
            artifact_id, CompactionReport(), lambda chunks: chunks, scrub=("system:scrub", None)
        )

    def holders(self, keys: list[str]) -> list[str]:
        """The artifacts whose rows name any of these blobs."""
        with self._read() as s:
            return sorted(
                set(
                    s.execute(
                        select(Segment.artifact_id).where(Segment.blob_key.in_(keys))
                    ).scalars()
                )
            )

    def _rewrite(
        self,
        artifact_id: str,
        report: CompactionReport,
        transform: Transform | None,
        scrub: tuple[str, dict[str, Any] | None] | None = None,
    ) -> list[str] | None:
        with self._read() as s:
            row = s.get(Artifact, artifact_id)
            if not _compactable(row, again=scrub is not None):
                return None
            assert row is not None
            owner, size, lines = row.owner, row.size_bytes, row.line_count

        def vanished() -> Exception:
            return _Vanished()

        content = Content(self._ctx.db, self.blobs, artifact_id, size, lines, vanished)
        chunks = content.iter_range(0, size)
        hasher = hashlib.sha256()
        frames: list[_Frame] = []
        packs: list[str] = []
        try:
            source = transform(chunks) if transform is not None else chunks
            self._write_frames(
                artifact_id, owner, _hashed(source, hasher), frames, packs, share=scrub is None
            )
            after = None if scrub is None else _scrubbed(scrub, hasher)
            done = self._swap(
                artifact_id, owner, size, frames, again=scrub is not None, after=after
            )
        except _Vanished:
            self._unreadable.add(artifact_id)
            done = None
        except OverspillError:  # storage trouble: a later pass tries again
            done = None
        if done is None:
            report.skipped += 1
            self._forget(packs)
            return None
        unnamed, still, stored = done
        self._forget(unnamed)
        report.compacted += 1
        report.logical_bytes += size
        report.stored_bytes += stored
        report.shared_frames += sum(f.shared for f in frames)
        report.ids.append(artifact_id)
        return still

    # -- writing the frames --------------------------------------------------------------

    def _write_frames(
        self,
        artifact_id: str,
        owner: str,
        chunks: Iterator[bytes],
        frames: list[_Frame],
        packs: list[str],
        *,
        share: bool,
    ) -> None:
        """Frames of ``chunks`` into ``frames``; the packs written into ``packs``
        (so a failure can give them back). Memory: one pack's frames. ``share``:
        a frame the owner already stores elsewhere is named, not written."""
        mine: dict[str, _Frame] = {}  # this artifact's frames by digest
        batch: list[tuple[_Frame, bytes]] = []
        line_offset = 0
        for offset, data in _frames_of(chunks):
            n = count_newlines(data)
            frame = _Frame(offset, len(data), hashlib.sha256(data).hexdigest(), line_offset, n)
            line_offset += n
            batch.append((frame, data))
            if len(batch) == FRAMES_PER_PACK:
                self._store_batch(artifact_id, owner, batch, mine, packs, share)
                frames.extend(f for f, _ in batch)
                batch = []
        if batch:
            self._store_batch(artifact_id, owner, batch, mine, packs, share)
            frames.extend(f for f, _ in batch)

    def _store_batch(
        self,
        artifact_id: str,
        owner: str,
        batch: list[tuple[_Frame, bytes]],
        mine: dict[str, _Frame],
        packs: list[str],
        share: bool,
    ) -> None:
        wanted = {f.digest for f, _ in batch} - mine.keys()
        known = self._owned_frames(owner, wanted) if share else {}
        pack = bytearray()
        key = segment_key(artifact_id, batch[0][0].offset, secrets.token_hex(4))
        for frame, data in batch:
            same = mine.get(frame.digest) or known.get((frame.digest, frame.size))
            if same is not None:
                frame.key, frame.blob_offset = same.key, same.blob_offset
                frame.codec, frame.stored_size = same.codec, same.stored_size
                frame.repeat, frame.shared = same.digest in mine, same.digest not in mine
                continue
            frame.codec, stored = encode(
                data, self.settings.compression, self.settings.compression_level
            )
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
        self,
        artifact_id: str,
        owner: str,
        size: int,
        frames: list[_Frame],
        *,
        again: bool,
        after: Callable[[Session, Artifact, datetime], None] | None,
    ) -> tuple[list[str], list[str], int] | None:
        """Replace the artifact's rows with ``frames`` if it is still as it was read.
        Returns the old blobs no row names now (to delete), those another artifact
        still names, and the bytes its own new blobs hold."""
        now = self.clock.now()
        shared = {f.key for f in frames if f.shared}
        old_keys = self._keys_of(artifact_id)
        with self._write() as s:
            lock_origins(s, {artifact_id, *shared, *old_keys})
            row = s.get(Artifact, artifact_id)
            if not _compactable(row, again=again) or row is None or row.size_bytes != size:
                return None
            if self._keys_of(artifact_id, s) != old_keys:
                return None  # rewritten meanwhile
            # Each shared pack must still be named by a row: under its origin's
            # lock, no purge can be deleting it now.
            if shared and named(s, sorted(shared)) != shared:
                return None
            s.execute(delete(Segment).where(Segment.artifact_id == artifact_id))
            s.add_all(_rows(artifact_id, frames, now))
            stored = sum(f.stored_size for f in frames if not (f.shared or f.repeat))
            bump_usage(s, owner, stored - charged(row.stored_bytes, row.size_bytes), 0)
            row.stored_bytes = stored
            row.segment_count = len(frames)
            if after is not None:
                after(s, row, now)
            s.flush()
            still = named(s, old_keys)
        unnamed = [k for k in old_keys if k not in still]
        return unnamed, sorted(still), stored

    def _keys_of(self, artifact_id: str, s: Session | None = None) -> list[str]:
        """The blobs an artifact's rows name, in order."""
        query = select(Segment.blob_key).where(Segment.artifact_id == artifact_id)
        if s is not None:
            return sorted(set(s.execute(query).scalars()))
        with self._read() as own:
            return sorted(set(own.execute(query).scalars()))

    def _forget(self, keys: list[str]) -> None:
        """Delete blobs no row names (a failure leaves them to the orphan pass)."""
        if keys:
            try:
                self.blobs.delete_many(keys)
            except StorageUnavailable:
                pass


def _compactable(row: Artifact | None, *, again: bool = False) -> bool:
    """Ended, not gone, and not compacted yet (``again``: compacted or not)."""
    return (
        row is not None
        and (again or row.stored_bytes is None)
        and row.state not in GONE_STATES
        and row.state != "writing"
    )


def _hashed(chunks: Iterable[bytes], hasher: Any) -> Iterator[bytes]:
    for chunk in chunks:
        hasher.update(chunk)
        yield chunk


def _scrubbed(
    scrub: tuple[str, dict[str, Any] | None], hasher: Any
) -> Callable[[Session, Artifact, datetime], None]:
    """What a scrub records with its swap: the new bytes' sha256 (where the
    artifact had one) and, when something was masked, an audit entry."""
    actor, details = scrub

    def after(s: Session, row: Artifact, now: datetime) -> None:
        if row.sha256 is not None:
            row.sha256 = hasher.hexdigest()
        if details is not None:
            row.updated_at = now
            audit.record(s, now, actor, "scrub", of=row, **details)

    return after


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


def _frames_of(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) of each FRAME_BYTES piece of the stream, in order."""
    buf = bytearray()
    at = 0
    for chunk in chunks:
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
