"""The catalog: an artifact's metadata and lifecycle as its owner sees it:
get, list, delete, pin, retention, usage. Another owner's artifact is exactly as
missing as a missing one; expiry and lapsed leases are judged at read time.

About 410 lines because listing is one query built from every filter, the cursor
and the totals, and reads best whole beside the lifecycle it lists.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, and_, func, or_, select, tuple_
from sqlalchemy.orm import Session

from overspill.artifacts.catalog import audit
from overspill.artifacts.catalog.retention import Forever, check_retention, effective_policy
from overspill.artifacts.catalog.retention import resolve as resolve_retention
from overspill.artifacts.catalog.usage import bump_usage, charged
from overspill.artifacts.clock import as_utc
from overspill.artifacts.context import Part, StoreContext
from overspill.artifacts.db.models import Artifact, Segment
from overspill.artifacts.errors import (
    Gone,
    InvalidArgument,
    NotFound,
    OverspillError,
    StorageUnavailable,
)
from overspill.artifacts.ids import check_artifact_id
from overspill.artifacts.inputs import check_text
from overspill.artifacts.queries import ListQuery
from overspill.artifacts.records import (
    GONE_STATES,
    ArtifactInfo,
    ArtifactPage,
    Principal,
    from_row,
)

if TYPE_CHECKING:
    from overspill.artifacts.catalog.sweeper import Sweeper

log = logging.getLogger(__name__)


class Catalog(Part):
    def __init__(self, ctx: StoreContext, sweeper: Sweeper) -> None:
        super().__init__(ctx)
        self._sweeper = sweeper

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
        return info_of(row, now)

    def list(
        self,
        principal: Principal,
        query: ListQuery | None = None,
        *,
        with_total: bool = False,
    ) -> ArtifactPage:
        q = query or ListQuery()
        owner, session_id, kind, state = q.owner, q.session_id, q.kind, q.state
        min_size, cursor, sort, limit = q.min_size, q.cursor, q.sort, q.limit
        created_after, created_before = (
            _maybe_utc(q.created_after, "created_after"),
            _maybe_utc(q.created_before, "created_before"),
        )
        descending, include_gone = q.order == "desc", q.include_gone
        for field, value in (("owner", owner), ("session_id", session_id), ("kind", kind)):
            check_text(field, value)
        now = self.clock.now()
        conds: list[ColumnElement[bool]] = []
        if not principal.is_admin:
            if owner is not None and owner != principal.name:
                return ArtifactPage(
                    items=[],
                    next_cursor=None,
                    total_bytes=0 if with_total else None,
                    total_count=0 if with_total else None,
                )
            conds.append(Artifact.owner == principal.name)
        elif owner is not None:
            conds.append(Artifact.owner == owner)
        conds += Artifact.equal_to(session_id=session_id, kind=kind, spill_path=q.spill_path)
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
            total = count = None
            if with_total:
                # The cursor condition is the last one added; totals cover the whole filter.
                base = conds[:-1] if cursor is not None else conds
                summed, counted = s.execute(
                    select(func.coalesce(func.sum(Artifact.size_bytes), 0), func.count()).where(
                        *base
                    )
                ).one()
                total, count = int(summed), int(counted)
        items = [info_of(r, now) for r in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = rows[limit - 1]
            next_cursor = _encode_cursor(
                last.created_at if sort == "created" else last.size_bytes, last.id
            )
        return ArtifactPage(
            items=items, next_cursor=next_cursor, total_bytes=total, total_count=count
        )

    @staticmethod
    def cursor_after(info: ArtifactInfo) -> str:
        """The cursor of a newest-first listing (``sort="created"``) that goes on
        right after ``info``: a search that stopped at the next output starts its
        next call there, instead of listing the page again up to it."""
        return _encode_cursor(info.created_at, info.id)

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
                freed = charged(row.stored_bytes, row.size_bytes)
                row.state = "deleted"
                row.deleted_at = now
                row.deleted_by = principal.name
                row.delete_reason = reason
                row.updated_at = now
                row.lease_token = None
                row.lease_expires_at = None
                bump_usage(s, row.owner, -freed, -1)
                audit.record(s, now, principal.name, "delete", of=row, reason=reason, bytes=freed)
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
            audit.record(s, now, principal.name, "pin", of=row, reason=reason)
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
        check_retention(retention)
        now = self.clock.now()
        with self._write() as s:
            row = self._load(s, principal, artifact_id)
            self._check_alive(row, now)
            policy = effective_policy(s, row.owner, self.settings.default_retention_s)
            resolved = resolve_retention(policy, row.created_at, retention, row.expires_at)
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
                of=row,
                requested=retention,
                source=resolved.source,
                clamped=resolved.clamped,
                expires_at=resolved.expires_at.isoformat() if resolved.expires_at else None,
            )
        return self.get(principal, artifact_id)

    def _check_alive(self, row: Artifact, now: datetime) -> None:
        info = info_of(row, now)
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
                select(
                    Artifact.owner,
                    Artifact.state,
                    func.count(),
                    func.sum(Artifact.size_bytes),
                    func.sum(func.coalesce(Artifact.stored_bytes, Artifact.size_bytes)),
                    func.sum(Artifact.spill_bytes),
                )
                .where(*conds)
                .group_by(Artifact.owner, Artifact.state)
                .order_by(Artifact.owner, Artifact.state)
            ).all()
        owners: dict[str, dict[str, Any]] = {}
        for owner, state, count, size, kept, spilled in rows:
            entry = owners.setdefault(
                owner,
                {
                    "owner": owner,
                    "bytes": 0,  # what the store holds (compressed): quotas count this
                    "output_bytes": 0,  # what those outputs are, uncompressed
                    "artifacts": 0,
                    "legacy_spill_bytes": 0,
                    "by_state": {},
                },
            )
            gone = state in GONE_STATES
            stored, output = (0, 0) if gone else (int(kept or 0), int(size or 0))
            entry["by_state"][state] = {
                "artifacts": int(count),
                "bytes": stored,
                "output_bytes": output,
            }
            entry["bytes"] += stored
            entry["output_bytes"] += output
            entry["artifacts"] += int(count)
            # Spill files not yet removed (a tombstone's go when its bytes do).
            entry["legacy_spill_bytes"] += int(spilled or 0)
        return list(owners.values())

    def purge_bytes(self, artifact_id: str) -> int:
        """Remove a tombstoned artifact's bytes (claimed, so a sweeper never races
        it); returns bytes freed."""
        return self._sweeper.purge([artifact_id])


def info_of(row: Artifact, now: datetime) -> ArtifactInfo:
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
    pinned = row.pinned_at is not None
    return from_row(
        ArtifactInfo,
        row,
        source=row.source or {},
        state=state,
        expires_at=None if pinned else row.expires_at,
        retention_source="pinned" if pinned else row.retention_source,
        pinned=pinned,
        stored_bytes=charged(row.stored_bytes, row.size_bytes),
        compressed=row.stored_bytes is not None and row.state not in GONE_STATES,
    )


def _encode_cursor(value: datetime | int, artifact_id: str) -> str:
    raw = value.isoformat() if isinstance(value, datetime) else value
    return base64.urlsafe_b64encode(json.dumps([raw, artifact_id]).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, sort: str) -> tuple[Any, str]:
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


def _maybe_utc(value: datetime | None, name: str) -> datetime | None:
    return None if value is None else as_utc(value, name)
