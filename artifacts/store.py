"""ArtifactStore: the one Python API over metadata (SQL) and bytes (blob backend).

A thin facade: it builds the shared context and composes the parts, each in its
own module with one job -- the catalog (metadata and lifecycle), ingest
(creating, writers, uploads), publishing (the segment transactions), reading
(bounded windows and grep), policies, quotas, the sweeper and tokens. An
operation the façade only hands on is one line (``_Forward``) naming the part
that does it, and has that part's signature; a method here does more.
Every one takes the acting :class:`Principal`; a non-admin asking for another
owner's artifact gets exactly the NotFound a missing id gets. Expiry is checked
on every read, whatever the sweeper has done.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from overspill.artifacts.blobs.base import BlobStore
from overspill.artifacts.blobs.registry import open_blob_store
from overspill.artifacts.catalog import audit
from overspill.artifacts.catalog.catalog import Catalog
from overspill.artifacts.catalog.policies import Policies
from overspill.artifacts.catalog.quotas import Quotas
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
    SearchQuery,
)
from overspill.artifacts.reading.reading import Reader
from overspill.artifacts.records import (
    ArtifactInfo,
    Principal,
    SearchResult,
)
from overspill.artifacts.writing.compaction import Compactor
from overspill.artifacts.writing.ingest import Ingest
from overspill.artifacts.writing.publishing import Publisher
from overspill.artifacts.writing.writer import ArtifactWriter
from overspill.artifacts.writing.writes import NewArtifact

LOW_DISK_BYTES = 16 * 1024 * 1024  # below this, /readyz says not ready

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _Forward(Generic[_P, _R]):
    """``store.NAME`` is ``store.PART.NAME``: an operation the façade only hands to
    the part that does it is named once, with that part's signature and docstring,
    instead of a method that repeats both."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, _P], _R]) -> None:
        self._part = part
        self._name = method.__name__
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, store: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, store: object, owner: type[Any]) -> Callable[_P, _R]: ...
    def __get__(self, store: object | None, owner: type[Any]) -> Self | Callable[_P, _R]:
        if store is None:
            return self
        bound: Callable[_P, _R] = getattr(getattr(store, self._part), self._name)
        return bound


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

    attach_writer = _Forward("ingest", Ingest.attach_writer)
    end_append = _Forward("ingest", Ingest.end_append)
    append = _Forward("ingest", Ingest.append)
    complete = _Forward("ingest", Ingest.complete)

    # -- metadata and lifecycle (catalog) -----------------------------------------------

    get = _Forward("catalog", Catalog.get)
    list = _Forward("catalog", Catalog.list)
    delete = _Forward("catalog", Catalog.delete)
    pin = _Forward("catalog", Catalog.pin)
    unpin = _Forward("catalog", Catalog.unpin)
    set_retention = _Forward("catalog", Catalog.set_retention)
    usage = _Forward("catalog", Catalog.usage)
    purge_bytes = _Forward("catalog", Catalog.purge_bytes)

    # -- bounded reads (reading) --------------------------------------------------------

    open_content = _Forward("reader", Reader.open_content)
    read_bytes = _Forward("reader", Reader.read_bytes)
    text = _Forward("reader", Reader.text)
    lines = _Forward("reader", Reader.lines)
    tail = _Forward("reader", Reader.tail)
    grep_lines = _Forward("reader", Reader.grep_lines)
    grep = _Forward("reader", Reader.grep)

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

    reap_stale_writers = _Forward("sweeper", Sweeper.reap_stale_writers)

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
