"""Chaos, bounded and on loopback only: storage trouble never holds a command
hostage and never loses its output, and a later run and cleanup work again.

An object store that accepts and never answers (a real socket), moto's server
stopped and started again, a throwaway PostgreSQL cluster stopped and started
(never the shared one), a real 24 MiB filesystem filled up. SIGKILL of the
executor is in test_signals.py. After every fault no artifact is ``complete``
with fewer bytes than its source printed. Each asserts the command's tail, the stated
reason, the spill file or stored prefix byte-exact, and the recovery."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from overspill.artifacts.blobs.s3 import S3BlobStore
from overspill.artifacts.catalog.tokens import NewToken
from overspill.artifacts.db.engine import make_engine, upgrade
from overspill.artifacts.store import ArtifactStore
from overspill.shell import ExecRequest, Executor, ShellSettings, StoreSink
from tests.helpers import ALICE, short_complete, store_settings

pytestmark = pytest.mark.slow


@pytest.fixture
def hung_endpoint() -> Iterator[str]:
    """Accepts every connection, reads nothing, answers nothing."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                held.append(conn)
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    t.join()
    for c in held:
        c.close()
    server.close()


def test_a_hung_object_store_does_not_slow_the_command(
    hung_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    engine = make_engine(url)
    upgrade(engine)
    settings = store_settings(tmp_path, url, "s3://bucket/p", storage_stall_s=1.0)
    store = ArtifactStore(settings, engine, S3BlobStore("bucket", "p", endpoint_url=hung_endpoint))
    ex = Executor(ShellSettings(max_output_bytes=1000, grace_ms=300), StoreSink(store, ALICE))
    r = ex.run(ExecRequest(command="head -c 30000000 /dev/zero; echo done", timeout_ms=120_000))
    assert r.exit_code == 0 and not r.timed_out
    assert r.stdout.total_bytes == 30_000_005 and r.stdout.text.endswith("done\n")
    assert r.stdout.spill_path and Path(r.stdout.spill_path).stat().st_size == 30_000_005
    assert r.stdout.storage_error and "storage" in r.stdout.storage_error
    assert r.stdout.artifact is not None and r.stdout.artifact.state == "failed"
    assert "artifact unavailable: storage" in r.text
    # What the command printed, not what was stored: the unstored part is accounted for.
    assert store.get(ALICE, r.stdout.artifact.id).total_bytes == 30_000_005
    assert short_complete(store) == []
    store.close()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 24 MiB filesystem (tmpfs) to fill; skipped where mounting is not allowed.
    Local servers started on it are stopped before it is unmounted."""
    import subprocess

    from tests.helpers import stop_local_servers

    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mnt)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {done.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        stop_local_servers(str(mnt))
        subprocess.run(["umount", "-l", str(mnt)], check=False)


SEQ_TOTAL = 105_888_897  # bytes of `seq 1 13000000`


def _stored_rows(home: Path) -> list[tuple[str, str, int, int]]:
    import sqlite3

    with sqlite3.connect(home / "overspill.db") as db:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'artifacts'").fetchone():
            return []  # the disk was full before the store could even be made
        return list(db.execute("SELECT id, state, size_bytes, total_bytes FROM artifacts"))


@pytest.mark.parametrize("local_server", ["on", "off"])
def test_a_spool_that_fills_never_leaves_a_short_artifact_complete(
    small_disk: Path, local_server: str
) -> None:
    """The spool (TMPDIR) and the home share one small disk: every run still
    returns its tail, and no artifact that holds fewer bytes than the command
    printed is called complete, in the row or in the answer."""
    import json

    from tests.helpers import cli_env, run_cli

    tmp = small_disk / "tmp"
    tmp.mkdir(mode=0o700)
    env = cli_env(
        OVERSPILL_HOME=small_disk / "home", TMPDIR=tmp, OVERSPILL_LOCAL_SERVER=local_server
    )
    named = []  # the artifacts the answers named: each must have its row
    for _ in range(4):
        done = run_cli(env, "run", "--json", "--", "seq 1 13000000")
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)["stdout"]
        assert out["total_bytes"] == SEQ_TOTAL and out["text"].endswith("12999999\n13000000\n")
        art = out["artifact"]
        if art is not None:
            named.append(art["id"])
        if art is not None and art["state"] == "complete":
            assert art["size_bytes"] == SEQ_TOTAL and out["storage_error"] is None
        else:
            assert out["storage_error"], out
    rows = _stored_rows(small_disk / "home")
    # How far each run got depends on how soon the disk filled (on a loaded
    # machine the store itself may never be made); what is stored is never short
    # and complete, and every artifact an answer named is there.
    assert set(named) <= {row[0] for row in rows}, (named, rows)
    assert all(state != "complete" or size == total for _, state, size, total in rows), rows
    assert all(total == SEQ_TOTAL for *_, total in rows), rows


@pytest.mark.parametrize("local_server", ["on", "off"])
def test_a_full_home_says_disk_full_where_and_how_much_was_stored(
    small_disk: Path, local_server: str
) -> None:
    import json

    from tests.helpers import cli_env, run_cli

    home = small_disk / "home"
    env = cli_env(OVERSPILL_HOME=home, OVERSPILL_LOCAL_SERVER=local_server)
    done = run_cli(env, "run", "--json", "--", "seq 1 13000000")
    out = json.loads(done.stdout)["stdout"]
    art = out["artifact"]
    assert art["state"] == "failed" and art["total_bytes"] == SEQ_TOTAL
    why = f"disk full at {home / 'blobs'}: {art['size_bytes']} of {SEQ_TOTAL} bytes stored"
    assert out["storage_error"] == why
    assert done.stderr.decode() == f"overspill: warning: full output not stored: {why}\n"
    text = run_cli(env, "run", "--", "seq 1 13000000")
    assert f"artifact unavailable: disk full at {home / 'blobs'}: " in text.stdout.decode()
    again = run_cli(env, "run", "--json", "--", "seq 1 20000")  # the disk was given back
    assert json.loads(again.stdout)["stdout"]["artifact"]["state"] == "complete"
    rows = _stored_rows(home)
    assert all(state != "complete" or size == total for _, state, size, total in rows), rows


def test_an_upload_that_fills_the_disk_gives_it_back_and_the_server_recovers(
    small_disk: Path,
) -> None:
    import shutil

    import httpx

    from overspill.artifacts.config import StoreSettings
    from tests.api_helpers import live_server, make_api

    store = ArtifactStore.open(StoreSettings(home=small_disk / "home"))
    api = make_api(store)
    with live_server(api.app) as url, httpx.Client(base_url=url, timeout=60) as http:
        h = api.h(api.alice)
        kept = http.post("/v1/artifacts", json={}, headers=h).json()["id"]
        assert http.put(f"/v1/artifacts/{kept}/content", content=b"k" * 1000, headers=h)
        art = http.post("/v1/artifacts", json={}, headers=h).json()["id"]

        def body() -> Iterator[bytes]:
            for _ in range(60):
                yield b"\0" * (1 << 20)

        for method in ("PUT", "PATCH"):
            params = {"offset": 0} if method == "PATCH" else {}
            r = http.request(
                method, f"/v1/artifacts/{art}/content", content=body(), headers=h, params=params
            )
            assert r.status_code == 507, r.text
            error = r.json()["error"]
            assert error["code"] == "disk_full"
            assert error["message"].startswith(f"disk full at {small_disk / 'home' / 'blobs'}")
            # Given back at once: the disk is not left full by a blob held open.
            assert shutil.disk_usage(small_disk).used < 4 * 1024 * 1024
        assert http.delete(f"/v1/artifacts/{kept}", headers=h).status_code == 200
        again = http.post("/v1/artifacts", json={}, headers=h).json()["id"]
        r = http.put(f"/v1/artifacts/{again}/content", content=b"ok\n" * 1000, headers=h)
        assert r.status_code == 200 and r.json()["state"] == "complete"
    assert short_complete(store) == []
    store.close()


def _remount_read_only(mnt: Path) -> None:
    """The kernel lets go of an exited server's writable files a moment after its
    process is gone (a remount meanwhile is "busy"): retry for a few seconds."""
    import subprocess
    import time

    deadline = time.monotonic() + 5
    while True:
        done = subprocess.run(["mount", "-o", "remount,ro", str(mnt)], capture_output=True)
        if done.returncode == 0:
            return
        assert time.monotonic() < deadline, done.stderr.decode()
        time.sleep(0.1)


def test_a_read_only_home_is_named_as_such_by_every_verb(small_disk: Path) -> None:
    import subprocess

    from tests.helpers import cli_env, run_cli, stop_local_servers

    home = small_disk / "home"
    env = cli_env(OVERSPILL_HOME=home)
    assert run_cli(env, "run", "--", "seq 1 100000").returncode == 0  # made, with its store
    stop_local_servers(str(small_disk))
    _remount_read_only(small_disk)
    try:
        why = f"data directory {home}: the file system is read-only"
        for local_server in ("on", "off"):
            env["OVERSPILL_LOCAL_SERVER"] = local_server
            ls = run_cli(env, "ls")
            assert ls.returncode != 0 and ls.stderr.decode().startswith(f"overspill: {why}")
            assert b"Traceback" not in ls.stderr
            run = run_cli(env, "run", "--", "seq 1 100000")
            assert run.returncode == 0 and f"artifact unavailable: {why}" in run.stdout.decode()
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=False)


def test_a_full_disk_frees_the_failed_bytes_at_once_and_everything_works_again(
    small_disk: Path,
) -> None:
    import shutil

    from overspill.artifacts.config import StoreSettings
    from tests.api_helpers import make_api

    store = ArtifactStore.open(StoreSettings(home=small_disk / "home", segment_bytes=1 << 20))
    ex = Executor(
        ShellSettings(max_output_bytes=1000, grace_ms=300, legacy_spill=False),
        StoreSink(store, ALICE),
    )
    r = ex.run(ExecRequest(command="head -c 60000000 /dev/zero; echo done"))
    assert r.exit_code == 0 and r.stdout.text.endswith("done\n")
    art = r.stdout.artifact
    assert art is not None and art.state == "failed"
    home_blobs = small_disk / "home" / "blobs"
    assert r.stdout.storage_error == (
        f"disk full at {home_blobs}: {art.size_bytes} of 60000005 bytes stored"
    )
    failed = store.get(ALICE, art.id)
    assert failed.state == "failed" and failed.total_bytes == 60_000_005  # recorded, not writing
    # What it published stays readable (a failed artifact keeps its stored prefix);
    # the segment that failed, and any staged after the last publish, are gone.
    used = shutil.disk_usage(small_disk).used
    assert used < art.size_bytes + 4 * 1024 * 1024, (used, art.size_bytes)
    assert store.delete(ALICE, art.id).state == "deleted"
    assert shutil.disk_usage(small_disk).used < 4 * 1024 * 1024
    again = ex.run(ExecRequest(command="seq 1 10000"))
    assert again.stdout.artifact is not None and again.stdout.artifact.state == "complete"
    assert store.sweeper.run().errors == []
    # While the disk is nearly full, readiness says so.
    api = make_api(store)
    assert api.client.get("/readyz").status_code == 200
    filler = small_disk / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 20))
        except OSError:
            pass
    ready = api.client.get("/readyz")
    assert ready.status_code == 503 and "low disk" in ready.json()["reason"]
    filler.unlink()
    assert api.client.get("/readyz").status_code == 200
    assert short_complete(store) == []
    store.close()


def test_a_blob_that_fills_the_disk_on_its_first_piece_is_given_back_at_once(
    small_disk: Path,
) -> None:
    """The piece that meets the full disk may be the first of a new blob, a blob no
    staged segment names yet: it is deleted (and its file closed) right there, so
    the disk is free for the row that records the failure. (Left behind, it kept
    the disk full, and the final update of the artifact's row was retried until
    the command's result went without it.)"""
    import shutil

    from overspill.artifacts.blobs.local import LocalBlobStore
    from overspill.artifacts.errors import DiskFull
    from overspill.artifacts.writing.segment_storage import BlobPlacer

    blobs_dir = small_disk / "blobs"
    placer = BlobPlacer(LocalBlobStore(blobs_dir), "a" * 26)
    free = shutil.disk_usage(small_disk).free
    with pytest.raises(DiskFull):
        placer.place(0, memoryview(b"x" * (free + (1 << 20))), None)
    assert [p for p in blobs_dir.rglob("*") if p.is_file()] == []
    assert shutil.disk_usage(small_disk).free >= free - (64 << 10)  # (directories)


@pytest.fixture
def throwaway_postgres() -> Iterator[tuple[str, str, str]]:
    """A PostgreSQL cluster of its own (never the shared one), to restart at will."""
    import shutil
    import subprocess
    import uuid

    from tests.helpers import free_port

    if not shutil.which("pg_createcluster"):
        pytest.skip("pg_createcluster is not installed")
    version = sorted(p.name for p in Path("/etc/postgresql").iterdir())[-1]
    name, port = f"chaos{uuid.uuid4().hex[:8]}", free_port()
    made = subprocess.run(
        ["pg_createcluster", version, name, "-p", str(port), "--start", "--", "--auth=trust"],
        capture_output=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot create a throwaway cluster: {made.stderr.decode().strip()}")
    try:
        subprocess.run(
            ["createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "chaos"], check=True
        )
        yield version, name, f"postgresql+psycopg://postgres@127.0.0.1:{port}/chaos"
    finally:
        subprocess.run(["pg_dropcluster", version, name, "--stop"], capture_output=True)


def test_a_postgres_restart_fails_storage_cleanly_and_the_store_recovers(
    throwaway_postgres: tuple[str, str, str], tmp_path: Path
) -> None:
    import subprocess

    from overspill.artifacts.errors import StorageUnavailable
    from tests.helpers import write_artifact

    version, name, url = throwaway_postgres
    engine = make_engine(url)
    upgrade(engine)
    store = ArtifactStore(
        store_settings(tmp_path, url, (tmp_path / "blobs").as_uri()),
        engine,
        __import__("overspill.artifacts.blobs.local", fromlist=["x"]).LocalBlobStore(
            tmp_path / "blobs"
        ),
    )
    before = write_artifact(store, b"kept\n" * 1000)
    ex = Executor(ShellSettings(max_output_bytes=1000, grace_ms=300), StoreSink(store, ALICE))
    subprocess.run(["pg_ctlcluster", version, name, "stop", "-m", "fast"], check=True)
    r = ex.run(ExecRequest(command="seq 1 20000"))
    assert r.exit_code == 0 and r.stdout.text.endswith("20000\n")
    assert r.stdout.storage_error and "database unavailable" in r.stdout.storage_error
    assert r.stdout.spill_path and Path(r.stdout.spill_path).stat().st_size == r.stdout.total_bytes
    with pytest.raises(StorageUnavailable):
        store.get(ALICE, before)
    subprocess.run(["pg_ctlcluster", version, name, "start"], check=True)
    assert store.read_bytes(ALICE, before, 0, 10) == b"kept\nkept\n"  # the pool reconnects
    again = ex.run(ExecRequest(command="seq 1 20000"))
    assert again.stdout.artifact is not None and again.stdout.artifact.state == "complete"
    assert store.sweeper.run().errors == []
    assert short_complete(store) == []
    store.close()


def test_a_download_across_a_postgres_restart_arrives_whole(
    throwaway_postgres: tuple[str, str, str], tmp_path: Path
) -> None:
    """A long read looks its segments up before its first byte goes out: the
    database stopping and starting again mid-download does not cut it short."""
    import subprocess

    from overspill.api.client.in_process import InProcessClient
    from tests.helpers import write_artifact

    version, name, url = throwaway_postgres
    engine = make_engine(url)
    upgrade(engine)
    blobs = __import__("overspill.artifacts.blobs.local", fromlist=["x"]).LocalBlobStore(
        tmp_path / "blobs"
    )
    settings = store_settings(tmp_path, url, (tmp_path / "blobs").as_uri())
    store = ArtifactStore(settings.replace(segment_bytes=4096), engine, blobs)
    data = b"".join(b"%07d row of a long download\n" % i for i in range(20_000))
    art = write_artifact(store, data, chunks=[4096])
    stream = iter(InProcessClient(store, ALICE).iter_content(art))
    got = bytearray(next(stream))  # the response has started
    subprocess.run(["pg_ctlcluster", version, name, "stop", "-m", "fast"], check=True)
    try:
        for chunk in stream:
            got += chunk
    finally:
        subprocess.run(["pg_ctlcluster", version, name, "start"], check=True)
    assert bytes(got) == data
    store.close()


_SLOW = "for i in $(seq 0 39); do seq $((i*5000+1)) $((i*5000+5000)); sleep 0.1; done"
_SLOW_OUT = b"".join(b"%d\n" % n for n in range(1, 200_001))


def _restart(version: str, name: str) -> None:
    import subprocess

    subprocess.run(["pg_ctlcluster", version, name, "restart", "-m", "fast"], check=True)


def test_outputs_written_across_a_postgres_restart_are_whole_and_read_after_another(
    throwaway_postgres: tuple[str, str, str], tmp_path: Path
) -> None:
    """Three commands print for four seconds through the local server; the
    database restarts a second in. Each writer rides out the outage (a publish
    refused while it was down is sent again), so each output is stored whole,
    and a read through the local server right after a second restart (every
    pooled connection dead) returns every byte."""
    import json
    import subprocess
    import sys
    import time

    from tests.helpers import cli_env, run_cli

    version, name, url = throwaway_postgres
    env = cli_env(
        OVERSPILL_HOME=tmp_path / "home",
        OVERSPILL_DATABASE_URL=url,
        OVERSPILL_OWNER="user:tester",
        OVERSPILL_LOCAL_SERVER_IDLE_S=30,
    )
    assert run_cli(env, "db", "upgrade").returncode == 0
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "overspill.api.cli", "run", "--json", "--", _SLOW],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for _ in range(3)
    ]
    time.sleep(1.0)
    _restart(version, name)
    ids = []
    for proc in runs:
        out, err = proc.communicate(timeout=120)
        stdout = json.loads(out)["stdout"]
        assert stdout["storage_error"] is None, (stdout["storage_error"], err)
        art = stdout["artifact"]
        assert (art["state"], art["size_bytes"]) == ("complete", len(_SLOW_OUT)), art
        ids.append(art["id"])
    _restart(version, name)
    for art in ids:
        read = run_cli(env, "cat", art)
        assert read.returncode == 0 and read.stdout == _SLOW_OUT, read.stderr
    run_cli(env, "server", "stop")


def test_a_read_through_the_api_right_after_a_postgres_restart_arrives_whole(
    throwaway_postgres: tuple[str, str, str], tmp_path: Path
) -> None:
    """A real server whose pooled connections all died with a restart: the next
    /v1 reads (metadata, a whole download, a range) answer whole."""
    import httpx

    from overspill.artifacts.blobs.local import LocalBlobStore
    from tests.api_helpers import live_server, make_api
    from tests.helpers import write_artifact

    version, name, url = throwaway_postgres
    engine = make_engine(url)
    upgrade(engine)
    settings = store_settings(tmp_path, url, (tmp_path / "blobs").as_uri())
    store = ArtifactStore(settings, engine, LocalBlobStore(tmp_path / "blobs"))
    data = b"".join(b"%07d a line of the output\n" % i for i in range(40_000))
    art = write_artifact(store, data, chunks=[65_536])
    api = make_api(store)
    with (
        live_server(api.app) as base,
        httpx.Client(base_url=base, headers=api.h(api.alice)) as http,
    ):
        assert http.get(f"/v1/artifacts/{art}/content").content == data  # the pool is warm
        _restart(version, name)
        assert http.get(f"/v1/artifacts/{art}").json()["state"] == "complete"
        assert http.get(f"/v1/artifacts/{art}/content").content == data
        ranged = http.get(f"/v1/artifacts/{art}/content", headers={"Range": "bytes=100-199"})
        assert ranged.status_code == 206 and ranged.content == data[100:200]
    store.close()


def test_an_object_store_stopped_and_resumed_fails_one_run_and_serves_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.server import ThreadedMotoServer

    from tests.helpers import free_port, make_bucket, write_artifact

    for key, value in (("AWS_ACCESS_KEY_ID", "t"), ("AWS_SECRET_ACCESS_KEY", "t")):
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    bucket = make_bucket(endpoint)
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    engine = make_engine(url)
    upgrade(engine)
    store = ArtifactStore(
        store_settings(tmp_path, url, f"s3://{bucket}/p", storage_stall_s=2.0),
        engine,
        S3BlobStore(bucket, "p", endpoint_url=endpoint),
    )
    kept = write_artifact(store, b"before\n" * 100)
    ex = Executor(ShellSettings(max_output_bytes=1000, grace_ms=300), StoreSink(store, ALICE))
    server.stop()
    try:
        r = ex.run(ExecRequest(command="seq 1 50000"))
        assert r.exit_code == 0 and r.stdout.text.endswith("50000\n")
        assert r.stdout.storage_error and r.stdout.artifact is not None
        assert r.stdout.artifact.state == "failed"
        assert r.stdout.artifact.total_bytes == r.stdout.total_bytes
        assert store.get(ALICE, r.stdout.artifact.id).total_bytes == r.stdout.total_bytes
        assert (
            r.stdout.spill_path and Path(r.stdout.spill_path).stat().st_size == r.stdout.total_bytes
        )
    finally:
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        server.start()
    try:
        assert store.read_bytes(ALICE, kept, 0, 7) == b"before\n"  # moto kept its objects
        again = ex.run(ExecRequest(command="seq 1 50000"))
        assert again.stdout.artifact is not None and again.stdout.artifact.state == "complete"
        assert store.sweeper.run().errors == []
        assert short_complete(store) == []
    finally:
        store.close()
        server.stop()


def test_a_full_disk_behind_a_server_counts_what_the_server_published(
    small_disk: Path,
) -> None:
    """An append the server refuses for a full disk may still have published part
    of itself there: the count the command reports is the stored row's, read
    after the writer stopped, not the client's count of acknowledged appends."""
    from overspill.api.client.http import OverspillClient
    from overspill.api.client.sinks import RemoteSink
    from overspill.api.server.app import create_app
    from overspill.artifacts.config import StoreSettings
    from tests.api_helpers import live_server, settings_with

    # About 20 MiB stay free: more than a writer places before its first batch
    # of 8 segments of 1 MiB is published (8 being published, 3 waiting to be
    # hashed, 1 filling), so that batch is stored however slow the commit; with
    # 12 MiB free, a loaded machine filled the disk before it and stored none.
    (small_disk / "ballast").write_bytes(b"\0" * (4 << 20))
    store = ArtifactStore.open(StoreSettings(home=small_disk / "home", segment_bytes=1 << 20))
    token = store.tokens.create(NewToken(principal="user:alice", role="user")).token
    try:
        with live_server(create_app(store, settings_with())) as url:
            # One 32 MiB append: the server stores it in 8 MiB batches, and a
            # later batch meets the full disk.
            sink = RemoteSink(OverspillClient(url, token), segment_bytes=32 << 20)
            ex = Executor(ShellSettings(max_output_bytes=1000, legacy_spill=False), sink)
            r = ex.run(ExecRequest(command="head -c 40000000 /dev/zero"))
        art = r.stdout.artifact
        assert art is not None and art.state == "failed"
        assert art.size_bytes == store.get(ALICE, art.id).size_bytes > 0
        assert r.stdout.storage_error == (
            f"disk full at {small_disk / 'home' / 'blobs'}: {art.size_bytes} of 40000000 bytes stored"
        )
    finally:
        store.close()


def test_a_publish_sent_again_after_its_answer_was_lost_counts_once(
    store: ArtifactStore,
) -> None:
    """A writer whose publish failed at COMMIT (the database went away with the
    answer) sends the same batch again: the store answers it as published, keeps
    its blob, and adds no row. A batch that is not the one stored is refused and
    its blob given back."""
    from overspill.artifacts.blobs.base import BlobNotFound
    from overspill.artifacts.blobs.keys import segment_key
    from overspill.artifacts.errors import OffsetConflict
    from overspill.artifacts.writing.segments import StagedSegment
    from overspill.artifacts.writing.writes import NewArtifact

    info, lease = store.ingest.open_lease(ALICE, NewArtifact(kind="output"))
    data = b"".join(b"line %d\n" % i for i in range(1000))
    key = segment_key(info.id, 0, "0a1b2c3d")
    store.blobs.put(key, data)
    batch = [StagedSegment(0, len(data), key, 1000, True)]
    assert store.publisher.publish(info.id, lease, batch) == (len(data), None)
    assert store.publisher.publish(info.id, lease, batch) == (len(data), None)  # the retry
    assert store.get(ALICE, info.id).size_bytes == len(data)
    assert store.read_bytes(ALICE, info.id, 0, len(data)) == data
    other = segment_key(info.id, 0, "ffffffff")
    store.blobs.put(other, data)
    with pytest.raises(OffsetConflict):
        store.publisher.publish(info.id, lease, [StagedSegment(0, len(data), other, 1000, True)])
    with pytest.raises(BlobNotFound):
        b"".join(store.blobs.read(other, 0, 10))
    assert store.read_bytes(ALICE, info.id, 0, len(data)) == data


_MOTO = """
import sys, time
import boto3
from moto.server import ThreadedMotoServer
port = int(sys.argv[1])
ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False).start()
boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
             aws_access_key_id="t", aws_secret_access_key="t").create_bucket(Bucket="hung")
print("ready", flush=True)
while True:
    time.sleep(60)
"""


def test_a_hung_object_store_costs_the_result_two_seconds_not_minutes(tmp_path: Path) -> None:
    """The S3 endpoint stops answering (SIGSTOP) 2.5 s into a 5-second command:
    the command runs at its own pace (its output is spooled, never held on
    storage) and its result comes at most a couple of seconds after its end,
    saying storage made no headway; the store's client library's timeouts and
    retries are not waited for."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers import cli_env, free_port, run_cli

    port = free_port()
    moto = subprocess.Popen([sys.executable, "-c", _MOTO, str(port)], stdout=subprocess.PIPE)
    try:
        assert moto.stdout is not None and moto.stdout.readline() == b"ready\n"
        env = cli_env(
            OVERSPILL_HOME=tmp_path / "home",
            OVERSPILL_BLOB_URL="s3://hung/p",
            OVERSPILL_S3_ENDPOINT_URL=f"http://127.0.0.1:{port}",
            AWS_ACCESS_KEY_ID="t",
            AWS_SECRET_ACCESS_KEY="t",
            AWS_DEFAULT_REGION="us-east-1",
        )
        assert run_cli(env, "put", stdin=b"warm\n").returncode == 0  # the server is up
        command = "for i in $(seq 1 50); do seq 1 20000; sleep 0.1; done"
        started = time.monotonic()
        subprocess.run(["bash", "-c", command], stdout=subprocess.DEVNULL, check=True)
        alone = time.monotonic() - started
        started = time.monotonic()
        run = subprocess.Popen(
            [sys.executable, "-m", "overspill.api.cli", "run", "--", command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        time.sleep(2.5)
        os.kill(moto.pid, signal.SIGSTOP)
        out, err = run.communicate(timeout=120)
        took = time.monotonic() - started
        os.kill(moto.pid, signal.SIGCONT)
        assert took < alone + 4.0, (took, alone, err)
        text = out.decode()
        assert "\n19999\n20000\n\n[output truncated" in text  # the tail, to its end
        assert "storage made no headway for 2 s after the command ended" in text, text[-600:]
        assert b"storage made no headway" in err
    finally:
        os.kill(moto.pid, signal.SIGCONT)
        run_cli(cli_env(OVERSPILL_HOME=tmp_path / "home"), "server", "stop")
        moto.kill()
        moto.wait()
