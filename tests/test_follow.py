"""Following a growing artifact: without parking server threads, bounded per
principal, and from the CLI on the local store as well as through a server."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from overspill.api.server.app import create_app
from overspill.artifacts.catalog.tokens import NewToken
from overspill.artifacts.config import StoreSettings
from overspill.artifacts.records import Principal
from overspill.artifacts.store import ArtifactStore
from tests.api_helpers import live_server, settings_with
from tests.helpers import ALICE

pytestmark = pytest.mark.slow


def test_many_idle_followers_hold_no_worker_threads(store: ArtifactStore) -> None:
    # AnyIO's thread pool has 40 workers: 60 followers that each parked one (as
    # they used to) would leave none for any other request.
    app = create_app(store, settings_with(max_followers=100))
    token = store.tokens.create(NewToken(principal="user:alice", role="user")).token
    writer = store.open_writer(ALICE)
    writer.write(b"first\n")
    writer.flush()
    headers = {"Authorization": f"Bearer {token}"}
    with live_server(app) as url:
        streams = []
        with httpx.Client(base_url=url, headers=headers, timeout=10) as http:
            try:
                for _ in range(60):
                    ctx = http.stream("GET", f"/v1/artifacts/{writer.id}/content?follow=true")
                    resp = ctx.__enter__()
                    assert resp.status_code == 200
                    assert next(resp.iter_raw()) == b"first\n"
                    streams.append(ctx)
                with httpx.Client(base_url=url, headers=headers, timeout=10) as other:
                    assert other.get("/v1/whoami").json()["name"] == "user:alice"
                    assert other.get("/healthz").status_code == 200
            finally:
                writer.close()
                for ctx in streams:
                    ctx.__exit__(None, None, None)


def test_a_principal_past_its_follower_bound_gets_a_429(store: ArtifactStore) -> None:
    app = create_app(store, settings_with(max_followers=2))
    token = store.tokens.create(NewToken(principal="user:alice", role="user")).token
    other = store.tokens.create(NewToken(principal="user:bob", role="user")).token
    writer = store.open_writer(ALICE)
    writer.write(b"x")
    writer.flush()
    path = f"/v1/artifacts/{writer.id}/content?follow=true"
    with live_server(app) as url, httpx.Client(base_url=url, timeout=10) as http:
        h = {"Authorization": f"Bearer {token}"}
        held = [http.stream("GET", path, headers=h) for _ in range(2)]
        try:
            for ctx in held:
                assert ctx.__enter__().status_code == 200
            refused = http.get(path, headers=h)
            assert refused.status_code == 429
            assert refused.json()["error"]["code"] == "too_many_requests"
            # Bob's 404 is his own business: the bound is per principal.
            assert http.get(path, headers={"Authorization": f"Bearer {other}"}).status_code == 404
        finally:
            for ctx in held:
                ctx.__exit__(None, None, None)
        # Closed streams give their slots back.
        for _ in range(50):
            if app.state.followers.held("user:alice") == 0:
                break
            threading.Event().wait(0.05)
        assert app.state.followers.held("user:alice") == 0
        writer.close()


def test_cat_follow_on_the_local_store_streams_until_the_writer_completes(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    store = ArtifactStore.open(StoreSettings(home=home, flush_interval_s=0.05))
    writer = store.open_writer(Principal(name="user:me", role="user"))
    writer.write(b"part one\n")
    writer.flush()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env["OVERSPILL_HOME"] = str(home)
    cat = subprocess.Popen(
        [sys.executable, "-m", "overspill.api.cli", "cat", writer.id, "--follow"],
        stdout=subprocess.PIPE,
        env=env,
    )
    assert cat.stdout is not None
    assert cat.stdout.readline() == b"part one\n"  # shown while the writer still writes
    writer.write(b"part two\n")
    writer.close()
    rest, _ = cat.communicate(timeout=30)
    assert cat.returncode == 0 and rest == b"part two\n"
    store.close()


@pytest.mark.parametrize("ending", ["writer killed", "storage failed"])
def test_cat_follow_says_how_an_unfinished_output_ended_and_exits_non_zero(
    tmp_path: Path, ending: str
) -> None:
    from tests.helpers import cli_env

    home = tmp_path / "home"
    store = ArtifactStore.open(StoreSettings(home=home, flush_interval_s=0.05, lease_seconds=1))
    writer = store.open_writer(Principal(name="user:me", role="user"))
    writer.write(b"part one\n")
    writer.flush()
    cat = subprocess.Popen(
        [sys.executable, "-m", "overspill.api.cli", "cat", writer.id, "--follow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(OVERSPILL_HOME=home),
    )
    assert cat.stdout is not None
    assert cat.stdout.readline() == b"part one\n"
    if ending == "writer killed":
        writer.abandon()  # as a killed process leaves it: its lease lapses
        said = f"overspill: {writer.id} is incomplete: its writer stopped before the output ended"
    else:
        writer.close(error="disk on fire")
        said = f"overspill: {writer.id} is failed: storing it failed (disk on fire)"
    rest, err = cat.communicate(timeout=60)
    assert rest == b"" and cat.returncode == 1
    assert err.decode().startswith(said) and "9 bytes are stored" in err.decode()
    store.close()


@pytest.mark.parametrize(
    ("how", "first_seen"),
    [(["--tail", "2"], b"four\n"), (["--range", "8-"], b"three\n")],
)
def test_cat_follow_starts_where_the_tail_or_range_starts(
    tmp_path: Path, how: list[str], first_seen: bytes
) -> None:
    """A follow from the last lines (or a byte offset) goes on from there: it
    does not replay the output from byte 0 first."""
    from tests.helpers import cli_env

    home = tmp_path / "home"
    store = ArtifactStore.open(StoreSettings(home=home, flush_interval_s=0.05))
    writer = store.open_writer(Principal(name="user:me", role="user"))
    writer.write(b"one\ntwo\nthree\nfour\nfive\n")  # "three" starts at byte 8
    writer.flush()
    cat = subprocess.Popen(
        [sys.executable, "-m", "overspill.api.cli", "cat", writer.id, *how, "--follow"],
        stdout=subprocess.PIPE,
        env=cli_env(OVERSPILL_HOME=home),
    )
    assert cat.stdout is not None
    assert cat.stdout.readline() == first_seen
    writer.write(b"six\n")
    writer.close()
    rest = cat.stdout.read()  # the pipe's reader buffers: communicate() would skip that
    assert cat.wait(timeout=30) == 0
    shown = first_seen + rest
    assert shown.endswith(b"five\nsix\n") and b"one" not in shown
    store.close()
