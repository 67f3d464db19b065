"""Retention policy resolution: which level decides an artifact's expiry, and why.

Levels, most specific first: the artifact's own request, the owner's policy, the
global policy, the server default. A request above the ceiling that applies is
clamped to it, and the clamp is recorded (never silent). "Forever" is honoured only
where an admin allowed it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy.orm import Session

from overspill.artifacts.db.models import RetentionPolicy
from overspill.artifacts.errors import InvalidArgument

GLOBAL = "*"
MAX_RETENTION_S = 100 * 365 * 86400  # beyond this, use "forever"
Forever = Literal["forever"]


@dataclass(frozen=True)
class Policy:
    """The policy in force for one owner, merged from its row and the global row."""

    default_s: int
    default_source: str
    max_s: int | None
    max_source: str | None
    allow_forever: bool
    quota_bytes: int | None
    max_artifact_bytes: int | None
    over_quota: str
    redact: bool = True  # False only where an admin's policy allows unmasked output


@dataclass(frozen=True)
class Resolved:
    expires_at: datetime | None
    seconds: int | None
    source: str
    clamped: bool
    requested_s: int | None


def effective_policy(s: Session, owner: str, server_default_s: int) -> Policy:
    glob = s.get(RetentionPolicy, GLOBAL)
    own = s.get(RetentionPolicy, owner) if owner != GLOBAL else None
    return merge_policy(glob, own, server_default_s)


def merge_policy(
    glob: RetentionPolicy | None, own: RetentionPolicy | None, server_default_s: int
) -> Policy:
    """The owner's row over the global row over the server default, field by field."""
    if own is not None and own.default_retention_s is not None:
        default, dsrc = own.default_retention_s, "owner default"
    elif glob is not None and glob.default_retention_s is not None:
        default, dsrc = glob.default_retention_s, "global default"
    else:
        default, dsrc = server_default_s, "server default"
    max_s: int | None = None
    msrc: str | None = None
    if own is not None and own.max_retention_s is not None:
        max_s, msrc = own.max_retention_s, "owner ceiling"
    elif glob is not None and glob.max_retention_s is not None:
        max_s, msrc = glob.max_retention_s, "global ceiling"
    if max_s is not None and default > max_s:
        default, dsrc = max_s, msrc or dsrc
    quota_row = own if own is not None and own.quota_bytes is not None else glob
    return Policy(
        default_s=default,
        default_source=dsrc,
        max_s=max_s,
        max_source=msrc,
        allow_forever=bool((glob and glob.allow_forever) or (own and own.allow_forever)),
        # An owner row that leaves the quota unset inherits it (and what to do over
        # it) from the global row: a retention-only row must not lift a quota.
        quota_bytes=quota_row.quota_bytes if quota_row is not None else None,
        max_artifact_bytes=(
            own.max_artifact_bytes
            if own is not None and own.max_artifact_bytes is not None
            else (glob.max_artifact_bytes if glob else None)
        ),
        over_quota=quota_row.over_quota if quota_row is not None else "reject",
        redact=next(
            (row.redact for row in (own, glob) if row is not None and row.redact is not None),
            True,
        ),
    )


def resolve(
    policy: Policy,
    created_at: datetime,
    requested: int | Forever | None,
    had: datetime | None = None,
) -> Resolved:
    """Where ``requested`` puts the expiry under ``policy``. ``had`` is the expiry
    the artifact already has: a refused "forever" asks for as long as allowed, so it
    never shortens it."""
    if requested is None:
        return Resolved(
            created_at + timedelta(seconds=policy.default_s),
            policy.default_s,
            policy.default_source,
            False,
            None,
        )
    if requested == "forever":
        if policy.allow_forever:
            return Resolved(None, None, "requested (forever)", False, None)
        cap = policy.max_s if policy.max_s is not None else policy.default_s
        src = policy.max_source or policy.default_source
        until = created_at + timedelta(seconds=cap)
        if policy.max_s is None and had is not None and had > until:
            # No ceiling: the longer expiry it already had is as long as allowed.
            kept = int((had - created_at).total_seconds())
            return Resolved(had, kept, "kept (forever not allowed)", True, None)
        return Resolved(until, cap, f"{src} (forever not allowed)", True, None)
    if policy.max_s is not None and requested > policy.max_s:
        return Resolved(
            created_at + timedelta(seconds=policy.max_s),
            policy.max_s,
            policy.max_source or "ceiling",
            True,
            requested,
        )
    return Resolved(
        created_at + timedelta(seconds=requested), requested, "requested", False, requested
    )


def check_retention(value: object) -> None:
    """A requested retention: seconds within the limit, 'forever', or None."""
    if value is None or value == "forever":
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_RETENTION_S:
        raise InvalidArgument(
            f"retention must be 1 to {MAX_RETENTION_S} seconds or 'forever', got {value!r}"
        )
