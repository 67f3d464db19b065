"""What admins set: the global and per-owner retention/quota policies, a preview of
what a change would expire, and applying a change to existing artifacts.

Changes apply to new artifacts; ``apply_to_existing`` recomputes the expiry of
every unpinned, live artifact of the owners concerned (their own requests are
kept and re-clamped under the new ceiling). Every change is audited.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from overspill.artifacts.bounds import MAX_OFFSET
from overspill.artifacts.catalog import audit
from overspill.artifacts.catalog.retention import (
    GLOBAL,
    MAX_RETENTION_S,
    Forever,
    Policy,
    effective_policy,
    merge_policy,
    resolve,
)
from overspill.artifacts.db.models import Artifact, RetentionPolicy
from overspill.artifacts.errors import InvalidArgument, NotFound
from overspill.artifacts.records import GONE_STATES, Principal, from_row

if TYPE_CHECKING:
    from overspill.artifacts.context import StoreContext

_BATCH = 1000


class PolicySpec(BaseModel):
    """A policy as admins write it. None fields inherit from the level above.

    Setting a policy changes only the fields the spec was given (pydantic's
    ``model_fields_set``), so ``--default 1d`` keeps a quota; a field given as
    None is cleared."""

    model_config = ConfigDict(extra="forbid")

    default_retention_s: int | None = Field(default=None, gt=0, le=MAX_RETENTION_S)
    max_retention_s: int | None = Field(default=None, gt=0, le=MAX_RETENTION_S)
    allow_forever: bool = False
    quota_bytes: int | None = Field(default=None, ge=0, le=MAX_OFFSET)
    max_artifact_bytes: int | None = Field(default=None, gt=0, le=MAX_OFFSET)
    over_quota: Literal["reject", "evict"] = "reject"
    # False lets this owner store output unmasked (``OVERSPILL_REDACT=off``);
    # None inherits, and at the top redaction is on.
    redact: bool | None = None


class PolicyView(PolicySpec):
    owner: str
    updated_at: datetime | None = None
    updated_by: str | None = None


class ExpiryCounts(BaseModel):
    artifacts: int = 0
    bytes: int = 0


class PreviewOwner(BaseModel):
    owner: str
    now: ExpiryCounts = Field(default_factory=ExpiryCounts)
    within_24h: ExpiryCounts = Field(default_factory=ExpiryCounts)
    within_7d: ExpiryCounts = Field(default_factory=ExpiryCounts)


class Preview(BaseModel):
    """How many artifacts and bytes would expire if the change applied to existing ones."""

    scope: str
    owners: list[PreviewOwner]
    total: PreviewOwner
    current_total: PreviewOwner


def _view(row: RetentionPolicy | None, owner: str) -> PolicyView:
    if row is None:
        return PolicyView(owner=owner)
    return from_row(PolicyView, row, owner=owner)


def _check_owner(owner: str) -> str:
    if not owner or owner == GLOBAL or len(owner) > 200:
        raise InvalidArgument(f"invalid owner {owner!r}")
    return owner


def requested_of(row: Artifact) -> int | Forever | None:
    if row.retention_requested_s is None:
        return None
    return "forever" if row.retention_requested_s == 0 else row.retention_requested_s


class Policies:
    def __init__(self, store: StoreContext) -> None:
        self._store = store

    # -- reading ---------------------------------------------------------------------

    def get(self, owner: str = GLOBAL) -> PolicyView:
        with self._store.read() as s:
            return _view(s.get(RetentionPolicy, owner), owner)

    def list_owners(self) -> list[PolicyView]:
        with self._store.read() as s:
            rows = (
                s.execute(
                    select(RetentionPolicy)
                    .where(RetentionPolicy.owner != GLOBAL)
                    .order_by(RetentionPolicy.owner)
                )
                .scalars()
                .all()
            )
        return [_view(r, r.owner) for r in rows]

    def effective(self, owner: str) -> Policy:
        with self._store.read() as s:
            return effective_policy(s, owner, self._store.settings.default_retention_s)

    # -- changing --------------------------------------------------------------------

    def set(
        self,
        admin: Principal,
        spec: PolicySpec,
        owner: str = GLOBAL,
        *,
        apply_to_existing: bool = False,
    ) -> tuple[PolicyView, int]:
        """Store a policy; returns it and how many existing artifacts were updated."""
        if owner != GLOBAL:
            _check_owner(owner)
        if (
            spec.default_retention_s
            and spec.max_retention_s
            and spec.default_retention_s > spec.max_retention_s
        ):
            raise InvalidArgument("default_retention_s cannot exceed max_retention_s")
        now = self._store.clock.now()
        with self._store.write() as s:
            row = s.get(RetentionPolicy, owner)
            if row is None:
                row = RetentionPolicy(owner=owner, updated_at=now, updated_by=admin.name)
                s.add(row)
            for field in spec.model_fields_set:
                setattr(row, field, getattr(spec, field))
            row.updated_at = now
            row.updated_by = admin.name
            audit.record(
                s,
                now,
                admin.name,
                "policy",
                owner=None if owner == GLOBAL else owner,
                scope=owner,
                apply_to_existing=apply_to_existing,
                **spec.model_dump(include=spec.model_fields_set),
            )
        changed = self._apply(owner, now) if apply_to_existing else 0
        return self.get(owner), changed

    def delete(self, admin: Principal, owner: str) -> None:
        _check_owner(owner)
        now = self._store.clock.now()
        with self._store.write() as s:
            row = s.get(RetentionPolicy, owner)
            if row is None:
                raise NotFound(f"no retention policy for owner {owner}")
            s.delete(row)
            audit.record(s, now, admin.name, "policy_delete", owner=owner, scope=owner)

    def _apply(self, owner: str, now: datetime) -> int:
        """Recompute expiry of unpinned live artifacts under the stored policy."""
        changed = 0
        default = self._store.settings.default_retention_s
        for ids in self._batches(owner):
            with self._store.write() as s:
                rows = s.execute(select(Artifact).where(Artifact.id.in_(ids))).scalars().all()
                policies: dict[str, Policy] = {}
                for row in rows:
                    if row.pinned_at is not None or row.state in GONE_STATES:
                        continue
                    policy = policies.get(row.owner) or effective_policy(s, row.owner, default)
                    policies[row.owner] = policy
                    r = resolve(policy, row.created_at, requested_of(row))
                    if (r.expires_at, r.source, r.clamped) != (
                        row.expires_at,
                        row.retention_source,
                        row.retention_clamped,
                    ):
                        row.expires_at = r.expires_at
                        row.retention_source = r.source
                        row.retention_clamped = r.clamped
                        row.updated_at = now
                        changed += 1
        return changed

    def _batches(self, owner: str) -> Iterator[list[str]]:
        """Ids of live, unpinned artifacts of ``owner`` (or all owners), in batches."""
        last = ""
        while True:
            with self._store.read() as s:
                q = select(Artifact.id).where(
                    Artifact.id > last,
                    Artifact.pinned_at.is_(None),
                    Artifact.state.not_in(GONE_STATES),
                )
                if owner != GLOBAL:
                    q = q.where(Artifact.owner == owner)
                ids = list(s.execute(q.order_by(Artifact.id).limit(_BATCH)).scalars())
            if not ids:
                return
            yield ids
            last = ids[-1]

    # -- preview ---------------------------------------------------------------------

    def preview(self, spec: PolicySpec, owner: str = GLOBAL) -> Preview:
        """What would expire now / within 24 h / within 7 d if ``spec`` were set for
        ``owner`` (or globally) and applied to existing artifacts. Changes nothing."""
        if owner != GLOBAL:
            _check_owner(owner)
        now = self._store.clock.now()
        default = self._store.settings.default_retention_s
        proposed: dict[str, PreviewOwner] = defaultdict(lambda: PreviewOwner(owner=""))
        current: dict[str, PreviewOwner] = defaultdict(lambda: PreviewOwner(owner=""))
        policies: dict[str, Policy] = {}
        for ids in self._batches(owner):
            with self._store.read() as s:
                rows = s.execute(select(Artifact).where(Artifact.id.in_(ids))).scalars().all()
                for row in rows:
                    if row.owner not in policies:
                        policies[row.owner] = _with_change(s, row.owner, owner, spec, default)
                    r = resolve(policies[row.owner], row.created_at, requested_of(row))
                    _bucket(proposed, row, r.expires_at, now)
                    _bucket(current, row, row.expires_at, now)
        owners = sorted(proposed.values(), key=lambda p: p.owner)
        return Preview(
            scope=owner,
            owners=owners,
            total=_sum(owners, "*"),
            current_total=_sum(list(current.values()), "*"),
        )


def _with_change(
    s: Session, artifact_owner: str, scope: str, spec: PolicySpec, default: int
) -> Policy:
    """The effective policy for ``artifact_owner`` if ``spec`` were stored at ``scope``."""
    glob = s.get(RetentionPolicy, GLOBAL)
    own = s.get(RetentionPolicy, artifact_owner)
    stored = s.get(RetentionPolicy, scope)
    values = {f: getattr(stored, f) for f in PolicySpec.model_fields} if stored else {}
    values.update(spec.model_dump(include=spec.model_fields_set))
    as_row = RetentionPolicy(owner=scope, **PolicySpec(**values).model_dump())
    if scope == GLOBAL:
        glob = as_row
    elif scope == artifact_owner:
        own = as_row
    return merge_policy(glob, own, default)


def _bucket(
    acc: dict[str, PreviewOwner], row: Artifact, expires: datetime | None, now: datetime
) -> None:
    entry = acc[row.owner]
    entry.owner = row.owner
    if expires is None or row.pinned_at is not None:
        return
    for limit, counts in (
        (now, entry.now),
        (now + timedelta(hours=24), entry.within_24h),
        (now + timedelta(days=7), entry.within_7d),
    ):
        if expires <= limit:
            counts.artifacts += 1
            counts.bytes += row.size_bytes


def _sum(rows: list[PreviewOwner], name: str) -> PreviewOwner:
    total = PreviewOwner(owner=name)
    for r in rows:
        for attr in ("now", "within_24h", "within_7d"):
            t, v = getattr(total, attr), getattr(r, attr)
            t.artifacts += v.artifacts
            t.bytes += v.bytes
    return total
