"""schemathesis over the live OpenAPI document: no generated request may cause a
5xx, on SQLite and on PostgreSQL (which refuses inputs SQLite takes: a NUL in
text, integers past int64)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from overspill.api.server.app import create_app
from overspill.artifacts.catalog.tokens import NewToken
from overspill.artifacts.config import StoreSettings
from overspill.artifacts.store import ArtifactStore


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def fuzz_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ArtifactStore]:
    if request.param == "sqlite":
        store = ArtifactStore.open(StoreSettings(home=tmp_path))
        yield store
        store.close()
        return
    from tests.conftest import _truncate_all

    url: str = request.getfixturevalue("pg_database_url")
    store = ArtifactStore.open(StoreSettings(home=tmp_path, database_url=url))
    yield store
    store.close()
    _truncate_all(url)


@pytest.fixture
def fuzz_token(fuzz_store: ArtifactStore) -> str:
    return fuzz_store.tokens.create(NewToken(principal="user:root", role="admin")).token


@pytest.fixture
def fuzz_app(fuzz_store: ArtifactStore, fuzz_token: str) -> Any:
    app = create_app(fuzz_store)
    # Real artifacts so generated ids sometimes hit something.
    w = fuzz_store.open_writer(fuzz_store.tokens.authenticate(fuzz_token))  # type: ignore[arg-type]
    w.write(b"line one\nline two\n" * 100)
    w.close()
    return app


@pytest.fixture
def api_schema(fuzz_app: Any) -> Any:
    return schemathesis.openapi.from_asgi("/openapi.json", fuzz_app)


def test_no_request_causes_a_server_error(api_schema: Any, fuzz_token: str) -> None:
    """Every operation, 25 generated requests each (schemathesis' pytest plugin does not
    load under this pytest, so the operations are driven through hypothesis here)."""
    headers = {"Authorization": f"Bearer {fuzz_token}"}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 20
    cases = 0
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None
        )
        def check(case: Any) -> None:
            nonlocal cases
            cases += 1
            case.call_and_validate(headers=headers, checks=[not_a_server_error])

        check()
    print(f"fuzz: {len(operations)} operations, {cases} requests, 0 server errors")
