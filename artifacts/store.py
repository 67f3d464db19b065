"""ArtifactStore: the one Python API over metadata (SQL) and bytes (blob backend).

Every public method takes the acting :class:`Principal`. A non-admin asking for
another owner's artifact gets exactly the NotFound a missing id gets. Expiry is
checked on every read, whatever the sweeper has or has not done yet.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import os
import secrets
import shutil
import stat
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypeVar

from sqlalchemy import ColumnElement, Engine, and_, func, or_, select, tuple_, update
from sqlalchemy.orm import Session

from overspill.artifacts import audit, grep, reads
from overspill.artifacts.blobs.base import AppendableBlobStore, BlobStore
from overspill.artifacts.blobs.registry import open_blob_store
from overspill.artifacts.clock import Clock, SystemClock
from overspill.artifacts.config import StoreSettings
from overspill.artifacts.content import Content, segment_key, segment_key_base
from overspill.artifacts.db.engine import (
    SCHEMA_HEAD,
    check_database,
    ensure_schema,
    make_engine,
    schema_revision,
)
from overspill.artifacts.db.models import Artifact, Segment
from overspill.artifacts.db.unit import Database
from overspill.artifacts.errors import (
    ConfigurationError,
    Conflict,
    Gone,
    InvalidArgument,
    InvalidRange,
    NotFound,
    OffsetConflict,
    OverspillError,
    QuotaExceeded,
    StorageUnavailable,
)
from overspill.artifacts.ids import check_artifact_id, new_artifact_id
from overspill.artifacts.inputs import check_source, check_text
from overspill.artifacts.policies import Policies
from overspill.artifacts.quotas import Quotas
from overspill.artifacts.records import (
    GONE_STATES,
    STATES,
    ArtifactInfo,
    ArtifactPage,
    GrepResult,
    LineWindow,
    Principal,
    TailWindow,
    TextWindow,
    Window,
)
from overspill.artifacts.retention import MAX_RETENTION_S, Forever, effective_policy
from overspill.artifacts.retention import resolve as resolve_retention
from overspill.artifacts.sweeper import Sweeper
from overspill.artifacts.tokens import TokenStore
from overspill.artifacts.usage import bump_usage
from overspill.artifacts.writer import ArtifactWriter, StagedSegment

SortKey = Literal["created", "size"]
MAX_PAGE = 500
LOW_DISK_BYTES = 16 * 1024 * 1024  # below this, /readyz says not ready
log = logging.getLogger(__name__)


class ArtifactStore:
    def __init__(
        self,
        settings: StoreSettings,
        engine: Engine,
        blobs: BlobStore,
        clock: Clock | None = None,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.blobs = blobs
        # Where the backend can grow a blob, a publish batch's segments share one.
        self._appender = blobs if isinstance(blobs, AppendableBlobStore) else None
        self.clock: Clock = clock or SystemClock()
        self.db = Database(engine)
        self._sessions = self.db.sessions
        self.quotas = Quotas(self)
        self.policies = Policies(self)
        self.sweeper = Sweeper(self)
        self.tokens = TokenStore(self.db, self.clock)

    @classmethod
    def open(cls, settings: StoreSettings, clock: Clock | None = None) -> ArtifactStore:
        """Build the store from settings. The embedded SQLite default migrates itself;
        a PostgreSQL deployment is migrated explicitly with ``overspill db upgrade``."""
        if settings.database_url is None or settings.blob_url is None:
            _private_dir(settings.home)
        blobs = open_blob_store(
            settings.resolved_blob_url, s3_endpoint_url=settings.s3_endpoint_url
        )
        engine = make_engine(settings.resolved_database_url)
        if settings.is_embedded_database:
            ensure_schema(engine)
        elif schema_revision(engine) != SCHEMA_HEAD:
            raise ConfigurationError(
                "database schema is not current: run `overspill db upgrade` first"
            )
        return cls(settings, engine, blobs, clock)

    def close(self) -> None:
        self.engine.dispose()

    # -- transactions ----------------------------------------------------------------

    def _read(self) -> AbstractContextManager[Session]:
        return self.db.read()

    def _write(self) -> AbstractContextManager[Session]:
        return self.db.write()

    # -- writing ---------------------------------------------------------------------

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
        return _info(row, self.clock.now())

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
            _StoreTarget(self, artifact_id, token, start),
            max_bytes=max_bytes - start,
            segment_bytes=s.segment_bytes or self.blobs.segment_bytes,
            flush_interval=s.flush_interval_s,
            lease_seconds=s.lease_seconds,
            stall_s=s.storage_stall_s,
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
        _check_retention(retention)
        now = self.clock.now()
        owner_name = owner or principal.name
        with self._write() as s:
            policy = effective_policy(s, owner_name, self.settings.default_retention_s)
            evicted = self.quotas.admit(s, owner_name, policy)
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

    def _purge_all(self, artifact_ids: list[str]) -> None:
        for artifact_id in artifact_ids:
            try:
                self.purge_bytes(artifact_id)
            except StorageUnavailable:
                pass  # the tombstone stays unpurged; the sweeper retries

    def _stage_segment(
        self,
        artifact_id: str,
        offset: int,
        data: memoryview,
        append_to: str | None = None,
    ) -> str | None:
        """Store a segment's bytes. They are part of nothing until ``_publish_segments``
        adds its row; until then the orphan reconciler would reclaim the blob.

        Where the backend can append, the segments of one publish batch share one
        blob: ``append_to`` names the batch's blob once its first segment made it
        (a file per batch instead of one per segment, which the page cache takes
        markedly faster here). Elsewhere each segment is its own and it is ignored."""
        if self._appender is not None:
            key = append_to or segment_key(artifact_id, offset, secrets.token_hex(4))
            self._appender.append(key, offset - segment_key_base(key), data)
        else:
            key = segment_key(artifact_id, offset, secrets.token_hex(4))
            self.blobs.put(key, data)
        return key

    def _publish_segments(
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
                            evicted += self.quotas.admit(
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
            if cut and self._appender is not None:  # only appended blobs are shared
                for key in cut:
                    self._appender.truncate(key, ends[key])
        except StorageUnavailable:
            pass

    def _renew_lease(self, artifact_id: str, token: str | None) -> None:
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

    def _finish(
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
        info = self.get(principal, artifact_id)
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
        self._renew_lease(writer.id, None)  # an append, even an empty one, keeps it alive
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
        return self.get(principal, artifact_id)

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
        info = self.get(principal, artifact_id)
        if info.state != "writing":
            raise Conflict(f"artifact {artifact_id} is already {info.state}")
        if total_bytes is not None and total_bytes < info.size_bytes:
            raise InvalidArgument(
                f"total_bytes {total_bytes} is less than the {info.size_bytes} bytes stored"
            )
        total = max(total_bytes or 0, info.total_bytes, info.size_bytes)
        if error:
            self._finish(artifact_id, None, "failed", total, None, error, source_update)
            return self.get(principal, artifact_id)
        content = self._content(info)
        digest = hashlib.sha256()
        for chunk in content.iter_range(0, content.size):
            digest.update(chunk)
        state = "capped" if total > info.size_bytes else "complete"
        self._finish(
            artifact_id,
            None,
            state,
            total,
            digest.hexdigest(),
            None,
            source_update,
            hashed_size=content.size,
        )
        return self.get(principal, artifact_id)

    # -- metadata --------------------------------------------------------------------

    def _load(
        self, s: Session, principal: Principal, artifact_id: str, *, lock: bool = False
    ) -> Artifact:
        """The row, or NotFound (another owner's is as missing as a missing one);
        ``lock`` holds it until commit (a change computed from its sizes)."""
        check_artifact_id(artifact_id)
        row = s.get(Artifact, artifact_id, with_for_update=lock)
        if row is None or (not principal.is_admin and row.owner != principal.name):
            raise NotFound(f"artifact {artifact_id} not found")
        return row

    def get(self, principal: Principal, artifact_id: str) -> ArtifactInfo:
        with self._read() as s:
            row = self._load(s, principal, artifact_id)
        now = self.clock.now()
        # A read never writes: a lapsed lease shows as incomplete (the row says
        # so once the reaper, holding the lease rules, finalises it), and a writer
        # that was only stalled can still renew and finish.
        return _info(row, now)

    def reap_stale_writers(self) -> int:
        """Mark every artifact whose writer's lease lapsed ``incomplete``."""
        now = self.clock.now()
        with self._write() as s:
            result = s.execute(
                update(Artifact)
                .where(
                    Artifact.state == "writing",
                    Artifact.lease_expires_at.is_not(None),
                    Artifact.lease_expires_at <= now,
                )
                .values(
                    state="incomplete",
                    completed_at=now,
                    updated_at=now,
                    lease_token=None,
                    lease_expires_at=None,
                    error="writer stopped before finishing (lease lapsed)",
                )
            )
            return int(getattr(result, "rowcount", 0) or 0)

    def list(
        self,
        principal: Principal,
        *,
        owner: str | None = None,
        session_id: str | None = None,
        kind: str | None = None,
        state: str | None = None,
        min_size: int | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        include_gone: bool = False,
        sort: SortKey = "created",
        descending: bool = True,
        limit: int = 50,
        cursor: str | None = None,
        with_total: bool = False,
    ) -> ArtifactPage:
        for field, value in (("owner", owner), ("session_id", session_id), ("kind", kind)):
            check_text(field, value)
        if limit < 1 or limit > MAX_PAGE:
            raise InvalidArgument(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
        if sort not in ("created", "size"):
            raise InvalidArgument(f"sort must be 'created' or 'size', got {sort!r}")
        if state is not None and state not in STATES:
            raise InvalidArgument(f"unknown state {state!r}: one of {', '.join(STATES)}")
        if min_size is not None and min_size < 0:
            raise InvalidArgument("min_size must be >= 0")
        now = self.clock.now()
        conds: list[ColumnElement[bool]] = []
        if not principal.is_admin:
            if owner is not None and owner != principal.name:
                return ArtifactPage(
                    items=[], next_cursor=None, total_bytes=0 if with_total else None
                )
            conds.append(Artifact.owner == principal.name)
        elif owner is not None:
            conds.append(Artifact.owner == owner)
        if session_id is not None:
            conds.append(Artifact.session_id == session_id)
        if kind is not None:
            conds.append(Artifact.kind == kind)
        if min_size is not None:
            conds.append(Artifact.size_bytes >= min_size)
        if created_after is not None:
            conds.append(Artifact.created_at >= created_after)
        if created_before is not None:
            conds.append(Artifact.created_at < created_before)
        lapsed = and_(Artifact.state == "writing", Artifact.lease_expires_at <= now)
        expired = and_(
            Artifact.expires_at <= now,
            Artifact.pinned_at.is_(None),
            Artifact.state.not_in(GONE_STATES),
        )
        if state == "incomplete":
            conds.append(or_(Artifact.state == "incomplete", lapsed))
        elif state == "writing":
            conds.append(Artifact.state == "writing")
            conds.append(or_(Artifact.lease_expires_at.is_(None), Artifact.lease_expires_at > now))
        elif state == "expired":
            conds.append(or_(Artifact.state == "expired", expired))
        elif state is not None:
            conds.append(Artifact.state == state)
            conds.append(~expired)
        if not include_gone and state not in GONE_STATES:
            conds.append(Artifact.state.not_in(GONE_STATES))
            conds.append(~expired)
        col = Artifact.created_at if sort == "created" else Artifact.size_bytes
        if cursor is not None:
            value, last_id = _decode_cursor(cursor, sort)
            key = tuple_(col, Artifact.id)
            conds.append(
                key < tuple_(value, last_id) if descending else key > tuple_(value, last_id)
            )
        order = (col.desc(), Artifact.id.desc()) if descending else (col.asc(), Artifact.id.asc())
        with self._read() as s:
            rows = (
                s.execute(select(Artifact).where(*conds).order_by(*order).limit(limit + 1))
                .scalars()
                .all()
            )
            total = None
            if with_total:
                # The cursor condition is the last one added; totals cover the whole filter.
                base = conds[:-1] if cursor is not None else conds
                total = int(
                    s.execute(
                        select(func.coalesce(func.sum(Artifact.size_bytes), 0)).where(*base)
                    ).scalar_one()
                )
        items = [_info(r, now) for r in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = rows[limit - 1]
            next_cursor = _encode_cursor(
                last.created_at if sort == "created" else last.size_bytes, last.id
            )
        return ArtifactPage(items=items, next_cursor=next_cursor, total_bytes=total)

    def delete(
        self, principal: Principal, artifact_id: str, *, reason: str = "deleted"
    ) -> ArtifactInfo:
        """Tombstone the artifact and remove its bytes. Idempotent on a tombstone.

        On a full disk the tombstone itself cannot be written; the bytes asked to
        go are then removed first (that frees the space) and the tombstone retried."""
        try:
            return self._delete(principal, artifact_id, reason)
        except StorageUnavailable as exc:
            if "full" not in exc.message:
                raise
            with self._read() as s:
                self._load(s, principal, artifact_id)  # the caller may delete it
                keys = sorted(
                    set(
                        s.execute(
                            select(Segment.blob_key).where(Segment.artifact_id == artifact_id)
                        ).scalars()
                    )
                )
            self.blobs.delete_many(keys)
            return self._delete(principal, artifact_id, reason)

    def _delete(self, principal: Principal, artifact_id: str, reason: str) -> ArtifactInfo:
        now = self.clock.now()
        with self._write() as s:
            # Locked: a publish committing between this read and the update would
            # otherwise leave its bytes counted in the owner's usage for good.
            row = self._load(s, principal, artifact_id, lock=True)
            if row.state not in GONE_STATES:
                freed = row.size_bytes
                row.state = "deleted"
                row.deleted_at = now
                row.deleted_by = principal.name
                row.delete_reason = reason
                row.updated_at = now
                row.lease_token = None
                row.lease_expires_at = None
                bump_usage(s, row.owner, -freed, -1)
                audit.record(
                    s,
                    now,
                    principal.name,
                    "delete",
                    artifact_id=row.id,
                    owner=row.owner,
                    reason=reason,
                    bytes=freed,
                )
        try:
            self.purge_bytes(artifact_id)
        except OverspillError as exc:
            # The delete is committed and the artifact is gone for every reader;
            # the sweeper purges tombstones whose bytes remain.
            log.warning("deleted %s; its bytes will be purged later: %s", artifact_id, exc.message)
        return self.get(principal, artifact_id)

    def pin(
        self, principal: Principal, artifact_id: str, reason: str | None = None
    ) -> ArtifactInfo:
        """Suspend expiry (and eviction) until unpinned; records who, when and why."""
        now = self.clock.now()
        with self._write() as s:
            row = self._load(s, principal, artifact_id)
            self._check_alive(row, now)
            row.pinned_at = now
            row.pinned_by = principal.name
            row.pin_reason = reason
            row.updated_at = now
            audit.record(
                s, now, principal.name, "pin", artifact_id=row.id, owner=row.owner, reason=reason
            )
        return self.get(principal, artifact_id)

    def unpin(self, principal: Principal, artifact_id: str) -> ArtifactInfo:
        """Lift a pin; the expiry the policy gave the artifact applies again."""
        now = self.clock.now()
        with self._write() as s:
            row = self._load(s, principal, artifact_id)
            if row.pinned_at is not None:
                row.pinned_at = None
                row.pinned_by = None
                row.pin_reason = None
                row.updated_at = now
                audit.record(s, now, principal.name, "unpin", artifact_id=row.id, owner=row.owner)
        return self.get(principal, artifact_id)

    def set_retention(
        self, principal: Principal, artifact_id: str, retention: int | Forever | None
    ) -> ArtifactInfo:
        """Ask for a retention (seconds from creation, "forever", or None for the
        policy default). The answer says which level decided and if it was clamped."""
        _check_retention(retention)
        now = self.clock.now()
        with self._write() as s:
            row = self._load(s, principal, artifact_id)
            self._check_alive(row, now)
            policy = effective_policy(s, row.owner, self.settings.default_retention_s)
            resolved = resolve_retention(policy, row.created_at, retention)
            row.expires_at = resolved.expires_at
            row.retention_requested_s = 0 if retention == "forever" else resolved.requested_s
            row.retention_source = resolved.source
            row.retention_clamped = resolved.clamped
            row.updated_at = now
            audit.record(
                s,
                now,
                principal.name,
                "retention",
                artifact_id=row.id,
                owner=row.owner,
                requested=retention,
                source=resolved.source,
                clamped=resolved.clamped,
                expires_at=resolved.expires_at.isoformat() if resolved.expires_at else None,
            )
        return self.get(principal, artifact_id)

    def _check_alive(self, row: Artifact, now: datetime) -> None:
        info = _info(row, now)
        if info.state in GONE_STATES:
            raise Gone(
                f"artifact {row.id} is {info.state}",
                reason=row.delete_reason or info.state,
                since=row.deleted_at or row.expires_at,
            )

    def usage(self, principal: Principal) -> Sequence[dict[str, Any]]:
        """Bytes and artifact counts per owner and state (admins: all owners)."""
        conds = [] if principal.is_admin else [Artifact.owner == principal.name]
        with self._read() as s:
            rows = s.execute(
                select(Artifact.owner, Artifact.state, func.count(), func.sum(Artifact.size_bytes))
                .where(*conds)
                .group_by(Artifact.owner, Artifact.state)
                .order_by(Artifact.owner, Artifact.state)
            ).all()
        owners: dict[str, dict[str, Any]] = {}
        for owner, state, count, size in rows:
            entry = owners.setdefault(
                owner, {"owner": owner, "bytes": 0, "artifacts": 0, "by_state": {}}
            )
            stored = 0 if state in GONE_STATES else int(size or 0)
            entry["by_state"][state] = {"artifacts": int(count), "bytes": stored}
            entry["bytes"] += stored
            entry["artifacts"] += int(count)
        return list(owners.values())

    def purge_bytes(self, artifact_id: str) -> int:
        """Remove a tombstoned artifact's bytes (claimed, so a sweeper never races
        it); returns bytes freed."""
        return self.sweeper.purge([artifact_id])

    # -- reads -----------------------------------------------------------------------

    def _readable(self, principal: Principal, artifact_id: str) -> tuple[ArtifactInfo, Content]:
        info = self.get(principal, artifact_id)
        if info.state in GONE_STATES:
            when = info.deleted_at if info.state == "deleted" else info.expires_at
            why = info.delete_reason or info.state
            raise Gone(f"artifact {artifact_id} is {info.state} ({why})", reason=why, since=when)
        return info, self._content(info)

    def _content(self, info: ArtifactInfo) -> Content:
        def missing() -> Exception:
            try:
                self._readable(Principal(name=info.owner, role="admin"), info.id)
            except (Gone, NotFound) as exc:
                return exc
            return StorageUnavailable(f"artifact {info.id}: a stored segment is missing")

        return Content(self.db, self.blobs, info.id, info.size_bytes, info.line_count, missing)

    def open_content(self, principal: Principal, artifact_id: str) -> tuple[ArtifactInfo, Content]:
        """Metadata and a stable byte view of what is stored now (streaming downloads)."""
        return self._readable(principal, artifact_id)

    def read_bytes(self, principal: Principal, artifact_id: str, start: int, end: int) -> bytes:
        """Bytes [start, end), at most ``read_max_bytes``; end clipped to the stored size."""
        if start < 0 or end < start:
            raise InvalidRange(f"invalid byte range {start}-{end}: need 0 <= start <= end")
        if end - start > self.settings.read_max_bytes:
            raise InvalidRange(
                f"range of {end - start} bytes exceeds the read limit of "
                f"{self.settings.read_max_bytes} bytes"
            )
        _, content = self._readable(principal, artifact_id)
        return content.read(start, end)

    def text(
        self, principal: Principal, artifact_id: str, offset: int = 0, limit: int | None = None
    ) -> TextWindow:
        info, content = self._readable(principal, artifact_id)
        limit = self._bound(limit)
        return _stated(reads.text_window(content, offset, limit, complete=info.complete), info)

    def lines(
        self,
        principal: Principal,
        artifact_id: str,
        start: int = 1,
        count: int = 100,
        max_bytes: int | None = None,
    ) -> LineWindow:
        info, content = self._readable(principal, artifact_id)
        window = reads.line_window(
            content, start, count, max_bytes=self._bound(max_bytes), complete=info.complete
        )
        return _stated(window, info)

    def tail(
        self,
        principal: Principal,
        artifact_id: str,
        *,
        lines: int | None = None,
        nbytes: int | None = None,
        max_bytes: int | None = None,
    ) -> TailWindow:
        info, content = self._readable(principal, artifact_id)
        window = reads.tail(
            content,
            lines=lines,
            nbytes=nbytes,
            max_bytes=self._bound(max_bytes),
            complete=info.complete,
        )
        return _stated(window, info)

    def grep(
        self,
        principal: Principal,
        artifact_id: str,
        pattern: str,
        *,
        ignore_case: bool = False,
        fixed: bool = False,
        context: int = 0,
        max_matches: int = 100,
        offset: int = 0,
        max_bytes: int | None = None,
        scan_bytes: int = 256 * 1024 * 1024,
    ) -> GrepResult:
        grep.compile_pattern(pattern, ignore_case=ignore_case, fixed=fixed)  # fail fast
        info, content = self._readable(principal, artifact_id)
        found = grep.grep(
            content,
            pattern,
            ignore_case=ignore_case,
            fixed=fixed,
            context=context,
            max_matches=max_matches,
            offset=offset,
            max_bytes=self._bound(max_bytes),
            scan_bytes=scan_bytes,
            complete=info.complete,
        )
        return _stated(found, info)

    def _bound(self, value: int | None) -> int:
        cap = self.settings.read_max_bytes
        if value is None:
            return cap
        if value <= 0:
            raise InvalidRange(f"limit must be positive, got {value}")
        return min(value, cap)

    def audit_log(
        self,
        *,
        artifact_id: str | None = None,
        owner: str | None = None,
        action: str | None = None,
        before_id: int | None = None,
        limit: int = 100,
    ) -> Sequence[audit.AuditEntry]:
        if limit < 1 or limit > 1000:
            raise InvalidArgument("limit must be between 1 and 1000")
        with self._read() as s:
            return audit.read(
                s,
                artifact_id=artifact_id,
                owner=owner,
                action=action,
                before_id=before_id,
                limit=limit,
            )

    def check(self) -> None:
        """Raise StorageUnavailable if the database or the blob backend is unusable,
        or a local disk they live on is (nearly) full: a store that will fail the
        next write is not ready, whatever its connections say."""
        check_database(self.engine)
        self.blobs.check()
        paths = [getattr(self.blobs, "root", None)]
        if self.engine.dialect.name == "sqlite" and self.engine.url.database:
            paths.append(Path(self.engine.url.database).parent)
        for path in paths:
            if path is None:
                continue
            try:
                free = shutil.disk_usage(path).free
            except OSError:
                continue
            if free < LOW_DISK_BYTES:
                raise StorageUnavailable(f"low disk: {free} bytes free under {path}")


class _StoreTarget:
    """An in-process writer's segments: blobs through the store's backend, rows in
    its database, under the writer's lease (``token``; None for HTTP appends)."""

    def __init__(self, store: ArtifactStore, artifact_id: str, token: str | None, start: int):
        self._store = store
        self._id = artifact_id
        self._token = token
        self._start = start
        self._batch_blob: str | None = None  # the blob this publish batch appends to

    def stage(self, offset: int, data: memoryview) -> str | None:
        self._batch_blob = self._store._stage_segment(
            self._id, self._start + offset, data, self._batch_blob
        )
        return self._batch_blob

    def publish(self, staged: Sequence[StagedSegment]) -> tuple[int, str | None]:
        # The writer publishes all it staged, so the next segment starts a new blob.
        self._batch_blob = None
        if self._start:  # the writer counts from where it started; rows from byte 0
            staged = [replace(seg, offset=self._start + seg.offset) for seg in staged]
        return self._store._publish_segments(self._id, self._token, staged)

    def renew(self) -> None:
        self._store._renew_lease(self._id, self._token)

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
        self._store._finish(
            self._id, self._token, state, self._start + total, sha256, error, source_update
        )


_W = TypeVar("_W", bound=Window)


def _stated(window: _W, info: ArtifactInfo) -> _W:
    """Stamp a read with the artifact's state as of the read (sizes from the view)."""
    size = getattr(window, "size_bytes", 0) or info.size_bytes
    return window.model_copy(
        update={
            "state": info.state,
            "size_bytes": size,
            "total_bytes": max(info.total_bytes, size),
            "error": info.error,
        }
    )


def _check_retention(value: object) -> None:
    if value is None or value == "forever":
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_RETENTION_S:
        raise InvalidArgument(
            f"retention must be 1 to {MAX_RETENTION_S} seconds or 'forever', got {value!r}"
        )


def _private_dir(path: Path) -> None:
    """The data directory, 0700: made so, or tightened if it is ours and looser
    (a home created by hand, or by an older release). One not ours is refused."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.lstat()
    except OSError as exc:
        raise StorageUnavailable(f"cannot create data directory {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise ConfigurationError(
            f"data directory {path} is not a directory owned by this user; "
            "set OVERSPILL_HOME to one that is"
        )
    if st.st_mode & 0o077:
        try:
            path.chmod(0o700)
        except OSError as exc:
            raise ConfigurationError(
                f"data directory {path} is readable by others and cannot be made private: "
                f"{exc.strerror}"
            ) from None


def _info(row: Artifact, now: datetime) -> ArtifactInfo:
    state = row.state
    if state == "writing" and row.lease_expires_at is not None and row.lease_expires_at <= now:
        state = "incomplete"
    elif (
        state not in GONE_STATES
        and row.expires_at is not None
        and row.expires_at <= now
        and row.pinned_at is None
    ):
        state = "expired"
    return ArtifactInfo(
        id=row.id,
        owner=row.owner,
        session_id=row.session_id,
        kind=row.kind,
        name=row.name,
        media_type=row.media_type,
        source=row.source or {},
        state=state,
        size_bytes=row.size_bytes,
        total_bytes=row.total_bytes,
        max_bytes=row.max_bytes,
        line_count=row.line_count,
        sha256=row.sha256,
        error=row.error,
        created_at=row.created_at,
        updated_at=row.updated_at,
        completed_at=row.completed_at,
        expires_at=None if row.pinned_at else row.expires_at,
        retention_source="pinned" if row.pinned_at else row.retention_source,
        retention_clamped=row.retention_clamped,
        pinned=row.pinned_at is not None,
        pinned_at=row.pinned_at,
        pinned_by=row.pinned_by,
        pin_reason=row.pin_reason,
        deleted_at=row.deleted_at,
        delete_reason=row.delete_reason,
    )


def _encode_cursor(value: datetime | int, artifact_id: str) -> str:
    raw = value.isoformat() if isinstance(value, datetime) else value
    return base64.urlsafe_b64encode(json.dumps([raw, artifact_id]).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, sort: SortKey) -> tuple[Any, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        value, artifact_id = raw
        check_artifact_id(artifact_id)
        if sort == "created":
            parsed: Any = datetime.fromisoformat(value)
            parsed.astimezone(UTC)  # a time with no UTC form cannot be a cursor
        elif isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63:
            parsed = value
        else:
            raise ValueError("size cursor needs an integer of 0 to 2**63-1")
        return parsed, artifact_id
    except (
        ValueError,
        TypeError,
        OverflowError,
        binascii.Error,
        json.JSONDecodeError,
        InvalidArgument,
    ):
        raise InvalidArgument(f"invalid cursor {cursor[:40]!r} for sort {sort!r}") from None
