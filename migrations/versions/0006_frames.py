"""compressed frames: codec, stored size and digest per segment, stored bytes per artifact

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06

Nullable, so the previous release keeps running while this applies: it never
compacts, and this release reads NULL as "stored as it is".
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"


def upgrade() -> None:
    with op.batch_alter_table("segments") as batch:
        batch.add_column(sa.Column("codec", sa.String(10), nullable=True))
        batch.add_column(sa.Column("stored_size", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("digest", sa.String(64), nullable=True))
        batch.create_index("ix_segments_blob_key", ["blob_key"])
        batch.create_index("ix_segments_digest", ["digest"])
    with op.batch_alter_table("artifacts") as batch:
        batch.add_column(sa.Column("stored_bytes", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("artifacts") as batch:
        batch.drop_column("stored_bytes")
    with op.batch_alter_table("segments") as batch:
        batch.drop_index("ix_segments_digest")
        batch.drop_index("ix_segments_blob_key")
        batch.drop_column("digest")
        batch.drop_column("stored_size")
        batch.drop_column("codec")
