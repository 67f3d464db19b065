"""Ingest: creating artifacts, their writers, the HTTP upload protocol (attach,
append at an offset, complete), publishing segments under a lease, finishing.

A segment's bytes are staged into a blob first and become part of the artifact
only when its row is published, in one transaction that checks the offset (and
the lease), admits it against the owner's quota and counts its lines.

Longer than the other parts (about 500 lines) because the upload protocol,
publishing and finishing share one transaction discipline (row lock, offset and
lease checks) that is clearest read in one place.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import update

from overspill.artifacts import audit
from overspill.artifacts.blobs.base import AppendableBlobStore, Appender
from overspill.artifacts.catalog import Catalog, info_of
from overspill.artifacts.content import segment_key, segment_key_base
from overspill.artifacts.context import Part, StoreContext
from overspill.artifacts.db.models import Artifact, Segment
from overspill.artifacts.errors import (
    Conflict,
    InvalidArgument,
    OffsetConflict,
    QuotaExceeded,
    StorageUnavailable,
)
from overspill.artifacts.ids import new_artifact_id
from overspill.artifacts.inputs import check_source, check_text
from overspill.artifacts.records import (
    ArtifactInfo,
    Principal,
)
from overspill.artifacts.retention import Forever, check_retention, effective_policy
from overspill.artifacts.retention import resolve as resolve_retention
from overspill.artifacts.segment_target import StoreTarget
from overspill.artifacts.usage import bump_usage
from overspill.artifacts.writer import ArtifactWriter, StagedSegment

if TYPE_CHECKING:
    from overspill.artifacts.quotas import Quotas
    from overspill.artifacts.reading import Reader
    from overspill.artifacts.sweeper import Sweeper

log = logging.getLogger(__name__)


class Ingest(Part):
    def __init__(
        self, ctx: StoreContext, quotas: Quotas, catalog: Catalog, reader: Reader, sweeper: Sweeper
    ) -> None:
        super().__init__(ctx)
        self._quotas = quotas
        self._catalog = catalog
        self._reader = reader
        self._sweeper = sweeper
        # Where the backend can grow a blob, a publish batch's segments share one.
        blobs = ctx.blobs
        self.appender = blobs if isinstance(blobs, AppendableBlobStore) else None

    def create(
        self,
        principal: Principal,
        *,
        kind: str = "output",
        name: str | None = None,
        media_type: str = "text/plain; charset=utf-8",
        session_id: str | None = None,
        source: dict[str, Any] | None = None,
        max_bytes: int | None = None,
        owner: str | None = None,
        retention: int | Forever | None = None,
    ) -> ArtifactInfo:
        """Create an empty artifact in state ``writing`` with no lease (HTTP uploads)."""
        row = self._insert(
            principal,
            kind,
            name,
            media_type,
            session_id,
            source,
            max_bytes,
            owner,
            lease_token=None,
            retention=retention,
        )
        return info_of(row, self.clock.now())

    def open_writer(
        self,
        principal: Principal,
        *,
        kind: str = "output",
        name: str | None = None,
        media_type: str = "text/plain; charset=utf-8",
        session_id: str | None = None,
        source: dict[str, Any] | None = None,
        max_bytes: int | None = None,
        retention: int | Forever | None = None,
    ) -> ArtifactWriter:
        """Create an artifact and return a streaming writer holding its lease."""
        token = secrets.token_hex(16)
        row = self._insert(
            principal,
            kind,
            name,
            media_type,
            session_id,
            source,
            max_bytes,
            None,
            lease_token=token,
            retention=retention,
        )
        return self._writer(row.id, token, row.max_bytes, start=0)

    def _writer(
        self, artifact_id: str, token: str | None, max_bytes: int, start: int
    ) -> ArtifactWriter:
        s = self.settings
        return ArtifactWriter(
            artifact_id,
            StoreTarget(self, artifact_id, token, start),
            max_bytes=max_bytes - start,
            segment_bytes=s.segment_bytes or self.blobs.segment_bytes,
            flush_interval=s.flush_interval_s,
            lease_seconds=s.lease_seconds,
            stall_s=s.storage_stall_s,
            # Where blobs can be appended to, the producer writes straight into them.
            placing=self.appender is not None,
        )

    def _insert(
        self,
        principal: Principal,
        kind: str,
        name: str | None,
        media_type: str,
        session_id: str | None,
        source: dict[str, Any] | None,
        max_bytes: int | None,
        owner: str | None,
        *,
        lease_token: str | None,
        retention: int | Forever | None = None,
    ) -> Artifact:
        if owner is not None and owner != principal.name and not principal.is_admin:
            raise InvalidArgument("only admins can create artifacts for another owner")
        if max_bytes is not None and max_bytes <= 0:
            raise InvalidArgument(f"max_bytes must be positive, got {max_bytes}")
        if not kind or len(kind) > 50:
            raise InvalidArgument("kind must be 1 to 50 characters")
        for field, value in (
            ("kind", kind),
            ("name", name),
            ("media_type", media_type),
            ("session_id", session_id),
            ("owner", owner),
        ):
            check_text(field, value)
        source = check_source(source)
        check_retention(retention)
        now = self.clock.now()
        owner_name = owner or principal.name
        with self._write() as s:
            policy = effective_policy(s, owner_name, self.settings.default_retention_s)
            evicted = self._quotas.admit(s, owner_name, policy)
            caps = [self.settings.max_artifact_bytes, max_bytes, policy.max_artifact_bytes]
            resolved = resolve_retention(policy, now, retention)
            row = Artifact(
                id=new_artifact_id(int(now.timestamp() * 1000)),
                owner=owner_name,
                session_id=session_id,
                kind=kind,
                name=name,
                media_type=media_type,
                source=dict(source or {}),
                state="writing",
                size_bytes=0,
                total_bytes=0,
                max_bytes=min(c for c in caps if c is not None),
                line_count=0,
                segment_count=0,
                created_at=now,
                updated_at=now,
                expires_at=resolved.expires_at,
                retention_requested_s=0 if retention == "forever" else resolved.requested_s,
                retention_source=resolved.source,
                retention_clamped=resolved.clamped,
                lease_token=lease_token,
                # Uploads over HTTP hold no token but do hold a lease: every append
                # renews it, and a client that vanishes leaves an incomplete artifact.
                lease_expires_at=now + timedelta(seconds=self.settings.lease_seconds),
            )
            s.add(row)
            bump_usage(s, row.owner, 0, 1)
            audit.record(
                s,
                now,
                principal.name,
                "create",
                artifact_id=row.id,
                owner=row.owner,
                kind=kind,
                retention=resolved.source,
                clamped=resolved.clamped or None,
            )
        self._purge_all(evicted)
        return row

    def stage_segment(
        self,
        artifact_id: str,
        offset: int,
        data: memoryview,
        append_to: str | None = None,
    ) -> str | None:
        """Store a segment's bytes. They are part of nothing until ``publish_segments``
        adds its row; until then the orphan reconciler would reclaim the blob.

        Where the backend can append, the segments of one publish batch share one
        blob: ``append_to`` names the batch's blob once its first segment made it
        (a file per batch instead of one per segment, which the page cache takes
        markedly faster here). Elsewhere each segment is its own and it is ignored."""
        if self.appender is not None:
            key = append_to or segment_key(artifact_id, offset, secrets.token_hex(4))
            self.appender.append(key, offset - segment_key_base(key), data)
        else:
            key = segment_key(artifact_id, offset, secrets.token_hex(4))
            self.blobs.put(key, data)
        return key

    def start_blob(self, artifact_id: str, offset: int) -> tuple[str, Appender]:
        """A new blob for bytes placed from artifact ``offset`` on (backends that
        can append): its key and an open Appender. Like a staged segment, it is
        part of nothing until ``publish_segments`` adds rows that use it."""
        assert self.appender is not None
        key = segment_key(artifact_id, offset, secrets.token_hex(4))
        return key, self.appender.open_appender(key, create=True)

    def publish_segments(
        self, artifact_id: str, token: str | None, staged: Sequence[StagedSegment]
    ) -> tuple[int, str | None]:
        """Add staged segments' rows in one transaction; returns the bytes published
        and why the owner's quota stopped it early, if it did.

        The update is conditional on the artifact still being ``writing`` at exactly
        the first segment's offset (and, for a leased writer, on still holding the
        lease), so a racing appender or a writer that lost its lease can never
        corrupt it. Blobs that end up in no row are deleted here.
        """
        admitted: list[StagedSegment] = []
        stop: str | None = None
        evicted: list[str] = []
        try:
            with self._write() as s:
                row = s.get(Artifact, artifact_id, with_for_update=True)
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
                for seg in staged:
                    try:
                        # A refusal must undo any eviction it tried, and only that.
                        with s.begin_nested() if policy.quota_bytes is not None else nullcontext():
                            evicted += self._quotas.admit(
                                s, row.owner, policy, seg.size, writing=row.id
                            )
                    except QuotaExceeded as exc:
                        stop = exc.message
                        break
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
                published = sum(seg.size for seg in admitted)
                row.size_bytes += published
                row.total_bytes = max(row.total_bytes, row.size_bytes)
                row.updated_at = now
                if row.lease_expires_at is not None:
                    row.lease_expires_at = now + timedelta(seconds=self.settings.lease_seconds)
        except BaseException:
            admitted = []
            raise
        finally:
            self._reclaim_unadmitted(staged, len(admitted))
        self._purge_all(evicted)
        return published, stop

    def _reclaim_unadmitted(self, staged: Sequence[StagedSegment], admitted: int) -> None:
        """Take back the bytes of segments that were never made part of the artifact:
        a blob no admitted segment uses is deleted, a shared one is cut back to its
        admitted end. On failure the orphan reconciler reclaims whole blobs later."""
        ends: dict[str, int] = {}
        for seg in staged[:admitted]:
            end = seg.offset + seg.size - segment_key_base(seg.key)
            ends[seg.key] = max(ends.get(seg.key, 0), end)
        unused = list(dict.fromkeys(s.key for s in staged[admitted:] if s.key not in ends))
        cut = {s.key for s in staged[admitted:]} & ends.keys()
        try:
            if unused:
                self.blobs.delete_many(unused)
            if cut and self.appender is not None:  # only appended blobs are shared
                for key in cut:
                    self.appender.truncate(key, ends[key])
        except StorageUnavailable:
            pass

    def renew_lease(self, artifact_id: str, token: str | None) -> None:
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

    def finish_artifact(
        self,
        artifact_id: str,
        token: str | None,
        state: str,
        total: int,
        sha: str | None,
        error: str | None,
        source_update: dict[str, Any] | None = None,
        *,
        hashed_size: int | None = None,
    ) -> None:
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
            row.state = state
            if source_update:
                row.source = {**(row.source or {}), **source_update}
            row.total_bytes = max(total, row.size_bytes)
            row.sha256 = sha if sha is not None else None
            row.error = error
            row.completed_at = now
            row.updated_at = now
            row.lease_token = None
            row.lease_expires_at = None

    def attach_writer(self, principal: Principal, artifact_id: str, offset: int) -> ArtifactWriter:
        """A writer appending to an existing ``writing`` artifact at ``offset``
        (HTTP uploads). Offset mismatch raises OffsetConflict with the current size."""
        info = self._catalog.get(principal, artifact_id)
        if info.state != "writing":
            raise Conflict(f"artifact {artifact_id} is {info.state}; appends need state writing")
        if offset != info.size_bytes:
            raise OffsetConflict(
                f"append at offset {offset} but artifact has {info.size_bytes} bytes",
                current_size=info.size_bytes,
            )
        return self._writer(artifact_id, None, info.max_bytes, start=offset)

    def end_append(self, writer: ArtifactWriter, offset: int) -> None:
        """Publish what an attached writer holds without finishing the artifact."""
        try:
            writer.flush()
        finally:
            writer.abandon()
        if writer.capped:
            self._mark_total(writer.id, offset + writer.total_bytes)
        self.renew_lease(writer.id, None)  # an append, even an empty one, keeps it alive
        if writer.stopped:
            raise QuotaExceeded(writer.stopped)

    def append(
        self, principal: Principal, artifact_id: str, offset: int, chunks: Iterator[bytes]
    ) -> ArtifactInfo:
        """Append a stream at an explicit offset (HTTP PATCH). Offset mismatch -> 409.
        An empty append only renews the upload's lease."""
        writer = self.attach_writer(principal, artifact_id, offset)
        try:
            for chunk in chunks:
                writer.write(chunk)
        finally:
            self.end_append(writer, offset)
        return self._catalog.get(principal, artifact_id)

    def _mark_total(self, artifact_id: str, total: int) -> None:
        with self._write() as s:
            row = s.get(Artifact, artifact_id, with_for_update=True)
            if row is not None and total > row.total_bytes:
                row.total_bytes = total

    def complete(
        self,
        principal: Principal,
        artifact_id: str,
        *,
        total_bytes: int | None = None,
        source_update: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> ArtifactInfo:
        """Finish an HTTP-uploaded artifact: compute its sha256 (one bounded pass over
        what is stored) and mark it final. ``total_bytes`` beyond the stored size
        (the producer saw more than the cap) makes it ``capped``."""
        source_update = check_source(source_update, "source") if source_update else None
        check_text("error", error)
        info = self._catalog.get(principal, artifact_id)
        if info.state != "writing":
            raise Conflict(f"artifact {artifact_id} is already {info.state}")
        if total_bytes is not None and total_bytes < info.size_bytes:
            raise InvalidArgument(
                f"total_bytes {total_bytes} is less than the {info.size_bytes} bytes stored"
            )
        total = max(total_bytes or 0, info.total_bytes, info.size_bytes)
        if error:
            self.finish_artifact(artifact_id, None, "failed", total, None, error, source_update)
            return self._catalog.get(principal, artifact_id)
        content = self._reader.content(info)
        digest = hashlib.sha256()
        for chunk in content.iter_range(0, content.size):
            digest.update(chunk)
        state = "capped" if total > info.size_bytes else "complete"
        self.finish_artifact(
            artifact_id,
            None,
            state,
            total,
            digest.hexdigest(),
            None,
            source_update,
            hashed_size=content.size,
        )
        return self._catalog.get(principal, artifact_id)

    def _purge_all(self, artifact_ids: list[str]) -> None:
        for artifact_id in artifact_ids:
            try:
                self._sweeper.purge([artifact_id])
            except StorageUnavailable:
                pass  # the tombstone stays unpurged; the sweeper retries
