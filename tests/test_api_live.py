"""A real uvicorn server on loopback: the HTTP client, streaming, the remote sink
(`overspill run` whose overflow lands on the server) and the CLI in server mode."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from overspill.api.client.http import OverspillClient, RemoteSink
from overspill.artifacts.catalog.tokens import NewToken
from overspill.artifacts.errors import Gone, NotFound, OffsetConflict
from overspill.artifacts.queries import GrepQuery, LineQuery, ListQuery, TailQuery
from overspill.artifacts.store import ArtifactStore
from overspill.shell import ExecRequest, Executor, ShellSettings
from tests.api_helpers import Api, live_server, make_api
from tests.helpers import ALICE, cli_env, run_cli

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def server(store: ArtifactStore) -> Iterator[tuple[Api, str]]:
    api = make_api(store)
    with live_server(api.app) as url:
        yield api, url


def _cli(url: str, token: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli(cli_env(OVERSPILL_URL=url, OVERSPILL_TOKEN=token), *args)


def test_the_client_covers_the_api(server: tuple[Api, str]) -> None:
    api, url = server
    with OverspillClient(url, api.alice) as c:
        info = c.create(name="via client", session_id="s-9")
        data = b"".join(b"row %d\n" % i for i in range(200_000))
        chunks = (data[i : i + 65536] for i in range(0, len(data), 65536))
        done = c.upload(info.id, chunks)
        assert done.state == "complete" and done.sha256 == hashlib.sha256(data).hexdigest()
        assert b"".join(c.iter_content(info.id)) == data
        assert b"".join(c.iter_content(info.id, 10, 20)) == data[10:20]
        assert c.lines(info.id, LineQuery(start=1000, count=1)).lines[0].text == "row 999"
        assert c.tail(info.id, TailQuery(lines=1)).text == "row 199999\n"
        assert c.grep(info.id, GrepQuery(pattern="^row 12345$")).matches[0].line.number == 12346
        assert c.list(ListQuery(session_id="s-9")).items[0].id == info.id
        assert c.pin(info.id, "keep").pinned
        c.delete(info.id)
        with pytest.raises(Gone):
            c.text(info.id)
        with pytest.raises(NotFound):
            OverspillClient(url, api.bob).get(info.id)
        other = c.create()
        c.append(other.id, 0, b"abc")
        with pytest.raises(OffsetConflict) as exc:
            c.append(other.id, 0, b"abc")
        assert exc.value.current_size == 3


def test_follow_streams_a_growing_artifact_until_it_completes(server: tuple[Api, str]) -> None:
    api, url = server
    writer = api.store.open_writer(ALICE)
    writer.write(b"first\n")
    writer.flush()
    got: list[bytes] = []

    def follow() -> None:
        with OverspillClient(url, api.alice) as c:
            got.extend(c.iter_content(writer.id, follow=True))

    t = threading.Thread(target=follow)
    t.start()
    for i in range(5):
        time.sleep(0.2)
        writer.write(b"more %d\n" % i)
        writer.flush()
    writer.close()
    t.join(timeout=30)
    assert not t.is_alive()
    assert b"".join(got) == b"first\n" + b"".join(b"more %d\n" % i for i in range(5))


def test_an_executor_streams_its_overflow_to_the_server(server: tuple[Api, str]) -> None:
    api, url = server
    sink = RemoteSink(
        OverspillClient(url, api.alice),
        session_id="sandbox-1",
        segment_bytes=64 * 1024,
        flush_interval_s=0.1,
    )
    ex = Executor(ShellSettings(grace_ms=300, max_output_bytes=1000), sink)
    r = ex.run(ExecRequest(command="seq 1 100000; seq 1 3000 >&2; exit 5"))
    expected = "".join(f"{i}\n" for i in range(1, 100001)).encode()
    art = r.stdout.artifact
    assert art is not None and art.state == "complete" and art.size_bytes == len(expected)
    assert art.sha256 == hashlib.sha256(expected).hexdigest()
    _, content = api.store.open_content(ALICE, art.id)
    assert content.read(0, len(expected)) == expected
    info = api.store.get(ALICE, art.id)
    assert info.session_id == "sandbox-1" and info.source["exit_code"] == 5
    assert r.stderr.artifact is not None and f"artifact {art.id}" in r.text


def test_overspill_run_with_a_url_lands_on_the_server(
    server: tuple[Api, str], tmp_path: Path
) -> None:
    api, url = server
    out = _cli(url, api.alice, "run", "--json", "--", "head -c 300000 /dev/urandom | base64 -w 100")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    art = result["stdout"]["artifact"]
    assert art["state"] == "complete" and art["size_bytes"] == result["stdout"]["total_bytes"]
    stored = api.store.read_bytes(ALICE, art["id"], 0, 1 << 20)
    assert hashlib.sha256(stored).hexdigest() == art["sha256"]
    assert stored.endswith(result["stdout"]["text"].encode())
    assert set(result) >= {
        "exit_code",
        "signal",
        "timed_out",
        "aborted",
        "timeout_ms",
        "stdout",
        "stderr",
        "text",
    }


def test_the_cli_in_server_mode(server: tuple[Api, str]) -> None:
    api, url = server
    put = subprocess.run(
        [sys.executable, "-m", "overspill.api.cli", "put", "--name", "numbers"],
        input=b"".join(b"%d\n" % i for i in range(1, 5001)),
        capture_output=True,
        env={
            **os.environ,
            "OVERSPILL_URL": url,
            "OVERSPILL_TOKEN": api.alice,
            "PYTHONPATH": str(ROOT),
        },
        check=False,
    )
    art = put.stdout.decode().strip()
    assert art.startswith("art_"), put.stderr
    assert _cli(url, api.alice, "cat", art, "--lines", "10:2").stdout == b"10\n11\n"
    assert _cli(url, api.alice, "cat", art, "--range", "0-4").stdout == b"1\n2\n"
    assert b"4999:4999" in _cli(url, api.alice, "grep", art, "^4999$").stdout
    assert art in _cli(url, api.alice, "ls").stdout.decode()
    missing = _cli(url, api.bob, "cat", art)
    assert (
        missing.returncode == 1
        and missing.stderr.decode().strip() == f"overspill: artifact {art} not found"
    )
    token = _cli(url, api.admin, "token", "create", "--principal", "agent:new", "--role", "agent")
    new = token.stdout.decode().strip().splitlines()[-1]
    assert new.startswith("ovs_") and _cli(url, new, "ls").returncode == 0
    denied = _cli(url, api.alice, "token", "list")
    assert denied.returncode == 1 and b"admin" in denied.stderr
    down = _cli("http://127.0.0.1:9", api.alice, "ls")
    assert (
        down.returncode == 1 and b"unreachable" in down.stderr and b"Traceback" not in down.stderr
    )


def test_a_quota_stop_through_the_remote_sink_is_capped_not_failed(
    server: tuple[Api, str],
) -> None:
    from overspill.artifacts.catalog.policies import PolicySpec
    from tests.helpers import ADMIN

    api, url = server
    api.store.policies.set(ADMIN, PolicySpec(quota_bytes=20_000), ALICE.name)
    with OverspillClient(url, api.alice) as client:
        sink = RemoteSink(client, segment_bytes=4096, flush_interval_s=0.05)
        ex = Executor(ShellSettings(grace_ms=300, max_output_bytes=1000, legacy_spill=False), sink)
        r = ex.run(ExecRequest(command="seq 1 30000"))
    art = r.stdout.artifact
    assert art is not None and art.state == "capped", art
    # The prefix that fits the quota is stored, to its last byte.
    assert art.size_bytes == 20_000 and art.total_bytes == r.stdout.total_bytes
    assert f"full output: artifact {art.id}" in r.text
    assert "artifact holds the first 20000 bytes (capped: quota exceeded for user:alice" in r.text
    assert "artifact unavailable" not in r.text
    info = api.store.get(ALICE, art.id)
    assert info.state == "capped" and info.size_bytes == art.size_bytes


def test_a_password_in_the_server_url_is_never_printed() -> None:
    import socket

    with socket.socket() as probe:  # a closed port on loopback
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for verb in (["ls"], ["cat", "art_" + "0" * 26], ["run", "--", "seq 1 100000"]):
        done = _cli(f"http://u:s3cr3t@127.0.0.1:{port}", "tok_x", *verb)
        err = done.stderr.decode() + done.stdout.decode()
        assert "s3cr3t" not in err and f"127.0.0.1:{port} unreachable" in err, err


def test_a_token_revoked_by_another_process_is_refused_within_the_window_said(
    tmp_path: Path,
) -> None:
    """The CLI revokes through its own store; a running server that has the token
    cached refuses it within the 2 s the CLI and the README promise."""
    import httpx

    from overspill.api.server.app import create_app
    from overspill.artifacts.bounds import TOKEN_CACHE_S
    from overspill.artifacts.config import StoreSettings

    home = tmp_path / "home"
    store = ArtifactStore.open(StoreSettings(home=home))
    issued = store.tokens.create(NewToken(principal="user:alice", role="user"))
    try:
        with live_server(create_app(store)) as url:
            h = {"Authorization": f"Bearer {issued.token}"}
            assert httpx.get(f"{url}/v1/whoami", headers=h).status_code == 200  # cached now
            env = cli_env(OVERSPILL_HOME=home, OVERSPILL_LOCAL_SERVER="off")
            done = run_cli(env, "token", "revoke", issued.info.id)
            revoked_at = time.monotonic()
            assert done.returncode == 0, done.stderr
            assert f"within {TOKEN_CACHE_S:g} s" in done.stdout.decode()
            while httpx.get(f"{url}/v1/whoami", headers=h).status_code == 200:
                assert time.monotonic() - revoked_at < TOKEN_CACHE_S + 0.5
                time.sleep(0.05)
    finally:
        store.close()
