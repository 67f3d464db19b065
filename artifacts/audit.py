"""The audit trail: who did what to which artifact or policy, written in the same
transaction as the change so the log and the data never disagree."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from artifacts.db.models import AuditEvent


def record(
    s: Session,
    at: datetime,
    actor: str,
    action: str,
    *,
    artifact_id: str | None = None,
    owner: str | None = None,
    **details: Any,
) -> None:
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
