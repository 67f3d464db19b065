"""per-owner redaction switch in retention policies

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-05

Nullable, so the previous release keeps running while this applies: it never
sets the column, and this release reads NULL as "inherit" (on, at the top).
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"


def upgrade() -> None:
    with op.batch_alter_table("retention_policies") as batch:
        batch.add_column(sa.Column("redact", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("retention_policies") as batch:
        batch.drop_column("redact")
