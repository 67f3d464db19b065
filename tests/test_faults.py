"""Storage trouble never holds a command hostage: an object store that accepts
connections and never answers (a real socket on loopback) fails the artifact,
and the command runs to its end at full speed with its tail and spill exact."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from overspill.artifacts.blobs.s3 import S3BlobStore
from overspill.artifacts.db.engine import make_engine, upgrade
from overspill.artifacts.store import ArtifactStore
from overspill.shell import ExecRequest, Executor, ShellSettings, StoreSink
from tests.helpers import ALICE, store_settings

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
    store.close()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 24 MiB filesystem (tmpfs) to fill; skipped where mounting is not allowed."""
    import subprocess

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
        subprocess.run(["umount", "-l", str(mnt)], check=False)


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
    assert r.stdout.storage_error and "No space left" in r.stdout.storage_error
    art = r.stdout.artifact
    assert art is not None and art.state == "failed"
    assert store.get(ALICE, art.id).state == "failed"  # recorded, not left writing
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
    store.close()
