"""Per-owner byte quotas, checked where bytes are admitted.

The owner's usage row is locked (``FOR UPDATE`` on PostgreSQL; SQLite's write
lock is already held) in the same transaction that adds the bytes, so concurrent
writers can never together overshoot. Over quota, the owner's policy decides:
``reject`` refuses the new bytes (the artifact keeps its prefix and is capped),
``evict`` tombstones that owner's oldest unpinned finished artifacts to make room.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from overspill.artifacts.catalog import audit
from overspill.artifacts.catalog.retention import Policy
from overspill.artifacts.catalog.usage import bump_usage, charged
from overspill.artifacts.db.models import Artifact, OwnerUsage
from overspill.artifacts.errors import QuotaExceeded

if TYPE_CHECKING:
    from overspill.artifacts.context import StoreContext

_EVICTABLE = ("complete", "capped", "incomplete", "failed")


class Quotas:
    def __init__(self, store: StoreContext) -> None:
        self._store = store

    def _usage(self, s: Session, owner: str) -> int:
        row = s.execute(
            select(OwnerUsage).where(OwnerUsage.owner == owner).with_for_update()
        ).scalar_one_or_none()
        return row.bytes_stored if row is not None else 0

    def admit(
        self, s: Session, owner: str, policy: Policy, incoming: int = 0, writing: str | None = None
    ) -> list[str]:
        """Make room for ``incoming`` bytes of ``owner`` or raise QuotaExceeded.

        Returns the ids evicted to make room; the caller purges their bytes once
        its transaction has committed."""
        quota = policy.quota_bytes
        if quota is None:
            return []
        used = self._usage(s, owner)
        if used + incoming <= quota and (incoming or used < quota):
            return []
        evicted: list[str] = []
        if policy.over_quota == "evict":
            used = self._evict(s, owner, used, quota, incoming, writing, evicted)
            if used + incoming <= quota and (incoming or used < quota):
                return evicted
        raise QuotaExceeded(
            f"quota exceeded for {owner}: {used} of {quota} bytes used"
            + (f", {incoming} more requested" if incoming else ""),
            room=max(0, quota - used),
        )

    def _evict(
        self,
        s: Session,
        owner: str,
        used: int,
        quota: int,
        incoming: int,
        writing: str | None,
        evicted: list[str],
    ) -> int:
        now = self._store.clock.now()
        victims = (
            s.execute(
                select(Artifact)
                .where(
                    Artifact.owner == owner,
                    Artifact.state.in_(_EVICTABLE),
                    Artifact.pinned_at.is_(None),
                    Artifact.id != (writing or ""),
                )
                .order_by(Artifact.created_at, Artifact.id)
                .limit(1000)
                .with_for_update(skip_locked=True)
            )
            .scalars()
            .all()
        )
        for row in victims:
            if used + incoming <= quota and (incoming or used < quota):
                break
            freed = charged(row.stored_bytes, row.size_bytes)
            row.state = "deleted"
            row.deleted_at = now
            row.deleted_by = "system:quota"
            row.delete_reason = "evicted (owner over quota)"
            row.updated_at = now
            bump_usage(s, owner, -freed, -1)
            used -= freed
            audit.record(
                s, now, "system:quota", "evict", artifact_id=row.id, owner=owner, bytes=freed
            )
            evicted.append(row.id)
        return used
