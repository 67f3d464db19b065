"""Migrations produce exactly the schema the ORM models describe."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from overspill.artifacts.db.engine import make_engine
from overspill.artifacts.db.models import Base


def test_migrated_schema_matches_the_models(database_url: str) -> None:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(ctx, Base.metadata)
    engine.dispose()
    assert diff == []


def test_upgrade_is_idempotent(database_url: str) -> None:
    from sqlalchemy import inspect, text

    from overspill.artifacts.db.engine import SCHEMA_HEAD, upgrade

    engine = make_engine(database_url)
    upgrade(engine)
    with engine.connect() as conn:
        before = sorted(inspect(conn).get_table_names())
    upgrade(engine)
    with engine.connect() as conn:
        after = sorted(inspect(conn).get_table_names())
        revisions = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    engine.dispose()
    assert before == after and "artifacts" in after
    assert revisions == [SCHEMA_HEAD]


def test_schema_head_constant_matches_the_newest_migration() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from overspill.artifacts.db.engine import SCHEMA_HEAD, migrations_dir

    cfg = Config()
    cfg.set_main_option("script_location", migrations_dir())
    assert ScriptDirectory.from_config(cfg).get_heads() == [SCHEMA_HEAD]


def test_a_postgres_store_refuses_an_unmigrated_database(pg_database_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest
    from sqlalchemy import create_engine, text

    from overspill.artifacts.config import StoreSettings
    from overspill.artifacts.errors import ConfigurationError
    from overspill.artifacts.store import ArtifactStore
    from tests.conftest import PG_ADMIN_URL

    name = "overspill_unmigrated_" + tmp_path.name[-8:].replace("-", "_")
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
        with pytest.raises(ConfigurationError, match="overspill db upgrade"):
            ArtifactStore.open(StoreSettings(home=tmp_path, database_url=url))
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
