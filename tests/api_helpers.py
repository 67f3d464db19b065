"""Helpers for API tests: an app with tokens, and a real uvicorn server on loopback."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from overspill.api.server.app import create_app
from overspill.api.settings import ServerSettings, Settings
from overspill.artifacts.catalog.tokens import NewToken
from overspill.artifacts.store import ArtifactStore


def settings_with(**server: object) -> Settings:
    """The process's settings with these server settings (bounds, intervals)."""
    base = Settings.load()
    return base._replace(server=ServerSettings(**server))


@dataclass
class Api:
    store: ArtifactStore
    app: FastAPI
    client: TestClient
    alice: str
    bob: str
    admin: str

    def h(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}


def make_api(store: ArtifactStore) -> Api:
    app = create_app(store)
    return Api(
        store=store,
        app=app,
        client=TestClient(app),
        alice=store.tokens.create(NewToken(principal="user:alice", role="user")).token,
        bob=store.tokens.create(NewToken(principal="user:bob", role="user")).token,
        admin=store.tokens.create(NewToken(principal="user:root", role="admin")).token,
    )


@contextmanager
def live_server(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port; yield its base URL."""
    with serving(app) as (url, _):
        yield url


@contextmanager
def serving(app: FastAPI) -> Iterator[tuple[str, uvicorn.Server]]:
    """``live_server``, on the listening socket ``overspill serve`` makes, and the
    uvicorn server too (for a look at its connections)."""
    from overspill.api.server.running import tcp_socket

    sock = tcp_socket("127.0.0.1", 0)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    port = sock.getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        thread.join(timeout=15)
