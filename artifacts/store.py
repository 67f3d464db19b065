"""ArtifactStore: the one Python API over metadata (SQL) and bytes (blob backend).

A thin facade: it builds the shared context and composes the parts, each in its
own module with one job -- the catalog (metadata and lifecycle), ingest (writers,
uploads, publishing), reading (bounded windows and grep), policies, quotas, the
sweeper and tokens. Every public method takes the acting :class:`Principal`; a
non-admin asking for another owner's artifact gets exactly the NotFound a
missing id gets. Expiry is checked on every read, whatever the sweeper has done.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from overspill.artifacts import audit
from overspill.artifacts.blobs.base import BlobStore
from overspill.artifacts.blobs.registry import open_blob_store
from overspill.artifacts.catalog import Catalog
from overspill.artifacts.clock import Clock, SystemClock
from overspill.artifacts.config import StoreSettings
from overspill.artifacts.context import StoreContext
from overspill.artifacts.db.engine import (
    SCHEMA_HEAD,
    check_database,
    ensure_schema,
    make_engine,
    schema_revision,
)
from overspill.artifacts.db.unit import Database
from overspill.artifacts.errors import ConfigurationError, InvalidArgument, StorageUnavailable
from overspill.artifacts.ingest import Ingest
from overspill.artifacts.policies import Policies
from overspill.artifacts.quotas import Quotas
from overspill.artifacts.reading import Reader
from overspill.artifacts.sweeper import Sweeper
from overspill.artifacts.tokens import TokenStore

LOW_DISK_BYTES = 16 * 1024 * 1024  # below this, /readyz says not ready


class ArtifactStore:
    def __init__(
        self,
        settings: StoreSettings,
        engine: Engine,
        blobs: BlobStore,
        clock: Clock | None = None,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.blobs = blobs
        self.db = Database(engine)
        self._sessions = self.db.sessions
        self.ctx = StoreContext(settings, self.db, blobs, clock or SystemClock())
        self.quotas = Quotas(self.ctx)
        self.policies = Policies(self.ctx)
        self.sweeper = Sweeper(self.ctx)
        self.tokens = TokenStore(self.db, self.ctx.clock)
        self.catalog = Catalog(self.ctx, self.sweeper)
        self.reader = Reader(self.ctx, self.catalog)
        self.ingest = Ingest(self.ctx, self.quotas, self.catalog, self.reader, self.sweeper)
        # The public API: each method is defined once, in its part.
        self.create = self.ingest.create
        self.open_writer = self.ingest.open_writer
        self.attach_writer = self.ingest.attach_writer
        self.end_append = self.ingest.end_append
        self.append = self.ingest.append
        self.complete = self.ingest.complete
        self.get = self.catalog.get
        self.list = self.catalog.list
        self.delete = self.catalog.delete
        self.pin = self.catalog.pin
        self.unpin = self.catalog.unpin
        self.set_retention = self.catalog.set_retention
        self.usage = self.catalog.usage
        self.purge_bytes = self.catalog.purge_bytes
        self.open_content = self.reader.open_content
        self.read_bytes = self.reader.read_bytes
        self.text = self.reader.text
        self.lines = self.reader.lines
        self.tail = self.reader.tail
        self.grep = self.reader.grep
        self.reap_stale_writers = self.sweeper.reap_stale_writers

    @property
    def clock(self) -> Clock:
        return self.ctx.clock

    @clock.setter
    def clock(self, value: Clock) -> None:
        self.ctx.clock = value

    @classmethod
    def open(cls, settings: StoreSettings, clock: Clock | None = None) -> ArtifactStore:
        """Build the store from settings. The embedded SQLite default migrates itself;
        a PostgreSQL deployment is migrated explicitly with ``overspill db upgrade``."""
        if settings.database_url is None or settings.blob_url is None:
            _private_dir(settings.home)
        blobs = open_blob_store(
            settings.resolved_blob_url, s3_endpoint_url=settings.s3_endpoint_url
        )
        engine = make_engine(settings.resolved_database_url)
        if settings.is_embedded_database:
            ensure_schema(engine)
        elif schema_revision(engine) != SCHEMA_HEAD:
            raise ConfigurationError(
                "database schema is not current: run `overspill db upgrade` first"
            )
        return cls(settings, engine, blobs, clock)

    def close(self) -> None:
        self.engine.dispose()

    def _read(self) -> AbstractContextManager[Session]:
        return self.db.read()

    def _write(self) -> AbstractContextManager[Session]:
        return self.db.write()

    def audit_log(
        self,
        *,
        artifact_id: str | None = None,
        owner: str | None = None,
        action: str | None = None,
        before_id: int | None = None,
        limit: int = 100,
    ) -> Sequence[audit.AuditEntry]:
        if limit < 1 or limit > 1000:
            raise InvalidArgument("limit must be between 1 and 1000")
        with self._read() as s:
            return audit.read(
                s,
                artifact_id=artifact_id,
                owner=owner,
                action=action,
                before_id=before_id,
                limit=limit,
            )

    def check(self) -> None:
        """Raise StorageUnavailable if the database or the blob backend is unusable,
        or a local disk they live on is (nearly) full: a store that will fail the
        next write is not ready, whatever its connections say."""
        check_database(self.engine)
        self.blobs.check()
        paths = [getattr(self.blobs, "root", None)]
        if self.engine.dialect.name == "sqlite" and self.engine.url.database:
            paths.append(Path(self.engine.url.database).parent)
        for path in paths:
            if path is None:
                continue
            try:
                free = shutil.disk_usage(path).free
            except OSError:
                continue
            if free < LOW_DISK_BYTES:
                raise StorageUnavailable(f"low disk: {free} bytes free under {path}")


def _private_dir(path: Path) -> None:
    """The data directory, 0700: made so, or tightened if it is ours and looser
    (a home created by hand, or by an older release). One not ours is refused."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.lstat()
    except OSError as exc:
        raise StorageUnavailable(f"cannot create data directory {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise ConfigurationError(
            f"data directory {path} is not a directory owned by this user; "
            "set OVERSPILL_HOME to one that is"
        )
    if st.st_mode & 0o077:
        try:
            path.chmod(0o700)
        except OSError as exc:
            raise ConfigurationError(
                f"data directory {path} is readable by others and cannot be made private: "
                f"{exc.strerror}"
            ) from None
