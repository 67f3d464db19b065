"""Transactions, and the one place database errors become store errors.

Every service of the store (artifacts, content reads, tokens, policies, the
sweeper) opens its sessions here, so a database that is down is always a
StorageUnavailable (HTTP 503) and a value the database refuses is always an
InvalidArgument (HTTP 400), never a raw driver error and a 500. Reads never take
SQLite's write lock; writes take it up front (they read, then write).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    IntegrityError,
    OperationalError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

from overspill.artifacts.db.engine import WRITE_LOCK, first_line
from overspill.artifacts.errors import DatabaseUnavailable, InvalidArgument, StorageUnavailable

T = TypeVar("T")


class Database:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sessions = sessionmaker(engine, expire_on_commit=False)
        self._locked = sessionmaker(
            engine.execution_options(**{WRITE_LOCK: True}), expire_on_commit=False
        )

    @contextmanager
    def read(self) -> Iterator[Session]:
        with translated(), self.sessions() as s:
            yield s

    def query(self, work: Callable[[Session], T]) -> T:
        """``work`` in a read session, once more on a fresh connection when the
        first one turns out dead (the database restarted since it was pooled).

        For the reads a response makes after its first byte is sent (a long
        download pages its segment rows): a restart between two pages must not cut
        the body short while the database is up again; pool_pre_ping covers only
        the moment a connection leaves the pool."""
        try:
            with self.sessions() as s:
                return work(s)
        except DBAPIError as exc:
            if not exc.connection_invalidated and not isinstance(exc, OperationalError):
                with translated():
                    raise
        with translated(), self.sessions() as s:
            return work(s)

    @contextmanager
    def write(self) -> Iterator[Session]:
        with translated(), self._locked.begin() as s:
            yield s


@contextmanager
def translated() -> Iterator[None]:
    try:
        yield
    except IntegrityError:
        raise  # a constraint the caller relies on (a race it handles), not an outage
    except DataError as exc:  # e.g. a value out of the column's range
        raise InvalidArgument(f"the database refused a value: {first_line(exc)}") from exc
    except PoolTimeout as exc:
        raise StorageUnavailable(
            "database busy: no connection came free in time; try again shortly"
        ) from exc
    except (OperationalError, DBAPIError) as exc:
        reason = first_line(exc)
        if _busy(exc):
            raise StorageUnavailable(f"database busy: {reason}; try again shortly") from exc
        raise DatabaseUnavailable(f"database unavailable: {reason}") from exc


def _busy(exc: BaseException) -> bool:
    """A statement or lock timeout (PostgreSQL's codes 57014 and 55P03), or
    SQLite's lock: the database is up but busy."""
    code = getattr(getattr(exc, "orig", None), "sqlstate", None)
    return code in ("57014", "55P03") or "database is locked" in str(exc)
