"""Serving that one client cannot degrade: no Nagle wait on a kept-alive
connection, a bound per principal on expensive reads, health checks that never
queue, a slow database answered as busy, a vanished uploader that is no error."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from overspill.api.client.wire import Endpoint, WireClient
from overspill.api.server.app import create_app
from overspill.artifacts.config import StoreSettings
from overspill.artifacts.errors import StorageUnavailable, TooManyRequests
from overspill.artifacts.store import ArtifactStore
from tests.api_helpers import make_api, serving, settings_with
from tests.helpers import ALICE, write_artifact

pytestmark = pytest.mark.one_store


def test_accepted_connections_have_tcp_nodelay(store: ArtifactStore) -> None:
    api = make_api(store)
    with serving(api.app) as (url, server):
        client = WireClient(Endpoint.parse(url), token=api.alice)
        assert client.json("GET", "/healthz") == {"status": "ok"}  # kept alive
        sockets = [c.transport.get_extra_info("socket") for c in server.server_state.connections]
        assert sockets and all(
            s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in sockets
        )
        client.close()


def _hold_download(url: str, token: str, art: str) -> socket.socket:
    """A download whose body is never read: it holds its server-side slot."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.sendall(
        f"GET /v1/artifacts/{art}/content HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {token}\r\n\r\n".encode()
    )
    assert sock.recv(12).startswith(b"HTTP/1.1 200")
    return sock


def test_a_principal_past_its_bound_on_expensive_reads_gets_429_and_others_go_on(
    store: ArtifactStore,
) -> None:
    art = write_artifact(store, b"x" * (48 * 1024 * 1024))  # more than any socket buffers
    api = make_api(store)
    app = create_app(store, settings_with(max_expensive_reads=2))
    with serving(app) as (url, _):
        held = [_hold_download(url, api.alice, art) for _ in range(2)]
        alice = WireClient(Endpoint.parse(url), token=api.alice)
        with pytest.raises(TooManyRequests) as refused:
            alice.json("GET", f"/v1/artifacts/{art}/grep", params={"pattern": "y"})
        assert "expensive reads" in refused.value.message
        raw = alice.request("GET", "/healthz")  # the same principal's cheap reads go on
        assert raw.status == 200
        raw.read()
        response = _raw_status(url, api.alice, f"/v1/artifacts/{art}/grep?pattern=y")
        assert response.startswith(b"HTTP/1.1 429") and b"retry-after: 1" in response.lower()
        bob = WireClient(Endpoint.parse(url), token=api.bob)
        mine = bob.json("POST", "/v1/artifacts", json_body={})
        assert bob.json("GET", f"/v1/artifacts/{mine['id']}/tail")["text"] == ""
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 10
        while True:  # the slots come back once the held downloads end
            try:
                found = alice.json("GET", f"/v1/artifacts/{art}/grep", params={"pattern": "y"})
                break
            except TooManyRequests:
                assert time.monotonic() < deadline, "the slots were never given back"
                time.sleep(0.05)
        assert found["matches"] == []
        alice.close()
        bob.close()


def _raw_status(url: str, token: str, path: str) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


def test_health_checks_answer_while_every_worker_thread_is_busy(store: ArtifactStore) -> None:
    """/healthz runs on the event loop and /readyz on a thread of its own: a
    server whose 40 workers are all held still answers both."""
    import anyio.to_thread

    api = make_api(store)
    release = threading.Event()
    with serving(api.app) as (url, server):
        # Occupy the whole worker pool (40 threads) from inside the server's loop.
        loop = server.servers[0].get_loop()
        import asyncio

        async def hog() -> None:
            await anyio.to_thread.run_sync(release.wait)

        futures = [asyncio.run_coroutine_threadsafe(hog(), loop) for _ in range(40)]
        time.sleep(0.3)
        client = WireClient(Endpoint.parse(url), timeout=5)
        try:
            assert client.json("GET", "/healthz") == {"status": "ok"}
            assert client.json("GET", "/readyz") == {"status": "ready"}
        finally:
            release.set()
            for f in futures:
                f.result(timeout=10)
            client.close()


@pytest.mark.postgres
def test_a_table_lock_past_the_lock_timeout_is_503_database_busy(
    pg_database_url: str, tmp_path: object
) -> None:
    from sqlalchemy import create_engine, text

    settings = StoreSettings(
        home=str(tmp_path), database_url=pg_database_url, db_lock_timeout_s=0.5
    )
    store = ArtifactStore.open(settings)
    art = write_artifact(store, b"hello\n")
    api = make_api(store)
    locker = create_engine(pg_database_url)
    try:
        with serving(api.app) as (url, _), locker.connect() as conn:
            client = WireClient(Endpoint.parse(url), token=api.alice)
            trans = conn.begin()
            conn.execute(text("LOCK TABLE artifacts IN ACCESS EXCLUSIVE MODE"))
            with pytest.raises(StorageUnavailable, match="database busy"):
                client.json("GET", f"/v1/artifacts/{art}")
            assert _raw_status(url, api.alice, f"/v1/artifacts/{art}").startswith(b"HTTP/1.1 503")
            trans.rollback()
            assert client.json("GET", f"/v1/artifacts/{art}")["size_bytes"] == 6
            client.close()
    finally:
        locker.dispose()
        store.close()


@pytest.fixture
def uploads(store: ArtifactStore) -> Iterator[tuple[str, str, ArtifactStore]]:
    api = make_api(store)
    with serving(api.app) as (url, _):
        yield url, api.alice, store


def test_a_client_gone_mid_upload_ends_its_artifact_incomplete_not_a_500(
    uploads: tuple[str, str, ArtifactStore], caplog: pytest.LogCaptureFixture
) -> None:
    url, token, store = uploads
    client = WireClient(Endpoint.parse(url), token=token)
    art = client.json("POST", "/v1/artifacts", json_body={})["id"]
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.sendall(
        f"PUT /v1/artifacts/{art}/content HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}"
        "\r\nContent-Length: 10000000\r\n\r\n".encode()
        + b"y" * 300_000
    )
    time.sleep(0.5)
    sock.close()
    deadline = time.monotonic() + 10
    while store.get(ALICE, art).state == "writing" and time.monotonic() < deadline:
        time.sleep(0.05)
    info = store.get(ALICE, art)
    assert info.state == "incomplete" and "disconnected" in (info.error or "")
    assert 0 < info.size_bytes <= 300_000
    metrics = client.request("GET", "/metrics").read().decode()
    assert 'status="500"' not in metrics
    assert not [r for r in caplog.records if r.exc_info]  # no traceback logged
    client.close()
