"""Real backends for every test: SQLite files, a PostgreSQL database, a temp-dir blob
root, moto's S3 in-process, and moto's HTTP server for cross-process tests.

PostgreSQL cases are skipped (with the reason) only when the server is unreachable
and TEST_OVERSPILL_REQUIRE_POSTGRES is unset; CI sets it, so there they fail instead.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from overspill.artifacts.config import StoreSettings
from overspill.artifacts.db.engine import make_engine, upgrade
from overspill.artifacts.db.models import Base
from overspill.artifacts.store import ArtifactStore
from tests.helpers import (
    local_servers,
    make_bucket,
    stop_local_servers,
    store_settings,
    unavailable,
)

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than there are cores. The suite waits on real
    processes (servers, harness CLIs, Chromium) for about a third of its time;
    on 2 cores, 3 workers ran it in 6:26 where 2 took 7:10 (1,416 tests)."""
    return (os.cpu_count() or 1) + 1


ONE_STORE = {"database_url": "sqlite", "blob_url": "local"}
"""The store a ``one_store`` test runs on."""


@pytest.hookimpl(tryfirst=True)  # before the fixtures' own params are applied
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``one_store`` runs on one store, not on all four: what it
    pins (the words a model reads, a client's or a policy's behaviour) is the
    same over every store, and the store's own suites (test_store, test_api,
    test_retention, test_search, test_compaction, ...) prove the four alike.
    Its other parameters (in-process and HTTP clients) stay."""
    if metafunc.definition.get_closest_marker("one_store") is None:
        return
    for name, value in ONE_STORE.items():
        if name in metafunc.fixturenames:  # a mark, which takes precedence over params
            metafunc.definition.add_marker(pytest.mark.parametrize(name, [value], indirect=True))


@pytest.fixture(autouse=True)
def _stop_the_local_servers_a_test_started(tmp_path: Path) -> Iterator[None]:
    """A verb starts a local server in its home; the test that made the home
    stops it (a server would otherwise live on for its idle period)."""
    yield
    stop_local_servers(str(tmp_path))


@pytest.fixture(scope="session", autouse=True)
def _the_suite_leaves_no_server_running(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    yield
    base = str(tmp_path_factory.getbasetemp())
    left = local_servers(base)
    stop_local_servers(base)
    assert not left, f"local servers left running after the suite: {left}"


PG_ADMIN_URL = os.environ.get(
    "TEST_OVERSPILL_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


def _pg_reason() -> str | None:
    try:
        eng = create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 3})
        with eng.connect() as conn:
            conn.execute(text("SELECT 1"))
        eng.dispose()
        return None
    except Exception as exc:  # report any reason the server cannot be used
        return f"PostgreSQL unreachable at {PG_ADMIN_URL}: {str(exc).splitlines()[0]}"


@pytest.fixture(scope="session")
def pg_database_url() -> Iterator[str]:
    reason = _pg_reason()
    if reason:
        unavailable(reason, "TEST_OVERSPILL_REQUIRE_POSTGRES")
    name = f"overspill_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    yield url
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "overspill.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()
    return path


def _truncate_all(url: str) -> None:
    engine = create_engine(url)
    names = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {names} CASCADE"))
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path
) -> Iterator[str]:
    if request.param == "sqlite":
        path = tmp_path / "overspill.db"
        shutil.copyfile(sqlite_template, path)
        yield f"sqlite:///{path}"
    else:
        url: str = request.getfixturevalue("pg_database_url")
        yield url
        _truncate_all(url)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """moto's real S3 HTTP endpoint on loopback, shared by the session."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def in_process_s3() -> Iterator[None]:
    from moto import mock_aws

    with mock_aws():
        yield


@pytest.fixture(params=["local", "s3"])
def blob_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "local":
        yield (tmp_path / "blobs").as_uri()
    else:
        request.getfixturevalue("in_process_s3")
        yield f"s3://{make_bucket()}/prefix"


@pytest.fixture
def settings(tmp_path: Path, database_url: str, blob_url: str) -> StoreSettings:
    return store_settings(tmp_path, database_url, blob_url)


@pytest.fixture
def store(settings: StoreSettings) -> Iterator[ArtifactStore]:
    s = ArtifactStore(
        settings,
        make_engine(settings.resolved_database_url),
        _blobs(settings),
    )
    yield s
    s.close()


def _blobs(settings: StoreSettings) -> Any:
    from overspill.artifacts.blobs.registry import open_blob_store

    return open_blob_store(settings.resolved_blob_url, s3_endpoint_url=settings.s3_endpoint_url)


@pytest.fixture(params=["local", "s3-server"])
def server_blob_url(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[str, str | None]]:
    """Blob URL reachable from other processes: a directory, or moto's HTTP server."""
    if request.param == "local":
        yield (tmp_path / "blobs").as_uri(), None
    else:
        endpoint: str = request.getfixturevalue("moto_server")
        yield f"s3://{make_bucket(endpoint)}/p", endpoint


@pytest.fixture(params=["in-process", "http"])
def backend(request: pytest.FixtureRequest, store: ArtifactStore) -> Iterator[Any]:
    """Alice's StoreClient: the store in this process, or a real server over HTTP."""
    from overspill.api.client.http import OverspillClient
    from overspill.api.client.in_process import InProcessClient
    from tests.api_helpers import live_server, make_api
    from tests.helpers import ALICE

    if request.param == "in-process":
        yield InProcessClient(store, ALICE)
    else:
        api = make_api(store)
        with live_server(api.app) as url, OverspillClient(url, api.alice) as client:
            yield client


@pytest.fixture(scope="session")
def harness_bin() -> Path:
    """The pinned harness CLIs and npm packages (``tests.harnesses.clients``),
    installed once; a skip, or a failure where they are required, without them."""
    from tests.harnesses.clients import REQUIRE, HarnessesUnavailable, installed

    try:
        return installed()
    except HarnessesUnavailable as exc:
        unavailable(str(exc), REQUIRE)
