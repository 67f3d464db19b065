"""A signal to ``overspill run`` never leaves a process of the command's tree behind.

Real processes throughout: the CLI as a subprocess, a command that ignores
SIGTERM and has grandchildren, and SIGINT, SIGTERM, SIGHUP and SIGKILL sent to
the CLI the way a terminal, ``timeout`` or an OOM killer would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from overspill.artifacts.config import StoreSettings
from overspill.artifacts.records import Principal
from overspill.artifacts.store import ArtifactStore
from tests.helpers import Process, wait_until

pytestmark = pytest.mark.slow


def _start(tmp_path: Path, command: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env.update(OVERSPILL_HOME=str(tmp_path / "home"), OVERSPILL_GRACE_MS="500")
    return subprocess.Popen(
        [sys.executable, "-m", "overspill.api.cli", "run", "--json", "--", command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )


def _pids(tmp_path: Path, count: int) -> list[Process]:
    """The processes the command wrote its pid files for (taken while they run)."""
    files = [tmp_path / f"pid{i}" for i in range(count)]
    assert wait_until(
        lambda: all(f.exists() and f.read_text().strip() for f in files), timeout=15
    ), "no pids"
    return [Process.of(int(f.read_text())) for f in files]


# bash ignores TERM (so its children do too): only the SIGKILL after grace ends them.
STUBBORN = (
    "trap '' TERM; seq 1 100000; echo $$ > pid0; "
    "(sleep 300 & echo $! > pid1; wait) & sleep 300 & echo $! > pid2; wait"
)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_ends_the_whole_tree_and_still_prints_the_tail_and_the_artifact(
    tmp_path: Path, sig: signal.Signals
) -> None:
    proc = _start(tmp_path, STUBBORN)
    pids = _pids(tmp_path, 3)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig, err
    result = json.loads(out)
    assert result["aborted"] is True and result["signal"] == "SIGKILL"
    assert result["text"].endswith("\n[killed by signal: SIGKILL]")
    assert "99999\n100000\n" in result["stdout"]["text"]
    art = result["stdout"]["artifact"]
    assert art["id"] in result["text"] and art["state"] == "complete"
    assert art["size_bytes"] == result["stdout"]["total_bytes"] == 588895
    for pid in pids:
        assert wait_until(pid.gone, timeout=15), f"{pid} survived"
    store = ArtifactStore.open(StoreSettings(home=tmp_path / "home"))
    try:
        info = store.get(Principal(name="x", role="admin"), art["id"])
        assert info.state == "complete" and info.source["aborted"] is True
    finally:
        store.close()


KILLED_PARENT = {
    "silent": "echo $$ > pid0; sleep 300",
    "streaming": "echo $$ > pid0; yes line | cat",
    "a tree of three": "echo $$ > pid0; (sleep 300 & echo $! > pid1; wait) & "
    "(bash -c 'sleep 300 & echo $! > pid2; wait') & wait",
    "a setsid child": "echo $$ > pid0; setsid sleep 300 & echo $! > pid1; "
    "(setsid bash -c 'sleep 300 & echo $! > pid2; wait' &) ; sleep 300",
}


@pytest.mark.parametrize("shape", list(KILLED_PARENT))
def test_a_killed_cli_takes_its_command_tree_with_it(tmp_path: Path, shape: str) -> None:
    command = KILLED_PARENT[shape]
    proc = _start(tmp_path, command)
    pids = _pids(tmp_path, command.count("> pid"))
    proc.kill()  # SIGKILL, as a harness kills its tool on a timeout: nothing of overspill runs
    proc.communicate(timeout=10)
    for pid in pids:
        assert wait_until(pid.gone, timeout=15), f"{pid} of {shape} survived"


def test_a_normal_run_leaves_no_watchdog_behind(tmp_path: Path) -> None:
    proc = _start(tmp_path, "echo $$ > pid0; echo done")
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and json.loads(out)["stdout"]["text"] == "done\n"
    watchers = subprocess.run(
        ["pgrep", "-f", "overspill-watchdog " + (tmp_path / "pid0").read_text().strip()],
        capture_output=True,
    )
    assert watchers.stdout == b""
