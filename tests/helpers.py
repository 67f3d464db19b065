"""Shared test helpers: principals, settings for a backend pair, writing an artifact."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

from overspill.artifacts.config import StoreSettings
from overspill.artifacts.records import Principal
from overspill.artifacts.store import ArtifactStore

ALICE = Principal(name="user:alice", role="user")
BOB = Principal(name="user:bob", role="user")
ADMIN = Principal(name="user:root", role="admin")


def make_bucket(endpoint: str | None = None) -> str:
    import boto3

    name = f"ovs-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=name)
    return name


def store_settings(home: Path, database_url: str, blob_url: str, **extra: Any) -> StoreSettings:
    values: dict[str, Any] = {
        "home": home,
        "database_url": database_url,
        "blob_url": blob_url,
        "segment_bytes": 64 * 1024,
        "flush_interval_s": 0.05,
        "lease_seconds": 30.0,
    }
    values.update(extra)
    return StoreSettings(**values)


def write_artifact(
    store: ArtifactStore,
    data: bytes,
    principal: Principal = ALICE,
    chunks: list[int] | None = None,
    **kwargs: Any,
) -> str:
    writer = store.open_writer(principal, **kwargs)
    if chunks is None:
        writer.write(data)
    else:
        pos = 0
        for n in chunks:
            writer.write(data[pos : pos + n])
            writer.flush()
            pos += n
        writer.write(data[pos:])
    writer.close()
    return writer.id


def free_port() -> int:
    """A free loopback port for a server a test starts."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def local_servers(under: str | None = None) -> list[tuple[int, str]]:
    """(pid, home) of every overspill local server running on this machine (a
    server runs in its home), or of those whose home is inside ``under``."""
    import os

    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if not {b"overspill.api.cli", b"server", b"run"} <= set(argv):
                continue
            home = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if under is None or home == under or home.startswith(under.rstrip("/") + "/"):
            found.append((int(name), home))
    return found


def unavailable(reason: str, required_by: str) -> NoReturn:
    """A real part a test needs is missing: skip, or fail where the environment
    variable ``required_by`` says it must be there (CI sets them all)."""
    import os

    import pytest

    if os.environ.get(required_by):
        pytest.fail(reason)
    pytest.skip(reason)


def wait_until(check: Callable[[], object], timeout: float = 30.0) -> bool:
    """Whether ``check()`` came true within ``timeout`` seconds (polled every
    50 ms): for what another process does in its own time."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


class Process(NamedTuple):
    """A process as the kernel knows it: its pid and when it started. A pid alone
    is not a process: with 32,768 pids and a suite that spawns thousands, a pid
    that ended is given to another process within seconds, which a check by pid
    alone would take for a survivor. Taken while the process runs."""

    pid: int
    started: str | None

    @staticmethod
    def _stat(pid: int) -> list[str] | None:
        """/proc/PID/stat's fields after the command name (the state first)."""
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            return None

    @classmethod
    def of(cls, pid: int) -> Process:
        fields = cls._stat(pid)
        return cls(pid, fields[19] if fields else None)  # (field 22: the start time)

    def gone(self) -> bool:
        """Ended (a zombie has), and its pid maybe taken by another process since."""
        fields = self._stat(self.pid)
        return fields is None or fields[19] != self.started or fields[0] == "Z"


def stop_local_servers(under: str, timeout: float = 15.0) -> list[tuple[int, str]]:
    """Stop (SIGTERM, then SIGKILL) the local servers whose home is inside
    ``under``; returns those that were running."""
    import os
    import signal
    import time

    running = local_servers(under)
    for pid, _ in running:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    for pid, _ in running:
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().split(") ", 1)[1].startswith("Z"):
                        break  # a zombie: its parent (a test's Popen) will reap it
            except OSError:
                break
            time.sleep(0.05)
        if os.path.exists(f"/proc/{pid}"):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return running


def cli_env(**settings: object) -> dict[str, str]:
    """This process's environment without any OVERSPILL_ setting, plus ``settings``
    (so a developer's own configuration never leaks into a CLI under test)."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env.update({k: str(v) for k, v in settings.items()})
    return env


def run_cli(
    env: dict[str, str], *args: str, stdin: bytes = b"", timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """``overspill ARGS`` as a real process, the way a person or an agent runs it."""
    return subprocess.run(
        [sys.executable, "-m", "overspill.api.cli", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def mcp_answers(env: dict[str, str], requests: list[dict[str, Any]]) -> list[Any]:
    """``overspill mcp`` as a real process given ``requests`` (JSON-RPC 2.0 framing
    added) on stdin; its answers, one per line it wrote."""
    import json

    stdin = "".join(json.dumps({"jsonrpc": "2.0", **r}) + "\n" for r in requests)
    out = run_cli(env, "mcp", stdin=stdin.encode())
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    return [json.loads(line) for line in out.stdout.splitlines()]


def short_complete(store: ArtifactStore) -> list[str]:
    """Artifacts recorded ``complete`` with fewer bytes than their source printed:
    after any fault, there must be none (a short artifact is never whole)."""
    from overspill.artifacts.queries import ListQuery

    bad: list[str] = []
    cursor = None
    while True:
        page = store.list(ADMIN, ListQuery(state="complete", limit=500, cursor=cursor))
        bad += [i.id for i in page.items if i.size_bytes < i.total_bytes]
        if not page.next_cursor:
            return bad
        cursor = page.next_cursor


@contextmanager
def held_open(path: Path) -> Iterator[None]:
    """``path`` held open by another process (as a tool still writing it would)
    for the duration of the block."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys,time; f=open(sys.argv[1],'ab'); print(1,flush=True); time.sleep(120)",
            str(path),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"1\n"
        yield
    finally:
        holder.kill()
        holder.wait()
