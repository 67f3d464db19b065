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
