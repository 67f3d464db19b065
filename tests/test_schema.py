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


def _shape(url: str) -> dict[str, object]:
    """What a database's schema is, table by table, as the inspector reads it."""
    from sqlalchemy import inspect, text

    engine = make_engine(url)
    with engine.connect() as conn:
        ins = inspect(conn)
        shape: dict[str, object] = {}
        for table in sorted(ins.get_table_names()):
            shape[table] = {
                "columns": sorted(
                    (c["name"], str(c["type"]), c["nullable"], str(c.get("default")))
                    for c in ins.get_columns(table)
                ),
                "pk": ins.get_pk_constraint(table)["constrained_columns"],
                "indexes": sorted(
                    (i["name"], tuple(i["column_names"]), bool(i["unique"]))
                    for i in ins.get_indexes(table)
                ),
                "fks": sorted(
                    (tuple(f["constrained_columns"]), f["referred_table"])
                    for f in ins.get_foreign_keys(table)
                ),
                "unique": sorted(
                    tuple(u["column_names"]) for u in ins.get_unique_constraints(table)
                ),
            }
        shape["revision"] = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    engine.dispose()
    return shape


def test_a_fresh_sqlite_database_is_made_at_head_as_the_migrations_make_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A new SQLite home is created from the models and stamped at head, without
    Alembic; what it holds is table for table what the migrations build, and a
    later upgrade finds nothing to do."""
    import subprocess
    import sys

    from overspill.artifacts.db.engine import SCHEMA_HEAD, upgrade

    made, migrated = f"sqlite:///{tmp_path}/made.db", f"sqlite:///{tmp_path}/migrated.db"
    probe = (
        "import sys; from overspill.artifacts.db.engine import make_engine, ensure_schema; "
        f"ensure_schema(make_engine({made!r})); print('alembic' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"  # Alembic was never imported
    engine = make_engine(migrated)
    upgrade(engine)
    engine.dispose()
    assert _shape(made) == _shape(migrated)
    assert _shape(made)["revision"] == SCHEMA_HEAD
    engine = make_engine(made)
    upgrade(engine)  # nothing to do: it is at head
    engine.dispose()
    assert _shape(made) == _shape(migrated)
