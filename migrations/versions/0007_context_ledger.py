"""the context ledger: what a model was shown of each output and what it read back

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-07

Nullable columns and a new table, so the previous release keeps running while
this applies: it never sets them, and this release reads NULL as "not an
output a model was shown".
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"


def upgrade() -> None:
    with op.batch_alter_table("artifacts") as batch:
        batch.add_column(sa.Column("shown_bytes", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("harness", sa.String(50), nullable=True))
    op.create_table(
        "read_backs",
        sa.Column(
            "artifact_id",
            sa.String(32),
            sa.ForeignKey("artifacts.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("reader", sa.String(200), primary_key=True),
        sa.Column("session_id", sa.String(200), primary_key=True),
        sa.Column("tool", sa.String(40), primary_key=True),
        sa.Column("reads", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("lines", sa.BigInteger(), nullable=False),
        sa.Column("first_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_read_backs_session", "read_backs", ["session_id", "artifact_id"])


def downgrade() -> None:
    op.drop_index("ix_read_backs_session", table_name="read_backs")
    op.drop_table("read_backs")
    with op.batch_alter_table("artifacts") as batch:
        batch.drop_column("harness")
        batch.drop_column("shown_bytes")
