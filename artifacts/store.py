"""ArtifactStore: the one Python API over metadata (SQL) and bytes (blob backend).

A thin facade: it builds the shared context and composes the parts, each in its
own module with one job -- the catalog (metadata and lifecycle), ingest
(creating, writers, uploads), publishing (the segment transactions), reading
(bounded windows and grep), policies, quotas, the sweeper and tokens. Each
method below says which part does the work and has that part's signature.
Every one takes the acting :class:`Principal`; a non-admin asking for another
owner's artifact gets exactly the NotFound a missing id gets. Expiry is checked
on every read, whatever the sweeper has done.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from overspill.artifacts.blobs.base import BlobStore
from overspill.artifacts.blobs.registry import open_blob_store
from overspill.artifacts.catalog import audit
from overspill.artifacts.catalog.catalog import Catalog
from overspill.artifacts.catalog.policies import Policies
from overspill.artifacts.catalog.quotas import Quotas
from overspill.artifacts.catalog.retention import Forever
from overspill.artifacts.catalog.sweeper import Sweeper
from overspill.artifacts.catalog.tokens import TokenStore
from overspill.artifacts.clock import Clock, SystemClock
from overspill.artifacts.config import StoreSettings
from overspill.artifacts.context import StoreContext
from overspill.artifacts.db.engine import (
    SCHEMA_HEAD,
    Timeouts,
    check_database,
    ensure_schema,
    make_engine,
    schema_revision,
)
from overspill.artifacts.db.unit import Database
from overspill.artifacts.errors import ConfigurationError, InvalidArgument, StorageUnavailable
from overspill.artifacts.home import ensure_home
from overspill.artifacts.ledger.ledger import Ledger, ReadCount, Stats
from overspill.artifacts.queries import (
    GrepLinesQuery,
    GrepQuery,
    LineQuery,
    ListQuery,
    SearchQuery,
    TailQuery,
    TextQuery,
)
from overspill.artifacts.reading.reading import Reader
from overspill.artifacts.records import (
    ArtifactInfo,
    ArtifactPage,
    GrepResult,
    LineWindow,
    Principal,
    SearchResult,
    TailWindow,
    TextWindow,
)
from overspill.artifacts.stored.content import Content
from overspill.artifacts.writing.compaction import Compactor
from overspill.artifacts.writing.ingest import Ingest
from overspill.artifacts.writing.publishing import Publisher
from overspill.artifacts.writing.writer import ArtifactWriter
from overspill.artifacts.writing.writes import NewArtifact

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
        self.ledger = Ledger(self.ctx)
        self.reader = Reader(self.ctx, self.catalog, self.ledger)
        self.publisher = Publisher(self.ctx, self.quotas, self.sweeper)
        self.compactor = Compactor(self.ctx)
        self.ingest = Ingest(self.ctx, self.quotas, self.catalog, self.reader, self.publisher)

    # -- creating and writing (ingest) --------------------------------------------------

    def create(
        self, principal: Principal, new: NewArtifact | None = None, **fields: Any
    ) -> ArtifactInfo:
        """An empty ``writing`` artifact for an HTTP upload: ``new``, or its fields
        as keywords (``name=..., session_id=...``)."""
        return self.ingest.create(principal, new or NewArtifact(**fields))

    def open_writer(
        self, principal: Principal, new: NewArtifact | None = None, **fields: Any
    ) -> ArtifactWriter:
        """A new artifact and a streaming writer holding its lease (``new``, or its
        fields as keywords; never for another owner)."""
        return self.ingest.open_writer(principal, new or NewArtifact(**fields))

    def attach_writer(self, principal: Principal, artifact_id: str, offset: int) -> ArtifactWriter:
        return self.ingest.attach_writer(principal, artifact_id, offset)

    def end_append(self, writer: ArtifactWriter, offset: int) -> None:
        self.ingest.end_append(writer, offset)

    def append(
        self, principal: Principal, artifact_id: str, offset: int, chunks: Iterator[bytes]
    ) -> ArtifactInfo:
        return self.ingest.append(principal, artifact_id, offset, chunks)

    def complete(
        self,
        principal: Principal,
        artifact_id: str,
        *,
        total_bytes: int | None = None,
        source_update: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> ArtifactInfo:
        return self.ingest.complete(
            principal,
            artifact_id,
            total_bytes=total_bytes,
            source_update=source_update,
            error=error,
        )

    # -- metadata and lifecycle (catalog) -----------------------------------------------

    def get(self, principal: Principal, artifact_id: str) -> ArtifactInfo:
        return self.catalog.get(principal, artifact_id)

    def list(
        self, principal: Principal, query: ListQuery | None = None, *, with_total: bool = False
    ) -> ArtifactPage:
        return self.catalog.list(principal, query, with_total=with_total)

    def delete(
        self, principal: Principal, artifact_id: str, *, reason: str = "deleted"
    ) -> ArtifactInfo:
        return self.catalog.delete(principal, artifact_id, reason=reason)

    def pin(
        self, principal: Principal, artifact_id: str, reason: str | None = None
    ) -> ArtifactInfo:
        return self.catalog.pin(principal, artifact_id, reason)

    def unpin(self, principal: Principal, artifact_id: str) -> ArtifactInfo:
        return self.catalog.unpin(principal, artifact_id)

    def set_retention(
        self, principal: Principal, artifact_id: str, retention: int | Forever | None
    ) -> ArtifactInfo:
        return self.catalog.set_retention(principal, artifact_id, retention)

    def usage(self, principal: Principal) -> Sequence[dict[str, Any]]:
        return self.catalog.usage(principal)

    def purge_bytes(self, artifact_id: str) -> int:
        return self.catalog.purge_bytes(artifact_id)

    # -- bounded reads (reading) --------------------------------------------------------

    def open_content(self, principal: Principal, artifact_id: str) -> tuple[ArtifactInfo, Content]:
        return self.reader.open_content(principal, artifact_id)

    def read_bytes(self, principal: Principal, artifact_id: str, start: int, end: int) -> bytes:
        return self.reader.read_bytes(principal, artifact_id, start, end)

    def text(
        self, principal: Principal, artifact_id: str, query: TextQuery | None = None
    ) -> TextWindow:
        return self.reader.text(principal, artifact_id, query)

    def lines(self, principal: Principal, artifact_id: str, query: LineQuery) -> LineWindow:
        return self.reader.lines(principal, artifact_id, query)

    def tail(self, principal: Principal, artifact_id: str, query: TailQuery) -> TailWindow:
        return self.reader.tail(principal, artifact_id, query)

    def grep_lines(
        self, principal: Principal, artifact_id: str, query: GrepLinesQuery
    ) -> tuple[ArtifactInfo, Iterator[bytes]]:
        return self.reader.grep_lines(principal, artifact_id, query)

    def grep(
        self,
        principal: Principal,
        artifact_id: str,
        query: GrepQuery,
        *,
        max_bytes: int | None = None,
        scan_bytes: int = 256 * 1024 * 1024,
    ) -> GrepResult:
        return self.reader.grep(
            principal, artifact_id, query, max_bytes=max_bytes, scan_bytes=scan_bytes
        )

    # -- the context ledger (ledger) ---------------------------------------------------

    def stats(self, principal: Principal, **query: Any) -> Stats:
        """What outputs kept out of models' contexts and what was read back."""
        return self.ledger.stats(principal, **query)

    def reads_of(self, principal: Principal, artifact_id: str) -> Sequence[ReadCount]:
        """An artifact's read-backs (another owner's is as missing as a missing one)."""
        self.catalog.get(principal, artifact_id)
        return self.ledger.reads_of(artifact_id)

    def search(self, principal: Principal, query: SearchQuery) -> SearchResult:
        """One pattern across the principal's own outputs (see ``artifacts/reading/search.py``)."""
        from overspill.artifacts.reading.search import search

        return search(self.catalog, self.reader, principal, query)

    # -- cleanup (sweeper) --------------------------------------------------------------

    def reap_stale_writers(self) -> int:
        return self.sweeper.reap_stale_writers()

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
            ensure_home(settings.home)
        blobs = open_blob_store(
            settings.resolved_blob_url, s3_endpoint_url=settings.s3_endpoint_url
        )
        engine = make_engine(
            settings.resolved_database_url,
            home=settings.home,
            timeouts=Timeouts(
                settings.db_statement_timeout_s,
                settings.db_lock_timeout_s,
                settings.db_pool_timeout_s,
            ),
        )
        if settings.is_embedded_database:
            ensure_schema(engine)
        elif schema_revision(engine) != SCHEMA_HEAD:
            raise ConfigurationError(
                "database schema is not current: run `overspill db upgrade` first"
            )
        return cls(settings, engine, blobs, clock)

    def close(self) -> None:
        self.reader.close()
        self.ledger.close()
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
