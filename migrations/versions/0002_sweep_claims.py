"""sweep claims on artifacts

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02

The previous release keeps running while this applies: both columns are nullable
and the old code never reads them.
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"


def upgrade() -> None:
    with op.batch_alter_table("artifacts") as batch:
        batch.add_column(sa.Column("sweep_token", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("sweep_until", sa.DateTime(timezone=True), nullable=True))
    op.create_index("ix_artifacts_state_purged", "artifacts", ["state", "purged_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_artifacts_state_purged", table_name="artifacts")
    with op.batch_alter_table("artifacts") as batch:
        batch.drop_column("sweep_until")
        batch.drop_column("sweep_token")
