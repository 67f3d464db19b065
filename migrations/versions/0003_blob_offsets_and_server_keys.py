"""segment blob offsets, server keys

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-04

The previous release keeps running while this applies: the new column is
nullable (rows without it are read by the key, as before) and the new table is
only read by this release.
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"


def upgrade() -> None:
    with op.batch_alter_table("segments") as batch:
        batch.add_column(sa.Column("blob_offset", sa.BigInteger(), nullable=True))
    op.create_table(
        "server_keys",
        sa.Column("name", sa.String(length=50), primary_key=True),
        sa.Column("secret", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("server_keys")
    with op.batch_alter_table("segments") as batch:
        batch.drop_column("blob_offset")
