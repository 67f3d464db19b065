"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-12-02

The previous release keeps running while this applies: add columns nullable or
with server defaults, never rename or drop in the same release that stops using.
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None


def upgrade() -> None:

    op.create_table(
        "api_tokens",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("token_sha256", sa.String(length=64), nullable=False),
        sa.Column("principal", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_sha256"),
    )
    op.create_table(
        "artifacts",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("owner", sa.String(length=200), nullable=False),
        sa.Column("session_id", sa.String(length=200), nullable=True),
        sa.Column("kind", sa.String(length=50), nullable=False),
        sa.Column("name", sa.String(length=500), nullable=True),
        sa.Column("media_type", sa.String(length=200), nullable=False),
        sa.Column("source", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("total_bytes", sa.BigInteger(), nullable=False),
        sa.Column("max_bytes", sa.BigInteger(), nullable=False),
        sa.Column("line_count", sa.BigInteger(), nullable=False),
        sa.Column("segment_count", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("retention_requested_s", sa.BigInteger(), nullable=True),
        sa.Column("retention_source", sa.String(length=50), nullable=True),
        sa.Column("retention_clamped", sa.Boolean(), nullable=False),
        sa.Column("pinned_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("pinned_by", sa.String(length=200), nullable=True),
        sa.Column("pin_reason", sa.Text(), nullable=True),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("deleted_by", sa.String(length=200), nullable=True),
        sa.Column("delete_reason", sa.String(length=50), nullable=True),
        sa.Column("purged_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_token", sa.String(length=64), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_artifacts_created", "artifacts", ["created_at", "id"], unique=False)
    op.create_index(
        "ix_artifacts_owner_created", "artifacts", ["owner", "created_at", "id"], unique=False
    )
    op.create_index(
        "ix_artifacts_owner_size", "artifacts", ["owner", "size_bytes", "id"], unique=False
    )
    op.create_index("ix_artifacts_session", "artifacts", ["owner", "session_id"], unique=False)
    op.create_index("ix_artifacts_size", "artifacts", ["size_bytes", "id"], unique=False)
    op.create_index(
        "ix_artifacts_state_expires", "artifacts", ["state", "expires_at"], unique=False
    )
    op.create_index(
        "ix_artifacts_state_lease", "artifacts", ["state", "lease_expires_at"], unique=False
    )

    op.create_table(
        "audit_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("action", sa.String(length=50), nullable=False),
        sa.Column("artifact_id", sa.String(length=32), nullable=True),
        sa.Column("owner", sa.String(length=200), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_audit_artifact", "audit_events", ["artifact_id"], unique=False)
    op.create_index("ix_audit_at", "audit_events", ["at"], unique=False)

    op.create_table(
        "owner_usage",
        sa.Column("owner", sa.String(length=200), nullable=False),
        sa.Column("bytes_stored", sa.BigInteger(), nullable=False),
        sa.Column("artifact_count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("owner"),
    )
    op.create_table(
        "retention_policies",
        sa.Column("owner", sa.String(length=200), nullable=False),
        sa.Column("default_retention_s", sa.BigInteger(), nullable=True),
        sa.Column("max_retention_s", sa.BigInteger(), nullable=True),
        sa.Column("allow_forever", sa.Boolean(), nullable=False),
        sa.Column("quota_bytes", sa.BigInteger(), nullable=True),
        sa.Column("max_artifact_bytes", sa.BigInteger(), nullable=True),
        sa.Column("over_quota", sa.String(length=20), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("owner"),
    )
    op.create_table(
        "segments",
        sa.Column("artifact_id", sa.String(length=32), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("offset", sa.BigInteger(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("blob_key", sa.String(length=200), nullable=False),
        sa.Column("line_offset", sa.BigInteger(), nullable=False),
        sa.Column("newlines", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["artifact_id"], ["artifacts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("artifact_id", "seq"),
        sa.UniqueConstraint("artifact_id", "offset", name="uq_segments_offset"),
    )


def downgrade() -> None:

    op.drop_table("segments")
    op.drop_table("retention_policies")
    op.drop_table("owner_usage")
    op.drop_index("ix_audit_at", table_name="audit_events")
    op.drop_index("ix_audit_artifact", table_name="audit_events")

    op.drop_table("audit_events")
    op.drop_index("ix_artifacts_state_lease", table_name="artifacts")
    op.drop_index("ix_artifacts_state_expires", table_name="artifacts")
    op.drop_index("ix_artifacts_size", table_name="artifacts")
    op.drop_index("ix_artifacts_session", table_name="artifacts")
    op.drop_index("ix_artifacts_owner_size", table_name="artifacts")
    op.drop_index("ix_artifacts_owner_created", table_name="artifacts")
    op.drop_index("ix_artifacts_created", table_name="artifacts")

    op.drop_table("artifacts")
    op.drop_table("api_tokens")
