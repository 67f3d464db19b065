"""DNS rebinding: a browser reaches ``overspill serve`` only by the names it
serves under and from its own pages (or those an admin allowed); anything else
is a 403 that names the setting. Agents and the CLI send no Origin and pass."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from overspill.api.server.app import create_app
from overspill.api.server.origins import hosts_for
from overspill.artifacts.store import ArtifactStore
from tests.api_helpers import settings_with

pytestmark = pytest.mark.one_store

EVIL = "evil.example.com"


def _client(store: ArtifactStore, bound: str | None, **server: object) -> TestClient:
    app = create_app(store, settings_with(**server), bound_host=bound)
    return TestClient(app, base_url="http://127.0.0.1:8765")


def test_a_rebound_name_and_a_foreign_page_are_refused_on_every_route(
    store: ArtifactStore,
) -> None:
    client = _client(store, "127.0.0.1")
    for path in ("/healthz", "/mcp", "/v1/artifacts", "/"):
        r = client.get(path, headers={"Host": EVIL})
        assert r.status_code == 403, path
        assert r.json()["error"]["code"] == "forbidden_host"
        assert "OVERSPILL_ALLOWED_HOSTS" in r.json()["error"]["message"]
    r = client.post("/mcp", headers={"Origin": f"http://{EVIL}"}, json={})
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden_origin"
    assert "OVERSPILL_ALLOWED_ORIGINS" in r.json()["error"]["message"]


def test_the_servers_own_names_and_pages_and_agents_pass(store: ArtifactStore) -> None:
    client = _client(store, "127.0.0.1")
    assert client.get("/healthz").status_code == 200
    assert client.get("/healthz", headers={"Host": "localhost:8765"}).status_code == 200
    own = {"Origin": "http://127.0.0.1:8765"}
    assert client.get("/healthz", headers=own).status_code == 200
    # Another port of the same name is another origin.
    other = {"Origin": "http://127.0.0.1:9999"}
    assert client.get("/healthz", headers=other).status_code == 403


def test_allowed_names_and_origins_are_configured(store: ArtifactStore) -> None:
    client = _client(
        store,
        "0.0.0.0",
        allowed_hosts="overspill.corp.example",
        allowed_origins="https://dash.corp.example",
    )
    assert client.get("/healthz", headers={"Host": "overspill.corp.example"}).status_code == 200
    assert client.get("/healthz", headers={"Host": EVIL}).status_code == 403
    page = {"Origin": "https://dash.corp.example"}
    assert client.get("/healthz", headers=page).status_code == 200


def test_which_names_a_server_answers_to() -> None:
    assert hosts_for("127.0.0.1", "") == frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
    assert "box.lan" in (hosts_for("box.lan", "") or set())
    assert hosts_for("0.0.0.0", "") is None  # every interface: its names are unknown
    assert hosts_for("0.0.0.0", "*") is None
    assert hosts_for(None, "a.example,B.example") == frozenset(
        {"a.example", "b.example", "localhost", "127.0.0.1", "[::1]", "::1"}
    )
