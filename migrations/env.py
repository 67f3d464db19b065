"""Alembic environment: runs on a connection handed in by overspill, or on a URL.

Safe to run against a live deployment: on PostgreSQL it takes an advisory lock
(two API processes upgrading at once wait for each other) and short lock and
statement timeouts so a migration never stalls traffic behind a long lock queue.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine, text

from overspill.artifacts.db.models import Base

config = context.config
target_metadata = Base.metadata
_LOCK_KEY = 0x0F5E5B111  # arbitrary, stable: "overspill migrations"


def _run(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        connection.execute(text("SET LOCAL lock_timeout = '10s'"))
        connection.execute(text("SET LOCAL statement_timeout = '300s'"))
        connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("set sqlalchemy.url or run through `overspill db upgrade`")
    engine = create_engine(url)
    with engine.begin() as conn:
        _run(conn)


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run `overspill db upgrade`")
run_migrations_online()
