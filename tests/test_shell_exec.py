"""The executor against real bash processes (and, for artifacts, every backend pair)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import tempfile
import threading
import time
from pathlib import Path

import pytest

from overspill.artifacts.errors import StorageUnavailable
from overspill.artifacts.queries import LineQuery, ListQuery, TailQuery
from overspill.artifacts.store import ArtifactStore
from overspill.shell import ExecRequest, Executor, ShellSettings, SpawnError, StoreSink
from overspill.shell.deferred import DeferredSink
from tests.helpers import ALICE, wait_until

FAST = dict(grace_ms=300, legacy_spill=True)


def _executor(**overrides: object) -> Executor:
    return Executor(ShellSettings(**{**FAST, **overrides}))


def _pids_alive(path: Path) -> list[int]:
    """Pids still running (a zombie waiting for init to reap it is dead)."""
    alive = []
    for line in path.read_text().split():
        try:
            state = Path(f"/proc/{int(line)}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            continue
        if state != "Z":
            alive.append(int(line))
    return alive


def test_exit_codes_stdout_and_stderr() -> None:
    r = _executor().run(ExecRequest(command="echo out; echo err >&2; exit 7"))
    assert (r.exit_code, r.signal, r.timed_out, r.aborted) == (7, None, False, False)
    assert r.stdout.text == "out\n" and r.stderr.text == "err\n"
    assert r.text == "out\n[stderr]\nerr\n\n[exit code: 7]"


def test_stdin_is_given_then_closed_or_dev_null() -> None:
    assert _executor().run(ExecRequest(command="cat", stdin=b"piped")).stdout.text == "piped"
    assert _executor().run(ExecRequest(command="cat")).stdout.text == ""


def test_a_timeout_kills_the_tree_and_says_so() -> None:
    r = _executor().run(ExecRequest(command="echo start; sleep 30", timeout_ms=300))
    assert r.timed_out and not r.aborted and r.signal == "SIGTERM" and r.exit_code is None
    assert r.text == "start\n\n[timed out after 300ms]\n[killed by signal: SIGTERM]"


def test_a_command_that_traps_term_still_dies(tmp_path: Path) -> None:
    r = _executor().run(ExecRequest(command="trap '' TERM; echo ready; sleep 30", timeout_ms=300))
    assert r.timed_out and r.signal == "SIGKILL"


def test_grandchildren_die_with_the_tree(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    cmd = f"(sleep 60 & echo $! >> {pids}; wait) & (trap '' TERM; sleep 60 & echo $! >> {pids}; wait) & sleep 60"
    r = _executor().run(ExecRequest(command=cmd, timeout_ms=400))
    assert r.timed_out
    time.sleep(0.2)
    assert _pids_alive(pids) == []


def test_abort_ends_the_command_and_is_not_a_timeout() -> None:
    abort = threading.Event()
    threading.Timer(0.3, abort.set).start()
    r = _executor().run(ExecRequest(command="sleep 30"), abort=abort)
    assert r.aborted and not r.timed_out and r.signal == "SIGTERM"


def test_cancelling_an_asyncio_run_aborts_the_command(tmp_path: Path) -> None:
    marker = tmp_path / "pid"

    async def main() -> None:
        task = asyncio.create_task(
            _executor().arun(ExecRequest(command=f"echo $$ > {marker}; sleep 30"))
        )
        for _ in range(100):
            if marker.exists() and marker.read_text().strip():
                break
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_asyncio_callers_get_the_same_result() -> None:
    r = asyncio.run(_executor().arun(ExecRequest(command="echo hi")))
    assert r.stdout.text == "hi\n" and r.exit_code == 0


def test_a_lingering_grandchild_does_not_hold_the_result_past_the_grace() -> None:
    r = _executor(grace_ms=200).run(ExecRequest(command="echo done; (sleep 20 &) ; exit 0"))
    assert r.exit_code == 0 and r.stdout.text == "done\n" and r.duration_ms < 10_000


def test_output_left_in_the_pipes_at_the_drain_deadline_is_kept() -> None:
    """A slow consumer (a remote store under load) must not cost the end of the
    output: the command has exited and its bytes already sit in the pipes."""
    from overspill.shell.process import Pump, spawn

    tree = spawn("seq 1 100000; seq 1 3000 >&2", os.getcwd(), dict(os.environ), None)
    got = {"out": bytearray(), "err": bytearray()}

    def slow(name: str):  # type: ignore[no-untyped-def]
        def take(chunk: memoryview) -> None:
            time.sleep(0.05)
            got[name] += chunk

        return take

    pump = Pump(tree, slow("out"), slow("err"))
    tree.popen.wait()
    pump.drain(0.0)  # the deadline has passed before the first read
    assert bytes(got["out"]) == "".join(f"{i}\n" for i in range(1, 100001)).encode()
    assert bytes(got["err"]) == "".join(f"{i}\n" for i in range(1, 3001)).encode()


def test_infrastructure_failures_raise() -> None:
    with pytest.raises(SpawnError, match="workdir does not exist"):
        _executor().run(ExecRequest(command="true", workdir="/no/such/dir"))


def test_env_is_scrubbed_and_explicit_values_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", "leak")
    monkeypatch.setenv("OVERSPILL_TOKEN", "leak")
    monkeypatch.setenv("PLAIN_VALUE", "kept")
    r = _executor().run(
        ExecRequest(
            command="env | sort",
            env={"DEPLOY_TOKEN": "given"},
        )
    )
    lines = set(r.stdout.text.splitlines())
    assert "PLAIN_VALUE=kept" in lines and "DEPLOY_TOKEN=given" in lines
    assert {"NO_COLOR=1", "TERM=dumb", "PAGER=cat", "GIT_PAGER=cat"} <= lines
    # Only the tree's own mark (no secret: a random value) is overspill's.
    ours = [line for line in lines if line.startswith("OVERSPILL_")]
    assert [line.partition("=")[0] for line in ours] == ["OVERSPILL_TREE"]
    assert not any(line.startswith("SERVICE_API_KEY=") for line in lines)


def test_workdir_is_used(tmp_path: Path) -> None:
    assert (
        _executor().run(ExecRequest(command="pwd", workdir=str(tmp_path))).stdout.text
        == f"{tmp_path}\n"
    )


def test_truncated_output_has_a_spill_file_identical_to_the_stream() -> None:
    r = _executor(max_output_bytes=1000).run(ExecRequest(command="seq 1 5000"))
    expected = "".join(f"{i}\n" for i in range(1, 5001)).encode()
    assert r.stdout.truncated and r.stdout.total_bytes == len(expected)
    assert r.stdout.text.encode() == expected[-1000:]
    assert r.stdout.spill_path and Path(r.stdout.spill_path).read_bytes() == expected
    assert f"[output truncated; full output: {r.stdout.spill_path}" in r.text
    assert r.stdout.artifact is None and r.stdout.storage_error is None


def test_the_compatibility_layer_off_writes_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    from overspill.shell import spill

    monkeypatch.setattr(spill.SpillDirectory, "_path", None)
    r = _executor(legacy_spill=False, max_output_bytes=10).run(ExecRequest(command="seq 1 1000"))
    assert r.stdout.truncated and r.stdout.spill_path is None
    assert list(tmp_path.iterdir()) == []


def test_a_stream_past_the_spill_cap_loses_its_spill_file() -> None:
    r = _executor(max_output_bytes=100, max_spill_bytes=5000).run(
        ExecRequest(command="seq 1 10000")
    )
    assert r.stdout.truncated and r.stdout.spill_path is None
    assert "full output: (unavailable)" in r.text


def test_legacy_render_mode_produces_the_old_strings() -> None:
    r = _executor(max_output_bytes=5, render_mode="legacy").run(
        ExecRequest(command="echo 1234567890")
    )
    assert r.text == f"7890\n\n[output truncated; full output: {r.stdout.spill_path}]"


# -- background jobs --------------------------------------------------------------------


def test_background_reads_are_consuming_and_survive_exit() -> None:
    job = _executor().start(
        ExecRequest(command="echo one; sleep 0.3; echo two >&2; sleep 0.3; echo three")
    )
    seen_out, seen_err = "", ""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        read = job.read_output()
        seen_out += read.stdout
        seen_err += read.stderr
        if not read.running and not read.stdout and not read.stderr:
            break
        time.sleep(0.05)
    assert seen_out == "one\nthree\n" and seen_err == "two\n"
    result = job.wait()
    assert result is not None and result.exit_code == 0
    assert job.read_output().text == "(no new output)"  # the contract's empty read


def test_background_kill_returns_true_once() -> None:
    job = _executor().start(ExecRequest(command="sleep 30"))
    time.sleep(0.1)
    assert job.kill() is True
    assert job.kill() is False
    result = job.wait(timeout=10)
    assert result is not None and result.signal == "SIGTERM" and not result.timed_out
    assert job.kill() is False


def test_a_lossy_background_read_names_the_missing_range() -> None:
    job = _executor(max_output_bytes=100).start(ExecRequest(command="seq 1 1000"))
    job.wait(timeout=10)
    read = job.read_output()
    assert read.lossy and read.text.startswith(read.stdout)
    total = len("".join(f"{i}\n" for i in range(1, 1001)))
    assert f"stdout bytes 0-{total - 100}" in read.text
    assert "[some output was dropped from memory" in read.text


def test_background_jobs_ignore_a_raised_window() -> None:
    job = _executor(max_output_bytes=10).start(
        ExecRequest(command="seq 1 100", max_output_bytes=100_000)
    )
    result = job.wait(timeout=10)
    assert result is not None and result.stdout.truncated


# -- artifacts on every backend pair --------------------------------------------------


@pytest.fixture
def art_executor(store: ArtifactStore) -> Executor:
    sink = StoreSink(store, ALICE, session_id="sess-1")
    return Executor(ShellSettings(grace_ms=300, max_output_bytes=1000), sink)


def test_artifact_bytes_equal_what_the_command_printed(
    art_executor: Executor, store: ArtifactStore
) -> None:
    script = (
        "head -c 300000 /dev/urandom > blob.bin; cat blob.bin; "
        "printf '\\xff\\xfe invalid utf8 \\xc3\\n' >&2; seq 1 2000 >&2; exit 4"
    )
    with tempfile.TemporaryDirectory() as d:
        r = art_executor.run(ExecRequest(command=script, workdir=d))
        blob = Path(d, "blob.bin").read_bytes()
    assert r.exit_code == 4
    out, err = r.stdout, r.stderr
    assert out.artifact and err.artifact
    assert out.artifact.state == "complete" and out.artifact.size_bytes == 300000
    assert out.artifact.sha256 == hashlib.sha256(blob).hexdigest()
    _, content = store.open_content(ALICE, out.artifact.id)
    assert content.read(0, 300000) == blob
    expected_err = (
        b"\xff\xfe invalid utf8 \xc3\n" + "".join(f"{i}\n" for i in range(1, 2001)).encode()
    )
    _, econtent = store.open_content(ALICE, err.artifact.id)
    assert econtent.read(0, len(expected_err) + 10) == expected_err
    info = store.get(ALICE, out.artifact.id)
    assert info.source["command"] == script and info.source["stream"] == "stdout"
    assert info.source["exit_code"] == 4 and info.source["run_id"] == r.run_id
    assert store.get(ALICE, err.artifact.id).source["run_id"] == r.run_id
    assert info.session_id == "sess-1" and info.owner == ALICE.name
    assert f"artifact {out.artifact.id}" in r.text
    assert (
        f"[binary output: 300000 bytes, not shown; stored as artifact {out.artifact.id}; see "
        f'them as hex: artifact_read {{"id": "{out.artifact.id}", "offset": 0, "hex": true}}]'
        in r.text
    )


def test_output_within_the_window_makes_no_artifact(
    art_executor: Executor, store: ArtifactStore
) -> None:
    r = art_executor.run(ExecRequest(command="echo small"))
    assert r.stdout.artifact is None and store.list(ALICE).items == []


def test_a_capped_artifact_keeps_the_head_and_states_the_gap(store: ArtifactStore) -> None:
    sink = StoreSink(store, ALICE, max_bytes=5000)
    ex = Executor(ShellSettings(grace_ms=300, max_output_bytes=1000), sink)
    r = ex.run(ExecRequest(command="seq 1 20000"))
    art = r.stdout.artifact
    assert art and art.state == "capped" and art.size_bytes == 5000
    assert art.total_bytes == r.stdout.total_bytes
    m = re.search(r"shown lines (\d+)-20000 of 20000 \(bytes (\d+)-(\d+) of \3\)", r.text)
    assert m and int(m.group(3)) == r.stdout.total_bytes
    assert int(m.group(2)) - (r.stdout.total_bytes - 1000) < 10  # the tail, from a line start
    assert f"bytes 5000-{m.group(2)} are not stored" in r.text


def test_a_storage_failure_still_returns_the_tail_and_says_why(store: ArtifactStore) -> None:
    from tests.test_store import _break_blob_backend

    _break_blob_backend(store)
    ex = Executor(ShellSettings(grace_ms=300, max_output_bytes=1000), StoreSink(store, ALICE))
    r = ex.run(ExecRequest(command="seq 1 20000; exit 3"))
    assert r.exit_code == 3
    assert r.stdout.text.endswith("20000\n") and len(r.stdout.text) == 1000
    assert r.stdout.storage_error
    assert r.stdout.spill_path and Path(r.stdout.spill_path).stat().st_size == r.stdout.total_bytes
    assert "artifact unavailable:" in r.text


def test_an_unopenable_store_is_reported_not_raised(tmp_path: Path) -> None:
    from overspill.artifacts.config import StoreSettings

    def broken() -> ArtifactStore:
        return ArtifactStore.open(
            StoreSettings(home=tmp_path, database_url="postgresql+psycopg://x@127.0.0.1:1/x")
        )

    ex = Executor(
        ShellSettings(grace_ms=300, max_output_bytes=100, legacy_spill=False),
        StoreSink(broken, ALICE),
    )
    r = ex.run(ExecRequest(command="seq 1 1000"))
    assert r.exit_code == 0 and "unreachable" in (r.stdout.storage_error or "")
    assert "full output: (unavailable)" in r.text


def test_a_background_job_streams_into_a_live_artifact(
    art_executor: Executor, store: ArtifactStore
) -> None:
    job = art_executor.start(ExecRequest(command="seq 1 3000; sleep 1.5; echo tail-end"))
    deadline = time.monotonic() + 10
    art_id = None
    while time.monotonic() < deadline:
        items = store.list(ALICE).items
        if items and items[0].size_bytes > 0:
            art_id = items[0].id
            break
        time.sleep(0.05)
    assert art_id is not None
    live = store.get(ALICE, art_id)
    assert live.state == "writing"
    assert store.lines(ALICE, art_id, LineQuery(start=1, count=1)).lines[0].text == "1"
    result = job.wait(timeout=20)
    assert result is not None and result.stdout.artifact and result.stdout.artifact.id == art_id
    assert store.tail(ALICE, art_id, TailQuery(lines=1)).text == "tail-end\n"


def test_building_an_executor_touches_no_temp_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import overspill.shell.executor as executor
    import overspill.shell.spill as spill

    calls: list[float] = []
    monkeypatch.setattr(spill, "sweep_old_spill_files", lambda days: calls.append(days))
    monkeypatch.setattr(executor, "_swept", False)
    ex = Executor(ShellSettings(max_output_bytes=10, grace_ms=300))
    assert calls == []
    ex.run(ExecRequest(command="seq 1 100"))  # the first spill file sweeps, once
    ex.run(ExecRequest(command="seq 1 100"))
    assert executor.sweep_thread is not None
    executor.sweep_thread.join(10)  # on a thread of its own, never the pump's
    assert calls == [30]


def test_several_run_arguments_are_quoted_back_into_one_command(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env["OVERSPILL_HOME"] = str(tmp_path)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "overspill.api.cli",
            "run",
            "--json",
            "--",
            "printf",
            "%s|",
            "a b",
            "c",
        ],
        capture_output=True,
        env=env,
    )
    assert json.loads(out.stdout)["stdout"]["text"] == "a b|c|"


# -- a store that is slow to open (DeferredSink) ----------------------------------------


def test_output_keeps_flowing_while_the_store_is_slow_to_open(
    store: ArtifactStore, tmp_path: Path
) -> None:
    """The child never waits for storage to open: its bytes go to the spool and are
    replayed into the artifact, byte-exact, once the store is there. The store
    opens only once the command has ended (or after a minute): a pump that waited
    for it would hold the command, and the store would open first."""
    opened_at: list[float] = []
    ended_file = tmp_path / "ended"

    def slow_build() -> StoreSink:
        wait_until(ended_file.exists, timeout=60)
        time.sleep(0.2)
        opened_at.append(time.time())
        return StoreSink(store, ALICE)

    ex = Executor(
        ShellSettings(grace_ms=300, max_output_bytes=1000, legacy_spill=False),
        DeferredSink(slow_build),
    )
    # ~10 MB, several times the pipe's capacity: a pump waiting for the store
    # would hold the command until the store opened.
    script = f"seq 1 1500000; date +%s.%N > {ended_file}.tmp; mv {ended_file}.tmp {ended_file}"
    r = ex.run(ExecRequest(command=script, workdir=str(tmp_path)))
    ended = float(ended_file.read_text())
    assert ended < opened_at[0], "the command waited for the store to open"
    art = r.stdout.artifact
    assert art is not None and art.state == "complete"
    expected = "".join(f"{i}\n" for i in range(1, 1_500_001)).encode()
    assert art.size_bytes == len(expected)
    assert art.sha256 == hashlib.sha256(expected).hexdigest()
    _, content = store.open_content(ALICE, art.id)
    assert content.read(len(expected) - 100, len(expected)) == expected[-100:]
    assert content.read(0, 1000) == expected[:1000]


def test_a_full_spool_holds_the_pump_until_replayed_and_loses_nothing(
    store: ArtifactStore,
) -> None:
    def slow_build() -> StoreSink:
        time.sleep(0.5)
        return StoreSink(store, ALICE)

    sink = DeferredSink(slow_build, spool_bytes=64 * 1024)
    ex = Executor(ShellSettings(grace_ms=300, max_output_bytes=1000, legacy_spill=False), sink)
    r = ex.run(ExecRequest(command="seq 1 200000"))
    expected = "".join(f"{i}\n" for i in range(1, 200_001)).encode()
    art = r.stdout.artifact
    assert art is not None and art.state == "complete" and art.size_bytes == len(expected)
    assert art.sha256 == hashlib.sha256(expected).hexdigest()


def test_a_store_that_cannot_be_built_leaves_the_tail_and_says_why() -> None:
    def broken() -> StoreSink:
        raise StorageUnavailable("database unreachable: connection refused")

    ex = Executor(
        ShellSettings(grace_ms=300, max_output_bytes=100, legacy_spill=False),
        DeferredSink(broken),
    )
    r = ex.run(ExecRequest(command="seq 1 1000; exit 2"))
    assert r.exit_code == 2 and r.stdout.text.endswith("1000\n")
    assert r.stdout.artifact is None
    assert r.stdout.storage_error == "database unreachable: connection refused"
    assert "full output: (unavailable)" in r.text


def test_a_refused_1_mib_pipe_falls_back_quietly_and_loses_nothing(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Widening the pipe is an optimisation: where the system refuses it (a
    container's pipe-max-size), capture goes on with the default pipe."""
    import fcntl

    real = fcntl.fcntl

    def refuse(fd: int, cmd: int, arg: int = 0) -> int:
        if cmd == getattr(fcntl, "F_SETPIPE_SZ", 1031):
            raise PermissionError(1, "Operation not permitted")
        return int(real(fd, cmd, arg))

    monkeypatch.setattr(fcntl, "fcntl", refuse)
    ex = Executor(
        ShellSettings(grace_ms=300, max_output_bytes=1000, legacy_spill=False),
        StoreSink(store, ALICE),
    )
    r = ex.run(ExecRequest(command="seq 1 300000"))
    expected = "".join(f"{i}\n" for i in range(1, 300_001)).encode()
    art = r.stdout.artifact
    assert art is not None and art.state == "complete" and art.size_bytes == len(expected)
    assert art.sha256 == hashlib.sha256(expected).hexdigest()


def test_a_live_reader_sees_a_fast_capture_before_the_command_ends(
    store: ArtifactStore, tmp_path: Path
) -> None:
    """20 MB printed at full speed, then the command waits for the reader: it ends
    only once a reader of the store has seen every byte, so the bytes were
    published while it ran (within the flush interval), not at the end."""
    ex = Executor(
        ShellSettings(grace_ms=300, max_output_bytes=1000, legacy_spill=False),
        StoreSink(store, ALICE),
    )
    size = 20_000_000
    job = ex.start(
        ExecRequest(
            command=f"head -c {size} /dev/zero; while [ ! -e go ]; do sleep 0.02; done; echo end",
            workdir=str(tmp_path),
        )
    )
    seen = 0
    deadline = time.monotonic() + 60
    while seen < size and time.monotonic() < deadline:
        page = store.list(ALICE, ListQuery(state="writing"))
        seen = max((i.size_bytes for i in page.items), default=0)
        time.sleep(0.02)
    assert seen == size, f"a reader saw {seen} of {size} bytes while the command ran"
    assert job.running
    (tmp_path / "go").touch()
    result = job.wait(timeout=30)
    assert result is not None and result.stdout.artifact is not None
    assert result.stdout.artifact.size_bytes == size + 4
