"""What every part of the store shares, and nothing else: its settings, the
database unit, the blob backend and the clock.

The parts (catalog, ingest, reading, policies, quotas, sweeper) are built on
this, never on the store itself, so dependencies point one way: the store
composes the parts, and no part imports the store.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from sqlalchemy.orm import Session

from overspill.artifacts.blobs.base import BlobStore
from overspill.artifacts.clock import Clock
from overspill.artifacts.config import StoreSettings
from overspill.artifacts.db.unit import Database


class StoreContext:
    def __init__(
        self, settings: StoreSettings, db: Database, blobs: BlobStore, clock: Clock
    ) -> None:
        self.settings = settings
        self.db = db
        self.blobs = blobs
        self.clock = clock  # replaceable (tests move time): parts read it per call

    def read(self) -> AbstractContextManager[Session]:
        return self.db.read()

    def write(self) -> AbstractContextManager[Session]:
        return self.db.write()


class Part:
    """A part of the store: the shared context under the names its code uses."""

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx

    @property
    def settings(self) -> StoreSettings:
        return self._ctx.settings

    @property
    def blobs(self) -> BlobStore:
        return self._ctx.blobs

    @property
    def clock(self) -> Clock:
        return self._ctx.clock

    def _read(self) -> AbstractContextManager[Session]:
        return self._ctx.read()

    def _write(self) -> AbstractContextManager[Session]:
        return self._ctx.write()
