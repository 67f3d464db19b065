"""Alembic environment and revisions for the overspill metadata schema."""
