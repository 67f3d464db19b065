"""Which blobs segment rows still name, and the lock that makes the answer hold.

A blob (a pack of compressed frames) may be named by the rows of several
artifacts of one owner (artifacts/writing/compaction.py). Every transaction that adds
or drops a reference to a blob first locks the row of the blob's *origin* (the
artifact whose id starts its key), so "does any row still name it?" has one
answer at a time: the last one to let go of a blob is the one that sees it
unnamed and deletes it, on PostgreSQL as on SQLite.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from overspill.artifacts.db.models import Artifact, Segment

_BATCH = 500  # bound parameters per query


def lock_origins(s: Session, names: Iterable[str]) -> None:
    """Lock the rows of the artifacts whose blobs (keys, or artifact ids) are about
    to gain or lose a reference, in id order so two transactions never deadlock."""
    origins = sorted({name.split("/", 1)[0] for name in names})
    for i in range(0, len(origins), _BATCH):
        s.execute(
            select(Artifact.id).where(Artifact.id.in_(origins[i : i + _BATCH])).with_for_update()
        ).all()


def named(s: Session, keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` some segment row names."""
    found: set[str] = set()
    for i in range(0, len(keys), _BATCH):
        found.update(
            s.execute(select(Segment.blob_key).where(Segment.blob_key.in_(keys[i : i + _BATCH])))
            .scalars()
            .all()
        )
    return found
