"""Per-owner usage counters, kept exact by updating them in the same transaction
as the change they count (an atomic upsert on both SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from overspill.artifacts.db.models import OwnerUsage


def bump_usage(s: Session, owner: str, bytes_delta: int, count_delta: int) -> None:
    # Each dialect's insert loads with its engine's first write, not with the
    # store: a SQLite home never pays for PostgreSQL's (~20 ms, and its memory).
    insert: Any
    if s.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    stmt = insert(OwnerUsage).values(
        owner=owner, bytes_stored=max(bytes_delta, 0), artifact_count=max(count_delta, 0)
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[OwnerUsage.owner],
        set_={
            "bytes_stored": OwnerUsage.bytes_stored + bytes_delta,
            "artifact_count": OwnerUsage.artifact_count + count_delta,
        },
    )
    s.execute(stmt)


def charged(stored_bytes: int | None, size_bytes: int) -> int:
    """What an artifact counts in its owner's usage: the bytes its own blobs hold
    once compacted (compressed; frames shared with another of the owner's
    artifacts count there), else the bytes it stores as written."""
    return size_bytes if stored_bytes is None else stored_bytes
