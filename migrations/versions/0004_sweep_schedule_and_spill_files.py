"""sweep schedule, legacy spill files of artifacts

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-04

The previous release keeps running while this applies: the new columns are
nullable (it never sets them, and this release treats NULL as "no spill file")
and the new table is only read by this release.
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"


def upgrade() -> None:
    op.create_table(
        "maintenance",
        sa.Column("name", sa.String(length=50), primary_key=True),
        sa.Column("last_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claim_token", sa.String(length=64), nullable=True),
    )
    with op.batch_alter_table("artifacts") as batch:
        batch.add_column(sa.Column("spill_path", sa.Text(), nullable=True))
        batch.add_column(sa.Column("spill_bytes", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("artifacts") as batch:
        batch.drop_column("spill_bytes")
        batch.drop_column("spill_path")
    op.drop_table("maintenance")
