"""Other processes: a reader sees a growing artifact; a killed writer leaves an
``incomplete`` artifact with everything it flushed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from overspill.artifacts.config import StoreSettings
from overspill.artifacts.queries import ListQuery, TailQuery, TextQuery
from overspill.artifacts.store import ArtifactStore
from tests.helpers import ALICE

READER = r"""
import json, sys, time
from overspill.artifacts.config import StoreSettings
from overspill.artifacts.queries import TextQuery
from overspill.artifacts.records import Principal
from overspill.artifacts.store import ArtifactStore
store = ArtifactStore.open(StoreSettings.load())
who = Principal(name="user:alice", role="user")
art, want = sys.argv[1], int(sys.argv[2])
seen = -1
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    info = store.get(who, art)
    if info.size_bytes != seen:
        seen = info.size_bytes
        text = store.text(who, art, TextQuery(limit=1 << 20)).text
        print(json.dumps({"size": seen, "state": info.state, "text": text}), flush=True)
    if seen >= want and info.state != "writing":
        break
    time.sleep(0.02)
"""

WRITER = r"""
import sys, time
from overspill.artifacts.config import StoreSettings
from overspill.artifacts.records import Principal
from overspill.artifacts.store import ArtifactStore
store = ArtifactStore.open(StoreSettings.load())
w = store.open_writer(Principal(name="user:alice", role="user"))
w.write(b"flushed line\n" * 1000)
w.flush()
w.write(b"never flushed\n")
print(w.id, flush=True)
time.sleep(120)
"""


def _env(settings: StoreSettings, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OVERSPILL_HOME=str(settings.home),
        OVERSPILL_DATABASE_URL=settings.resolved_database_url,
        OVERSPILL_BLOB_URL=settings.resolved_blob_url,
        OVERSPILL_FLUSH_INTERVAL_S="30",
        PYTHONPATH=str(Path(__file__).resolve().parents[1]),
    )
    if settings.s3_endpoint_url:
        env["OVERSPILL_S3_ENDPOINT_URL"] = settings.s3_endpoint_url
    env.update(extra)
    return env


@pytest.fixture
def shared_store(
    tmp_path: Path, database_url: str, server_blob_url: tuple[str, str | None]
) -> Iterator[ArtifactStore]:
    url, endpoint = server_blob_url
    settings = StoreSettings(
        home=tmp_path,
        database_url=database_url,
        blob_url=url,
        s3_endpoint_url=endpoint,
        flush_interval_s=30,
    )
    store = ArtifactStore.open(settings)
    yield store
    store.close()


def _next_line(proc: subprocess.Popen[str], want: int) -> dict[str, object]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(
                f"reader exited early: {proc.stderr.read() if proc.stderr else ''}"
            )
        event: dict[str, object] = json.loads(line)
        if int(event["size"]) >= want:  # type: ignore[call-overload]
            return event


def test_a_reader_in_another_process_sees_flushed_bytes_while_writing(
    shared_store: ArtifactStore,
) -> None:
    writer = shared_store.open_writer(ALICE)
    part1, part2 = b"first part\n" * 100, b"second part\n" * 100
    writer.write(part1)
    writer.flush()
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, writer.id, str(len(part1) + len(part2))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(shared_store.settings),
    )
    try:
        first = _next_line(reader, len(part1))
        assert first == {"size": len(part1), "state": "writing", "text": part1.decode()}
        writer.write(part2)
        writer.flush()
        second = _next_line(reader, len(part1) + len(part2))
        assert second["state"] == "writing"
        assert second["text"] == (part1 + part2).decode()
        writer.close()
        assert reader.wait(timeout=30) == 0
    finally:
        reader.kill()
        writer.close()


def test_a_writer_killed_with_sigkill_leaves_an_incomplete_artifact(
    shared_store: ArtifactStore,
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(shared_store.settings, OVERSPILL_LEASE_SECONDS="1"),
    )
    try:
        assert proc.stdout is not None
        art = proc.stdout.readline().strip()
        assert art.startswith("art_"), proc.stderr.read() if proc.stderr else ""
        assert shared_store.get(ALICE, art).state == "writing"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
    deadline = time.monotonic() + 15
    while shared_store.get(ALICE, art).state == "writing" and time.monotonic() < deadline:
        time.sleep(0.1)
    info = shared_store.get(ALICE, art)
    assert info.state == "incomplete"
    assert info.size_bytes == len(b"flushed line\n") * 1000
    assert shared_store.text(ALICE, art, TextQuery(limit=100)).text.startswith("flushed line\n")
    assert shared_store.tail(ALICE, art, TailQuery(lines=1)).text == "flushed line\n"
    assert shared_store.list(ALICE, ListQuery(state="incomplete")).items[0].id == art
