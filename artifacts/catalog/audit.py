"""The audit trail: who did what to which artifact or policy, written in the same
transaction as the change so the log and the data never disagree."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict
from sqlalchemy import select
from sqlalchemy.orm import Session

from overspill.artifacts.db.models import AuditEvent


class AuditEntry(BaseModel):
    """One event of the log, read from its row's attributes."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    at: datetime
    actor: str
    action: str
    artifact_id: str | None
    owner: str | None
    details: Annotated[dict[str, Any], BeforeValidator(lambda v: v or {})]  # NULL: none


def read(
    s: Session,
    *,
    artifact_id: str | None = None,
    owner: str | None = None,
    action: str | None = None,
    before_id: int | None = None,
    limit: int = 100,
) -> list[AuditEntry]:
    """Newest first; ``before_id`` continues from the last id of a previous page."""
    q = select(AuditEvent)
    if artifact_id:
        q = q.where(AuditEvent.artifact_id == artifact_id)
    if owner:
        q = q.where(AuditEvent.owner == owner)
    if action:
        q = q.where(AuditEvent.action == action)
    if before_id is not None:
        q = q.where(AuditEvent.id < before_id)
    rows = s.execute(q.order_by(AuditEvent.id.desc()).limit(limit)).scalars().all()
    return [AuditEntry.model_validate(r) for r in rows]


def record(
    s: Session,
    at: datetime,
    actor: str,
    action: str,
    *,
    of: Any = None,
    artifact_id: str | None = None,
    owner: str | None = None,
    **details: Any,
) -> None:
    """One audit event. ``of`` is the artifact's row when there is one: its id
    and owner are recorded (``artifact_id`` / ``owner`` for the rest)."""
    if of is not None:
        artifact_id, owner = of.id, of.owner
    s.add(
        AuditEvent(
            at=at,
            actor=actor,
            action=action,
            artifact_id=artifact_id,
            owner=owner,
            details={k: v for k, v in details.items() if v is not None},
        )
    )
