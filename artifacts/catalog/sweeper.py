"""Cleanup that really frees space, safely, while reads and writes go on.

- **Expire**: artifacts past ``expires_at`` (unpinned, not being written) become
  ``expired`` tombstones, then their bytes are deleted.
- **Purge**: tombstones whose bytes are still stored (a user delete whose blob
  delete failed, a quota eviction) get their bytes deleted; much later the
  tombstone row itself is removed.
- **Reconcile**: blobs no row refers to (older than a grace period), writers whose
  lease lapsed, and partial uploads left by crashed writers.

Rows are claimed before their bytes are touched: ``FOR UPDATE SKIP LOCKED`` on
PostgreSQL (SQLite serialises the claim transactions), plus a claim token with a
deadline on the row, so several sweepers (several API processes) never work on
the same artifact and never block each other; a sweeper that dies mid-way loses
its claim when the deadline passes. A reader racing a purge gets the bytes or a
410, never wrong bytes: segments are deleted only after the row is a tombstone.

About 550 lines because the passes (and the claim of a whole pass, ``run_if_due``)
share that claim discipline (claim, act,
release or lose the claim at its deadline), which is easiest to check in one place.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field
from sqlalchemy import ColumnElement, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from overspill.artifacts.blobs.base import AppendableBlobStore, BlobInfo
from overspill.artifacts.blobs.keys import is_segment_key
from overspill.artifacts.catalog import audit
from overspill.artifacts.catalog.usage import bump_usage, charged
from overspill.artifacts.db.models import Artifact, AuditEvent, Maintenance, Segment
from overspill.artifacts.errors import StorageUnavailable
from overspill.artifacts.records import GONE_STATES
from overspill.artifacts.stored.blob_refs import lock_origins, named
from overspill.artifacts.stored.spill_files import delete_spill_file

if TYPE_CHECKING:
    from overspill.artifacts.context import StoreContext

_EXPIRABLE = ("complete", "capped", "incomplete", "failed")
_MAX_LISTED = 100
log = logging.getLogger(__name__)


class SweepReport(BaseModel):
    dry_run: bool
    expired: int = 0
    expired_bytes: int = 0
    purged: int = 0
    bytes_freed: int = 0
    tombstones_removed: int = 0
    writers_finalised: int = 0
    orphan_blobs: int = 0
    orphan_bytes: int = 0
    foreign_skipped: int = 0  # blobs under the root that the store did not write
    partial_uploads: int = 0
    unpublished_bytes: int = 0  # a dead writer's batch data no segment names, taken back
    legacy_spill_files: int = 0
    # Compaction (artifacts/writing/compaction.py), run with the pass by ``overspill cleanup``
    compacted: int = 0
    compacted_bytes: int = 0  # logical bytes of the artifacts compacted
    compressed_bytes: int = 0  # what their new frames take
    shared_frames: int = 0  # frames another output of the owner already stored
    errors: list[str] = Field(default_factory=list)
    artifact_ids: list[str] = Field(default_factory=list, description="First affected ids")


class Sweeper:
    def __init__(
        self,
        store: StoreContext,
        *,
        batch: int = 500,
        claim_s: float = 300,
        orphan_grace_s: float = 3600,
    ) -> None:
        self._store = store
        self.batch = batch
        self.claim = timedelta(seconds=claim_s)
        self.orphan_grace = timedelta(seconds=orphan_grace_s)
        self._batches_left: int | None = None

    def run(
        self, *, dry_run: bool = False, reconcile: bool = True, max_batches: int | None = None
    ) -> SweepReport:
        """One pass of every step; ``max_batches`` bounds each step's loop (a
        bounded pass leaves the rest to the next one)."""
        report = SweepReport(dry_run=dry_run)
        self._batches_left = max_batches
        steps = [self._expire, self._purge_pending, self._remove_old_tombstones]
        if reconcile:
            steps += [self._finalise_writers, self._reclaim_orphans, self._partial_uploads]
        for step in steps:
            try:
                step(report)
            except StorageUnavailable as exc:
                report.errors.append(f"{step.__name__.strip('_')}: {exc.message}")
        return report

    def run_if_due(self, interval_s: float, **options: Any) -> SweepReport | None:
        """Run a pass if the last one (by any process) is older than ``interval_s``
        and no one is running one now; None if not due. The claim is a row with a
        deadline, as ``git gc --auto`` keeps a lock: processes that all open the
        store (the CLI with the local server off, API processes behind a load
        balancer) sweep one at a time, each interval once."""
        store = self._store
        now = store.clock.now()
        token = secrets.token_hex(8)
        try:
            with store.write() as s:
                row = s.get(Maintenance, "sweep", with_for_update=True)
                if row is None:
                    row = Maintenance(name="sweep")
                    s.add(row)
                elif (row.claimed_until is not None and row.claimed_until > now) or (
                    row.last_run_at is not None
                    and row.last_run_at > now - timedelta(seconds=interval_s)
                ):
                    return None
                row.claimed_until = now + self.claim
                row.claim_token = token
        except IntegrityError:
            return None  # another process made the row first: it sweeps
        try:
            return self.run(**options)
        finally:
            with store.write() as s:
                s.execute(
                    update(Maintenance)
                    .where(Maintenance.name == "sweep", Maintenance.claim_token == token)
                    .values(last_run_at=store.clock.now(), claimed_until=None, claim_token=None)
                )

    def _another_batch(self) -> bool:
        """Whether a step's loop may take one more batch in this pass."""
        if self._batches_left is None:
            return True
        self._batches_left -= 1
        return self._batches_left >= 0

    # -- expiry ----------------------------------------------------------------------

    def _expired_filter(self, now: datetime) -> list[ColumnElement[bool]]:
        return [
            Artifact.state.in_(_EXPIRABLE),
            Artifact.expires_at <= now,
            Artifact.pinned_at.is_(None),
            or_(Artifact.sweep_until.is_(None), Artifact.sweep_until < now),
        ]

    def _expire(self, report: SweepReport) -> None:
        store = self._store
        now = store.clock.now()
        if report.dry_run:
            with store.read() as s:
                count, size = s.execute(
                    select(func.count(), func.coalesce(func.sum(Artifact.size_bytes), 0)).where(
                        *self._expired_filter(now)
                    )
                ).one()
                ids = (
                    s.execute(
                        select(Artifact.id).where(*self._expired_filter(now)).limit(_MAX_LISTED)
                    )
                    .scalars()
                    .all()
                )
            report.expired, report.expired_bytes = int(count), int(size)
            report.artifact_ids.extend(ids)
            return
        while True:
            token = secrets.token_hex(8)
            with store.write() as s:
                rows = s.execute(
                    select(
                        Artifact.id,
                        Artifact.owner,
                        Artifact.size_bytes,
                        Artifact.stored_bytes,
                        Artifact.expires_at,
                    )
                    .where(*self._expired_filter(now))
                    .order_by(Artifact.expires_at)
                    .limit(self.batch)
                    .with_for_update(skip_locked=True)
                ).all()
                claimed = [(r.id, r.size_bytes) for r in rows]
                if claimed:
                    # Set-based: one UPDATE, one usage update per owner, one audit insert.
                    s.execute(
                        update(Artifact)
                        .where(Artifact.id.in_([i for i, _ in claimed]))
                        .values(
                            state="expired",
                            deleted_at=now,
                            deleted_by="system:retention",
                            delete_reason="expired",
                            updated_at=now,
                            sweep_token=token,
                            sweep_until=now + self.claim,
                        )
                        .execution_options(synchronize_session=False)
                    )
                    freed_by_owner: dict[str, list[int]] = {}
                    for r in rows:
                        acc = freed_by_owner.setdefault(r.owner, [0, 0])
                        acc[0] += charged(r.stored_bytes, r.size_bytes)
                        acc[1] += 1
                    for owner, (nbytes, count) in freed_by_owner.items():
                        bump_usage(s, owner, -nbytes, -count)
                    s.execute(
                        insert(AuditEvent),
                        [
                            {
                                "at": now,
                                "actor": "system:retention",
                                "action": "expire",
                                "artifact_id": r.id,
                                "owner": r.owner,
                                "details": {
                                    "bytes": r.size_bytes,
                                    "expired_at": r.expires_at.isoformat()
                                    if r.expires_at
                                    else None,
                                },
                            }
                            for r in rows
                        ],
                    )
            if not claimed:
                return
            report.expired += len(claimed)
            report.expired_bytes += sum(n for _, n in claimed)
            _note(report, [i for i, _ in claimed])
            freed = self._delete_bytes([i for i, _ in claimed], token)
            report.purged += len(claimed)
            report.bytes_freed += freed
            if len(claimed) < self.batch or not self._another_batch():
                return

    # -- purging tombstones ----------------------------------------------------------

    def purge(self, artifact_ids: Sequence[str]) -> int:
        """Claim the given tombstones and delete their bytes; returns bytes freed.
        Ids another sweeper is already purging are skipped."""
        store = self._store
        now = store.clock.now()
        token = secrets.token_hex(8)
        with store.write() as s:
            result = s.execute(
                update(Artifact)
                .where(
                    Artifact.id.in_(list(artifact_ids)),
                    Artifact.state.in_(GONE_STATES),
                    Artifact.purged_at.is_(None),
                    or_(Artifact.sweep_until.is_(None), Artifact.sweep_until < now),
                )
                .values(sweep_token=token, sweep_until=now + self.claim)
                .execution_options(synchronize_session=False)
            )
            claimed = int(getattr(result, "rowcount", 0) or 0)
        if not claimed:
            return 0
        return self._delete_bytes(list(artifact_ids), token)

    def _purge_pending(self, report: SweepReport) -> None:
        store = self._store
        now = store.clock.now()
        pending = [
            Artifact.state.in_(GONE_STATES),
            Artifact.purged_at.is_(None),
            or_(Artifact.sweep_until.is_(None), Artifact.sweep_until < now),
        ]
        if report.dry_run:
            with store.read() as s:
                count = s.execute(
                    select(func.count()).select_from(Artifact).where(*pending)
                ).scalar_one()
                size = s.execute(
                    select(
                        func.coalesce(func.sum(func.coalesce(Segment.stored_size, Segment.size)), 0)
                    )
                    .join(Artifact, Artifact.id == Segment.artifact_id)
                    .where(*pending)
                ).scalar_one()
            report.purged += int(count)
            report.bytes_freed += int(size)
            return
        while True:
            token = secrets.token_hex(8)
            with store.write() as s:
                ids = list(
                    s.execute(
                        select(Artifact.id)
                        .where(*pending)
                        .limit(self.batch)
                        .with_for_update(skip_locked=True)
                    ).scalars()
                )
                if ids:
                    s.execute(
                        update(Artifact)
                        .where(Artifact.id.in_(ids))
                        .values(sweep_token=token, sweep_until=now + self.claim)
                        .execution_options(synchronize_session=False)
                    )
            if not ids:
                return
            report.bytes_freed += self._delete_bytes(ids, token)
            report.purged += len(ids)
            _note(report, ids)
            if len(ids) < self.batch or not self._another_batch():
                return

    def _delete_bytes(self, ids: list[str], token: str) -> int:
        """Delete the segments of claimed tombstones: their rows and the mark
        "purged" in one transaction, then every blob no row names any more (in
        batches, one DeleteObjects per 1000 on S3); a legacy spill file recorded
        on the artifact goes with them. A pack another artifact of the owner still
        names stays (``artifacts/writing/compaction.py``: the origins' rows are locked, so
        the last one to let go of a pack is the one that sees it unnamed)."""
        store = self._store
        now = store.clock.now()
        with store.write() as s:
            segs = s.execute(
                select(Segment.blob_key, func.coalesce(Segment.stored_size, Segment.size)).where(
                    Segment.artifact_id.in_(ids)
                )
            ).all()
            keys = list(dict.fromkeys(k for k, _ in segs))
            lock_origins(s, set(keys) | set(ids))
            spills = (
                s.execute(
                    select(Artifact.spill_path).where(
                        Artifact.id.in_(ids), Artifact.spill_path.is_not(None)
                    )
                )
                .scalars()
                .all()
            )
            s.execute(delete(Segment).where(Segment.artifact_id.in_(ids)))
            still = named(s, keys)
            s.execute(
                update(Artifact)
                .where(Artifact.id.in_(ids), Artifact.sweep_token == token)
                .values(
                    purged_at=now,
                    sweep_token=None,
                    sweep_until=None,
                    spill_path=None,
                    spill_bytes=None,
                )
                .execution_options(synchronize_session=False)
            )
        # Segments that share a blob (local batches, repeated frames) name it once;
        # a failure here leaves the blobs to the orphan pass.
        unused = [k for k in keys if k not in still]
        store.blobs.delete_many(unused)
        freed = sum(delete_spill_file(path) for path in spills if path)
        sizes: dict[str, int] = {}
        for key, n in segs:
            if key not in still:
                sizes[key] = sizes.get(key, 0) + int(n)
        return sum(sizes.values()) + freed

    def _remove_old_tombstones(self, report: SweepReport) -> None:
        store = self._store
        cutoff = store.clock.now() - timedelta(seconds=store.settings.tombstone_keep_s)
        old = [
            Artifact.state.in_(GONE_STATES),
            Artifact.purged_at.is_not(None),
            Artifact.purged_at < cutoff,
        ]
        if report.dry_run:
            with store.read() as s:
                report.tombstones_removed = int(
                    s.execute(select(func.count()).select_from(Artifact).where(*old)).scalar_one()
                )
            return
        while True:
            with store.write() as s:
                rows = s.execute(
                    select(Artifact.id, Artifact.owner)
                    .where(*old)
                    .limit(self.batch)
                    .with_for_update(skip_locked=True)
                ).all()
                if rows:
                    now = store.clock.now()
                    s.execute(delete(Artifact).where(Artifact.id.in_([r[0] for r in rows])))
                    for art_id, owner in rows:
                        audit.record(
                            s, now, "system:retention", "purge", artifact_id=art_id, owner=owner
                        )
            report.tombstones_removed += len(rows)
            if len(rows) < self.batch or not self._another_batch():
                return

    # -- reconciling -----------------------------------------------------------------

    def _finalise_writers(self, report: SweepReport) -> None:
        store = self._store
        if report.dry_run:
            now = store.clock.now()
            with store.read() as s:
                report.writers_finalised = int(
                    s.execute(
                        select(func.count())
                        .select_from(Artifact)
                        .where(Artifact.state == "writing", Artifact.lease_expires_at <= now)
                    ).scalar_one()
                )
            return
        report.writers_finalised = self.reap_stale_writers(report)

    def reap_stale_writers(self, report: SweepReport | None = None) -> int:
        """Mark every artifact whose writer's lease lapsed ``incomplete``, and take
        back the batch data it wrote that no segment names. Only the sweeper
        finalises a writer: a read never does (it may only be slow)."""
        now = self._store.clock.now()
        with self._store.write() as s:
            dead = list(
                s.execute(
                    select(Artifact.id).where(
                        Artifact.state == "writing",
                        Artifact.lease_expires_at.is_not(None),
                        Artifact.lease_expires_at <= now,
                    )
                ).scalars()
            )
            if dead:
                s.execute(
                    update(Artifact)
                    .where(Artifact.id.in_(dead), Artifact.state == "writing")
                    .values(
                        state="incomplete",
                        completed_at=now,
                        updated_at=now,
                        lease_token=None,
                        lease_expires_at=None,
                        error="writer stopped before finishing (lease lapsed)",
                    )
                )
        freed = sum(self._trim_unpublished(artifact_id) for artifact_id in dead)
        if report is not None:
            report.unpublished_bytes += freed
        return len(dead)

    def _trim_unpublished(self, artifact_id: str) -> int:
        """A placed blob (a file a batch of segments shares) cut back to its last
        published byte: a writer killed between writing a batch and publishing it
        left that data in the file, where only deleting the artifact freed it.
        Blobs no segment names at all are orphans (``_reclaim_orphans``); on S3 a
        segment is an object of its own, put whole, so nothing is left half."""
        blobs = self._store.blobs
        if not isinstance(blobs, AppendableBlobStore):
            return 0
        with self._store.read() as s:
            rows = s.execute(
                select(
                    Segment.blob_key,
                    func.max(
                        Segment.blob_offset + func.coalesce(Segment.stored_size, Segment.size)
                    ),
                )
                .where(Segment.artifact_id == artifact_id, Segment.blob_offset.is_not(None))
                .group_by(Segment.blob_key)
            ).all()
        used = {key: int(end) for key, end in rows if end is not None}
        freed = 0
        for blob in blobs.list(f"{artifact_id}/"):
            end = used.get(blob.key)
            if end is not None and blob.size > end:
                blobs.truncate(blob.key, end)
                freed += blob.size - end
        return freed

    def _reclaim_orphans(self, report: SweepReport) -> None:
        store = self._store
        cutoff = store.clock.now() - self.orphan_grace
        for _, blobs in _by_artifact(self._ours(store.blobs.list(), report)):
            # Named by any row: a pack of compressed frames may be named by the
            # rows of another artifact of the same owner (artifacts/writing/compaction.py).
            keys = [b.key for b in blobs]
            with store.read() as s:
                known = named(s, keys)
            orphans = [b for b in blobs if b.key not in known and b.modified < cutoff]
            if not orphans:
                continue
            # Re-check under the lock that publishes segments: a writer that just
            # committed this blob must not lose it.
            with store.write() as s:
                known = named(s, [b.key for b in orphans])
            orphans = [b for b in orphans if b.key not in known]
            report.orphan_blobs += len(orphans)
            report.orphan_bytes += sum(b.size for b in orphans)
            if not report.dry_run and orphans:
                store.blobs.delete_many([b.key for b in orphans])

    def _ours(self, blobs: Iterator[BlobInfo], report: SweepReport) -> Iterator[BlobInfo]:
        """Only keys of the shape the store writes; anything else is left alone."""
        for b in blobs:
            if is_segment_key(b.key):
                yield b
                continue
            report.foreign_skipped += 1
            if report.foreign_skipped <= 5:
                log.warning("cleanup: leaving %r alone: not a blob overspill wrote", b.key)

    def _partial_uploads(self, report: SweepReport) -> None:
        cutoff = self._store.clock.now() - self.orphan_grace
        report.partial_uploads = self._store.blobs.discard_partial(cutoff, dry_run=report.dry_run)


def _by_artifact(blobs: Iterator[BlobInfo]) -> Iterator[tuple[str, list[BlobInfo]]]:
    """Group a key-ordered listing by its artifact-id prefix, one group in memory."""
    current: str | None = None
    group: list[BlobInfo] = []
    for b in blobs:
        prefix = b.key.split("/", 1)[0]
        if prefix != current and group:
            yield current or "", group
            group = []
        current = prefix
        group.append(b)
    if group:
        yield current or "", group


def _note(report: SweepReport, ids: Sequence[str]) -> None:
    room = _MAX_LISTED - len(report.artifact_ids)
    if room > 0:
        report.artifact_ids.extend(ids[:room])


__all__ = ["SweepReport", "Sweeper"]
