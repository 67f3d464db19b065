"""Publishing: the transactions that make stored segments part of an artifact,
renew a writer's lease and record how it ended.

A segment's bytes are stored into a blob first (``artifacts.writing.segment_storage``,
or a local server's client) and become part of the artifact only when its row
is published here, in one transaction that checks the offset (and the lease),
admits the bytes against the owner's quota and counts their lines. Every
update is conditional on the artifact still being ``writing`` at exactly the
expected size and, for a leased writer, on still holding the lease, so a racing
appender or a writer that lost its lease can never corrupt it.

``Publication`` is one writer's ``SegmentPublisher``: these transactions bound
to its artifact and lease.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from overspill.artifacts.blobs.base import AppendableBlobStore
from overspill.artifacts.blobs.keys import is_segment_key, segment_key_base
from overspill.artifacts.catalog import audit
from overspill.artifacts.catalog.retention import effective_policy
from overspill.artifacts.catalog.usage import bump_usage
from overspill.artifacts.context import Part, StoreContext
from overspill.artifacts.db.models import Artifact, Segment
from overspill.artifacts.errors import (
    Conflict,
    DatabaseUnavailable,
    InvalidArgument,
    OffsetConflict,
    QuotaExceeded,
    StorageUnavailable,
)
from overspill.artifacts.newlines import count_newlines
from overspill.artifacts.stored.spill_files import is_spill_path
from overspill.artifacts.writing.segments import StagedSegment
from overspill.artifacts.writing.writes import Ending

if TYPE_CHECKING:
    from overspill.artifacts.catalog.quotas import Quotas
    from overspill.artifacts.catalog.sweeper import Sweeper

log = logging.getLogger(__name__)


class Publisher(Part):
    def __init__(self, ctx: StoreContext, quotas: Quotas, sweeper: Sweeper) -> None:
        super().__init__(ctx)
        self._quotas = quotas
        self._sweeper = sweeper
        # Told the id of each artifact this process saw end (a server's background
        # compaction listens); never raises into the writer.
        self.on_finished: Callable[[str], None] | None = None

    def for_writer(self, artifact_id: str, token: str | None) -> Publication:
        return Publication(self, artifact_id, token)

    def publish(
        self, artifact_id: str, token: str | None, staged: Sequence[StagedSegment]
    ) -> tuple[int, str | None]:
        """Add staged segments' rows in one transaction; returns the bytes published
        and why the owner's quota stopped it early, if it did. Blobs that end up in
        no row are given back here."""
        for seg in staged:
            if not is_segment_key(seg.key, artifact_id) or seg.size <= 0:
                raise InvalidArgument(f"segment {seg.key!r} is not one of {artifact_id}'s blobs")
        admitted: list[StagedSegment] = []
        stop: str | None = None
        evicted: list[str] = []
        published = 0
        try:
            with self._write() as s:
                row = s.get(Artifact, artifact_id, with_for_update=True)
                if (
                    row is not None
                    and row.size_bytes > staged[0].offset
                    and _published(s, artifact_id, staged)
                ):
                    # A retry of a batch whose commit went through while its answer
                    # was lost (the database dropped the connection at COMMIT); its
                    # blob keys are random, so the rows are this very batch's.
                    admitted = list(staged)
                    return sum(seg.size for seg in staged), None
                if row is None or row.state != "writing":
                    raise Conflict(f"artifact {artifact_id} is no longer being written")
                if token is not None and row.lease_token != token:
                    raise Conflict(f"artifact {artifact_id}: writer lost its lease")
                if row.size_bytes != staged[0].offset:
                    raise OffsetConflict(
                        f"append at offset {staged[0].offset} but artifact {artifact_id} has "
                        f"{row.size_bytes} bytes",
                        current_size=row.size_bytes,
                    )
                policy = effective_policy(s, row.owner, self.settings.default_retention_s)
                prev = (
                    s.get(Segment, (artifact_id, row.segment_count - 1))
                    if row.segment_count
                    else None
                )
                line_offset = prev.line_offset + prev.newlines if prev else 0
                now = self.clock.now()
                expected = row.size_bytes
                for seg in staged:
                    if seg.offset != expected:
                        raise InvalidArgument(
                            f"segments of {artifact_id} must follow each other: one starts at "
                            f"{seg.offset}, expected {expected}"
                        )
                    expected += seg.size
                    try:
                        # A refusal must undo any eviction it tried, and only that.
                        with s.begin_nested() if policy.quota_bytes is not None else nullcontext():
                            evicted += self._quotas.admit(
                                s, row.owner, policy, seg.size, writing=row.id
                            )
                    except QuotaExceeded as exc:
                        stop = exc.message
                        # The prefix that still fits is stored: the segment's row
                        # covers its first ``room`` bytes.
                        if not 0 < exc.room < seg.size:
                            break
                        seg = self._prefix(seg, exc.room)
                        evicted += self._quotas.admit(
                            s, row.owner, policy, seg.size, writing=row.id
                        )
                    s.add(
                        Segment(
                            artifact_id=artifact_id,
                            seq=row.segment_count,
                            offset=seg.offset,
                            size=seg.size,
                            blob_key=seg.key,
                            blob_offset=seg.offset - segment_key_base(seg.key),
                            line_offset=line_offset,
                            newlines=seg.newlines,
                            created_at=now,
                        )
                    )
                    row.segment_count += 1
                    row.line_count = (
                        line_offset + seg.newlines + (0 if seg.ends_with_newline else 1)
                    )
                    line_offset += seg.newlines
                    bump_usage(s, row.owner, seg.size, 0)
                    admitted.append(seg)
                    if stop:
                        break
                published = sum(seg.size for seg in admitted)
                row.size_bytes += published
                row.total_bytes = max(row.total_bytes, row.size_bytes)
                row.updated_at = now
                if row.lease_expires_at is not None:
                    row.lease_expires_at = now + timedelta(seconds=self.settings.lease_seconds)
        except DatabaseUnavailable:
            # The commit may have gone through (the connection died at COMMIT) and
            # the writer retries this batch: its blobs stay. Never named, they go
            # with the orphan pass.
            admitted = list(staged)
            raise
        except BaseException:
            admitted = []
            raise
        finally:
            self._reclaim_unadmitted(staged, admitted)
        self.purge_all(evicted)
        return published, stop

    def _prefix(self, seg: StagedSegment, size: int) -> StagedSegment:
        """The first ``size`` bytes of a staged segment, its newlines counted from
        its blob (one bounded read, on the rare path where a quota cuts it)."""
        start = seg.offset - segment_key_base(seg.key)
        newlines, last = 0, b""
        for chunk in self.blobs.read(seg.key, start, start + size):
            newlines += count_newlines(chunk)
            last = chunk[-1:] or last
        return StagedSegment(seg.offset, size, seg.key, newlines, last == b"\n")

    def _reclaim_unadmitted(
        self, staged: Sequence[StagedSegment], admitted: Sequence[StagedSegment]
    ) -> None:
        """Take back the bytes of segments that were never made part of the artifact:
        a blob no admitted segment uses is deleted, one an admitted segment uses in
        part (a quota's cut, a shared placed blob) is cut back to its admitted end.
        On failure the orphan reconciler reclaims whole blobs later."""
        ends: dict[str, int] = {}
        for seg in admitted:
            end = seg.offset + seg.size - segment_key_base(seg.key)
            ends[seg.key] = max(ends.get(seg.key, 0), end)
        full: dict[str, int] = {}
        for seg in staged:
            end = seg.offset + seg.size - segment_key_base(seg.key)
            full[seg.key] = max(full.get(seg.key, 0), end)
        unused = [key for key in full if key not in ends]
        cut = {key for key, end in ends.items() if full.get(key, 0) > end}
        blobs = self.blobs
        try:
            if unused:
                blobs.delete_many(unused)
            if cut and isinstance(blobs, AppendableBlobStore):  # only placed blobs are shared
                for key in cut:
                    blobs.truncate(key, ends[key])
        except StorageUnavailable:
            pass

    def renew(self, artifact_id: str, token: str | None) -> None:
        now = self.clock.now()
        same_writer = (
            Artifact.lease_token == token if token is not None else Artifact.lease_token.is_(None)
        )
        with self._write() as s:
            s.execute(
                update(Artifact)
                .where(
                    Artifact.id == artifact_id,
                    same_writer,
                    Artifact.state == "writing",
                    Artifact.lease_expires_at.is_not(None),
                )
                .values(lease_expires_at=now + timedelta(seconds=self.settings.lease_seconds))
            )

    def finish(
        self,
        artifact_id: str,
        token: str | None,
        ending: Ending,
        *,
        hashed_size: int | None = None,
        local_writer: bool = False,
    ) -> None:
        """Record the final state. ``total`` is what the producer offered: a state
        of ``complete`` with fewer bytes stored than that is never recorded (it
        becomes ``capped``, ``failed`` or ``incomplete`` by what went wrong).

        A writer on this machine (``local_writer``) may record the legacy spill
        file it wrote (``source_update["spill"] = {"path", "bytes"}``), which then
        follows the artifact; from anyone else the key is dropped, since the path
        means nothing (or the wrong thing) here."""
        state, total, sha, error, source_update = ending
        source_update = dict(source_update or {})
        spill = source_update.pop("spill", None)
        # What the output's maker showed a model inline (the ledger's column).
        shown = source_update.pop("shown_bytes", None)
        if (
            not local_writer
            or not isinstance(spill, dict)
            or not is_spill_path(str(spill.get("path")))
        ):
            spill = None
        now = self.clock.now()
        with self._write() as s:
            row = s.get(Artifact, artifact_id, with_for_update=True)
            if row is None or row.state != "writing":
                return
            if token is not None and row.lease_token != token:
                return
            if hashed_size is not None and row.size_bytes != hashed_size:
                # An append landed after the hash was computed: recording it would
                # give the artifact a sha256 (and ETag) of other bytes.
                raise OffsetConflict(
                    f"artifact {artifact_id} grew to {row.size_bytes} bytes while it was "
                    f"being completed ({hashed_size} hashed); complete it again",
                    current_size=row.size_bytes,
                )
            if state == "capped" and row.total_bytes > total:
                total = row.total_bytes
            total = max(total, row.total_bytes, row.size_bytes)
            if state == "complete" and row.size_bytes < total:
                # Bytes were offered that no segment holds: whatever the writer
                # believed, the artifact is not the whole output.
                state, sha = "incomplete", None
                error = error or (
                    f"{row.size_bytes} of {total} bytes were stored; the rest never arrived"
                )
            row.state = state
            if isinstance(shown, int) and shown >= 0:
                row.shown_bytes = (row.shown_bytes or 0) + shown
            if source_update:
                row.source = {**(row.source or {}), **source_update}
            redactions = source_update.get("redactions")
            if isinstance(redactions, dict):  # what was masked (never a value), or "off"
                audit.record(
                    s,
                    now,
                    row.owner,
                    "unredacted" if redactions.get("off") else "redact",
                    of=row,
                    count=redactions.get("count"),
                    rules=redactions.get("rules"),
                )
            if spill is not None:
                row.spill_path = str(spill["path"])
                row.spill_bytes = int(spill.get("bytes") or 0)
            row.total_bytes = total
            row.sha256 = sha
            row.error = error
            row.completed_at = now
            row.updated_at = now
            row.lease_token = None
            row.lease_expires_at = None
        if self.on_finished is not None:
            self.on_finished(artifact_id)

    def mark_total(self, artifact_id: str, total: int) -> None:
        with self._write() as s:
            row = s.get(Artifact, artifact_id, with_for_update=True)
            if row is not None and total > row.total_bytes:
                row.total_bytes = total

    def purge_all(self, artifact_ids: list[str]) -> None:
        for artifact_id in artifact_ids:
            try:
                self._sweeper.purge([artifact_id])
            except StorageUnavailable:
                pass  # the tombstone stays unpurged; the sweeper retries


class Publication:
    """One writer's ``SegmentPublisher``: the publisher bound to its artifact and
    lease (``token``; None for HTTP uploads, whose appends hold the lease)."""

    def __init__(self, publisher: Publisher, artifact_id: str, token: str | None) -> None:
        self._publisher = publisher
        self._id = artifact_id
        self._token = token

    def publish(self, staged: Sequence[StagedSegment]) -> tuple[int, str | None]:
        return self._publisher.publish(self._id, self._token, staged)

    def renew(self) -> None:
        self._publisher.renew(self._id, self._token)

    def finish(self, ending: Ending) -> None:
        self._publisher.finish(self._id, self._token, ending, local_writer=True)


def _published(s: Session, artifact_id: str, staged: Sequence[StagedSegment]) -> bool:
    """Whether each staged segment is already a row of the artifact, at its offset
    and in its blob: the batch was published before."""
    rows = dict(
        s.execute(
            select(Segment.offset, Segment.blob_key).where(
                Segment.artifact_id == artifact_id,
                Segment.offset.in_([seg.offset for seg in staged]),
            )
        ).all()
    )
    return all(rows.get(seg.offset) == seg.key for seg in staged)
