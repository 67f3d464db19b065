"""The metadata schema. Changes here go through an Alembic revision in migrations/.

Bytes never live in these tables: an artifact's content is an ordered list of
immutable blob segments (``segments``), which is what lets a reader see flushed
data while the writer is still going, on any blob backend.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.sql.elements import ColumnElement


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in and out, also on SQLite (which stores naive values)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSON()}

    @classmethod
    def equal_to(cls, **values: object) -> list[ColumnElement[bool]]:
        """``column == value`` for each value given that is not None: the filters
        a listing or a sum takes from its optional arguments, one line for all."""
        return [getattr(cls, name) == v for name, v in values.items() if v is not None]


class Artifact(Base):
    __tablename__ = "artifacts"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner: Mapped[str] = mapped_column(String(200))
    session_id: Mapped[str | None] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(50))
    name: Mapped[str | None] = mapped_column(String(500))
    media_type: Mapped[str] = mapped_column(String(200))
    source: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    state: Mapped[str] = mapped_column(String(20))
    # Bytes stored; total_bytes is what the producer offered (larger when capped).
    size_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    total_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    max_bytes: Mapped[int] = mapped_column(BigInteger)
    line_count: Mapped[int] = mapped_column(BigInteger, default=0)
    segment_count: Mapped[int] = mapped_column(Integer, default=0)
    sha256: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]
    # Retention as resolved when set: where it came from and whether it was clamped.
    expires_at: Mapped[datetime | None]
    # Seconds the producer asked for; 0 records a request for "forever".
    retention_requested_s: Mapped[int | None] = mapped_column(BigInteger)
    retention_source: Mapped[str | None] = mapped_column(String(50))
    retention_clamped: Mapped[bool] = mapped_column(Boolean, default=False)
    pinned_at: Mapped[datetime | None]
    pinned_by: Mapped[str | None] = mapped_column(String(200))
    pin_reason: Mapped[str | None] = mapped_column(Text)
    # Tombstone: once set the bytes are (or are being) removed; the row stays.
    deleted_at: Mapped[datetime | None]
    deleted_by: Mapped[str | None] = mapped_column(String(200))
    delete_reason: Mapped[str | None] = mapped_column(String(50))
    purged_at: Mapped[datetime | None]
    lease_token: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None]
    # A sweeper's claim on this row while it deletes the bytes: several sweepers
    # (several API processes) never work on the same artifact at once.
    sweep_token: Mapped[str | None] = mapped_column(String(64))
    sweep_until: Mapped[datetime | None]
    # The compatibility layer's legacy spill file of this stream, on the machine
    # of the store's own process (recorded only by a local writer): deleted with
    # the artifact's bytes, counted in its owner's usage meanwhile.
    spill_path: Mapped[str | None] = mapped_column(Text)
    spill_bytes: Mapped[int | None] = mapped_column(BigInteger)
    # Bytes this artifact's own blobs hold once compacted (frames it shares with
    # another artifact of its owner are counted there); NULL: not compacted, its
    # blobs hold size_bytes.
    stored_bytes: Mapped[int | None] = mapped_column(BigInteger)
    # The context ledger (artifacts/ledger/ledger.py): the bytes of this output a model
    # was shown inline when it was made (NULL: not an output a model was shown),
    # and the harness it was made in (its hook's name, or an agent owner's).
    shown_bytes: Mapped[int | None] = mapped_column(BigInteger)
    harness: Mapped[str | None] = mapped_column(String(50))

    __table_args__ = (
        Index("ix_artifacts_owner_created", "owner", "created_at", "id"),
        Index("ix_artifacts_owner_size", "owner", "size_bytes", "id"),
        Index("ix_artifacts_created", "created_at", "id"),
        Index("ix_artifacts_size", "size_bytes", "id"),
        Index("ix_artifacts_session", "owner", "session_id"),
        Index("ix_artifacts_state_expires", "state", "expires_at"),
        Index("ix_artifacts_state_lease", "state", "lease_expires_at"),
        Index("ix_artifacts_state_purged", "state", "purged_at"),
    )


class Segment(Base):
    """One immutable blob holding bytes [offset, offset + size) of an artifact."""

    __tablename__ = "segments"

    artifact_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("artifacts.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    offset: Mapped[int] = mapped_column(BigInteger)
    size: Mapped[int] = mapped_column(BigInteger)
    # Keys carry a random suffix so two racing appenders can never overwrite each
    # other's object; the row decides which one is part of the artifact.
    blob_key: Mapped[str] = mapped_column(String(200))
    # Newlines before this segment and inside it: a line lookup jumps to one segment.
    line_offset: Mapped[int] = mapped_column(BigInteger)
    newlines: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime]
    # Where the segment's first byte sits in its blob (segments of one publish
    # batch share a file). Null on rows from before 0003: read from the key.
    blob_offset: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # A compacted artifact's segments are frames (artifacts/stored/frames.py): ``codec``
    # "lz4" or "zstd" holds ``stored_size`` bytes at ``blob_offset`` that decode to ``size``
    # (NULL: the bytes are stored as they are). ``digest`` (sha256 of the logical
    # bytes) lets another artifact of the same owner share the frame.
    codec: Mapped[str | None] = mapped_column(String(10), nullable=True)
    stored_size: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    digest: Mapped[str | None] = mapped_column(String(64), nullable=True)

    __table_args__ = (
        UniqueConstraint("artifact_id", "offset", name="uq_segments_offset"),
        Index("ix_segments_blob_key", "blob_key"),
        Index("ix_segments_digest", "digest"),
    )


class ReadBack(Base):
    """What was read back of an output, counted per reader, conversation and tool
    (one row each, updated in place: bounded by outputs x readers x tools, never
    by reads). Counts only, never content; goes with its artifact's row."""

    __tablename__ = "read_backs"

    artifact_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("artifacts.id", ondelete="CASCADE"), primary_key=True
    )
    reader: Mapped[str] = mapped_column(String(200), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(200), primary_key=True)  # "" for none
    tool: Mapped[str] = mapped_column(String(40), primary_key=True)
    reads: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    lines: Mapped[int] = mapped_column(BigInteger, default=0)
    first_at: Mapped[datetime]
    last_at: Mapped[datetime]

    __table_args__ = (Index("ix_read_backs_session", "session_id", "artifact_id"),)


class OwnerUsage(Base):
    """Running byte and artifact counts per owner, updated with each segment commit."""

    __tablename__ = "owner_usage"

    owner: Mapped[str] = mapped_column(String(200), primary_key=True)
    bytes_stored: Mapped[int] = mapped_column(BigInteger, default=0)
    artifact_count: Mapped[int] = mapped_column(BigInteger, default=0)


class RetentionPolicy(Base):
    """Global (owner '*') or per-owner retention, quota and size-cap policy."""

    __tablename__ = "retention_policies"

    owner: Mapped[str] = mapped_column(String(200), primary_key=True)
    default_retention_s: Mapped[int | None] = mapped_column(BigInteger)
    max_retention_s: Mapped[int | None] = mapped_column(BigInteger)
    allow_forever: Mapped[bool] = mapped_column(Boolean, default=False)
    quota_bytes: Mapped[int | None] = mapped_column(BigInteger)
    max_artifact_bytes: Mapped[int | None] = mapped_column(BigInteger)
    over_quota: Mapped[str] = mapped_column(String(20), default="reject")
    # Whether output is masked before it is stored (None: inherit; on at the top).
    redact: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    updated_at: Mapped[datetime]
    updated_by: Mapped[str] = mapped_column(String(200))


class Maintenance(Base):
    """When a periodic job (the sweep) last ran, and who is running it now: a
    claim with a deadline, so one process at a time does it, and a process that
    dies mid-way loses the claim when the deadline passes."""

    __tablename__ = "maintenance"

    name: Mapped[str] = mapped_column(String(50), primary_key=True)
    last_run_at: Mapped[datetime | None]
    claimed_until: Mapped[datetime | None]
    claim_token: Mapped[str | None] = mapped_column(String(64))


class ServerKey(Base):
    """A secret the server keeps for itself (in the database, so every API process
    behind a load balancer shares it); never shown, never sent."""

    __tablename__ = "server_keys"

    name: Mapped[str] = mapped_column(String(50), primary_key=True)
    secret: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime]


class ApiToken(Base):
    __tablename__ = "api_tokens"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    principal: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(20))
    label: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime]
    created_by: Mapped[str | None] = mapped_column(String(200))
    expires_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]


class AuditEvent(Base):
    __tablename__ = "audit_events"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    at: Mapped[datetime]
    actor: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(50))
    artifact_id: Mapped[str | None] = mapped_column(String(32))
    owner: Mapped[str | None] = mapped_column(String(200))
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    __table_args__ = (
        Index("ix_audit_at", "at"),
        Index("ix_audit_artifact", "artifact_id"),
    )
