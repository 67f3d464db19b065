"""Engines and schema upgrades for the two supported databases.

SQLite is the embedded default: WAL so readers in other processes never block the
writer, foreign keys on, and a busy timeout so concurrent writers queue instead of
failing. PostgreSQL is the scale-out choice (psycopg 3).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError
from sqlalchemy.pool import NullPool

from overspill.artifacts.errors import ConfigurationError, DatabaseUnavailable, StorageUnavailable
from overspill.artifacts.home import describe_os_error

WRITE_LOCK = "overspill_write_lock"
"""Execution option: this transaction reads then writes; lock up front on SQLite."""

SCHEMA_HEAD = "0007"
"""The newest revision in migrations/versions (a test keeps the two in step)."""


def migrations_dir() -> str:
    """Where the Alembic environment is installed (``overspill.migrations``),
    found as package data, not by counting parent directories."""
    from importlib.resources import files

    return str(files("overspill.migrations"))


class Timeouts(NamedTuple):
    """How long one query may run, wait for a lock, or wait for a connection,
    in seconds (PostgreSQL; SQLite has its own busy timeout). A slow database
    then answers 503 "busy" at once instead of holding every worker."""

    statement_s: float | None = 30.0
    lock_s: float | None = 5.0
    pool_s: float = 10.0


def make_engine(
    url: str,
    *,
    pool: bool = True,
    home: str | None = None,
    timeouts: Timeouts | None = None,
) -> Engine:
    """An engine for ``url``. A SQLite file's directory is created only inside
    ``home`` (the data directory); anywhere else it must exist already."""
    try:
        if url.startswith("sqlite"):
            engine = _sqlite_engine(url, home)
        elif url.startswith("postgresql"):
            timeouts = timeouts or Timeouts()
            options = []
            if timeouts.statement_s:
                options.append(f"-c statement_timeout={int(timeouts.statement_s * 1000)}")
            if timeouts.lock_s:
                options.append(f"-c lock_timeout={int(timeouts.lock_s * 1000)}")
            kwargs: dict[str, Any] = {
                "pool_pre_ping": True,
                "connect_args": {"options": " ".join(options)} if options else {},
            }
            if pool:
                kwargs["pool_timeout"] = timeouts.pool_s
            else:
                kwargs["poolclass"] = NullPool
            engine = create_engine(url, **kwargs)
        else:
            raise ConfigurationError(
                f"unsupported database URL {_redact(url)!r}: use sqlite:///PATH or "
                "postgresql+psycopg://USER@HOST/DB"
            )
    except ImportError:
        raise ConfigurationError(
            f"database URL {_redact(url)!r} needs the PostgreSQL driver: "
            "pip install 'overspill[postgres]'"
        ) from None
    except (ArgumentError, NoSuchModuleError) as exc:
        raise ConfigurationError(f"invalid database URL {_redact(url)!r}: {exc}") from None
    return engine


def _sqlite_engine(url: str, home: str | None) -> Engine:
    path = url.split(":///", 1)[1] if ":///" in url else ""
    if path and path != ":memory:":
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            inside = home is not None and Path(parent).is_relative_to(os.path.abspath(home))
            if not inside:
                raise ConfigurationError(
                    f"the SQLite database's directory {parent} does not exist; create it, "
                    "or fix OVERSPILL_DATABASE_URL (only directories inside OVERSPILL_HOME "
                    "are made for it)"
                )
            os.makedirs(parent, mode=0o700, exist_ok=True)
        # Private from the first byte; SQLite gives -wal/-shm the same mode.
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        except FileExistsError:
            pass
        except OSError as exc:
            raise StorageUnavailable(
                f"cannot create database file {path}: {describe_os_error(exc)}"
            ) from exc
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's BEGIN (below) decide when a transaction starts.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # Read-then-write transactions ask for IMMEDIATE: the write lock is taken up
        # front so they never fail to upgrade (SQLITE_BUSY_SNAPSHOT), and two
        # sweepers claim rows one after the other. Plain reads stay DEFERRED.
        immediate = conn.get_execution_options().get(WRITE_LOCK, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def check_database(engine: Engine) -> None:
    """Raise DatabaseUnavailable with the driver's reason if the database is unreachable."""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as exc:
        raise DatabaseUnavailable(
            f"database {engine.url.render_as_string(hide_password=True)} unreachable: "
            f"{first_line(exc)}"
        ) from None


def schema_revision(engine: Engine) -> str | None:
    """The revision the database is at, or None for an empty database."""
    check_database(engine)
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def ensure_schema(engine: Engine) -> None:
    """Upgrade only when needed, so a start on a current database skips Alembic.

    Several processes may start on a fresh home at once (agents launching
    commands in parallel); on SQLite they take turns through a lock file beside
    the database, where an unlocked race ended 1-2 of 6 with "database is
    locked". PostgreSQL migrations take an advisory lock in migrations/env.py."""
    if schema_revision(engine) == SCHEMA_HEAD:
        return
    with _sqlite_migration_lock(engine):
        if schema_revision(engine) == SCHEMA_HEAD:  # another process has done it
            return
        if not _create_at_head(engine):
            upgrade(engine)


def _create_at_head(engine: Engine) -> bool:
    """A SQLite database with no table at all gets the models' schema and is
    stamped at ``SCHEMA_HEAD`` without Alembic (``tests/test_schema.py`` holds the
    two the same). A fresh home's first server then neither imports Alembic,
    Mako and Pygments (~140 ms of the first call) nor keeps them (~14 MB of its
    idle memory). Anything else is migrated step by step (``upgrade``)."""
    if engine.dialect.name != "sqlite":
        return False
    from overspill.artifacts.db.models import Base

    with engine.begin() as conn:
        if inspect(conn).get_table_names():
            return False
        Base.metadata.create_all(conn)
        conn.execute(
            text(
                "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
                "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
            )
        )
        conn.execute(
            text("INSERT INTO alembic_version (version_num) VALUES (:v)"), {"v": SCHEMA_HEAD}
        )
    return True


@contextmanager
def _sqlite_migration_lock(engine: Engine) -> Iterator[None]:
    path = engine.url.database if engine.dialect.name == "sqlite" else None
    if not path or path == ":memory:":
        yield
        return
    import fcntl

    fd = os.open(f"{path}.migrate-lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply Alembic migrations up to ``revision`` on this engine."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", migrations_dir())
    check_database(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def first_line(exc: BaseException) -> str:
    """The driver's own first line of an error (never a URL with its password)."""
    orig = getattr(exc, "orig", None) or exc
    return str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__


def _redact(url: str) -> str:
    """The URL without its password (SQLAlchemy's own rendering); one too broken
    to parse is not echoed at all, since it could hold a password anywhere."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # any parse failure: say nothing of its text
        return "(a URL that could not be parsed)"
