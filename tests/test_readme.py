"""The README's code blocks run as pasted: its Python blocks each alone and all in
order, against a fresh home, and the HTTP walk-through under POSIX sh."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

pytestmark = pytest.mark.slow


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env["OVERSPILL_HOME"] = str(tmp_path / "home")
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return env


BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


def _python(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script],
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )


def test_the_python_snippets_run_as_pasted_in_order(tmp_path: Path) -> None:
    assert len(BLOCKS) >= 4
    done = _python("\n".join(BLOCKS), tmp_path)
    assert done.returncode == 0, done.stderr
    assert "[output truncated; full output:" in done.stdout
    assert "99990:99990" in done.stdout  # the grep through the tools found its lines


@pytest.mark.parametrize("n", range(len(BLOCKS)))
def test_each_python_snippet_runs_alone_in_a_fresh_interpreter(n: int, tmp_path: Path) -> None:
    """A reader pastes one block, not the page: each imports and builds what it uses."""
    done = _python(BLOCKS[n], tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_remote_sink_walk_through_runs_as_pasted(tmp_path: Path) -> None:
    section = README[README.index("### Stream into overspill from any language") :]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None
    env = _env(tmp_path)
    env["TMPDIR"] = str(tmp_path)  # its mktemp home lands here, where it can be found
    done = subprocess.run(
        ["sh", "-e", "-c", block.group(1)],  # POSIX sh: no job control to lean on
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert '"code":"offset_conflict"' in done.stdout
    assert '"text":"line one\\nline two\\nline three\\n"' in done.stdout
    # Nothing is left running: the walk-through stopped its own server (the local
    # server `token create` used ends when idle; the suite's fixture stops it).
    assert _servers_with_home_under(tmp_path) == []


def _servers_with_home_under(root: Path) -> list[str]:
    """`overspill serve` processes whose OVERSPILL_HOME lies under ``root``."""
    mark = f"OVERSPILL_HOME={root}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b" serve " in cmdline and any(v.startswith(mark) for v in environ.split(b"\0")):
            found.append(cmdline.decode(errors="replace"))
    return found


def test_a_server_whose_port_is_taken_says_so_in_one_line_and_exits_non_zero(
    tmp_path: Path,
) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            ["overspill", "serve", "--port", str(port)],
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode != 0
    assert done.stderr.splitlines() == [
        f"overspill: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


def test_the_run_json_keys_the_readme_lists_are_the_result_records_fields() -> None:
    from overspill.shell.results import ArtifactRef, CollectedOutput, ExecResult

    section = README[README.index("`--json` prints") :]
    listed = re.findall(r'`\{("[^`]*)\}`', section)[:3]
    keys = [re.findall(r'"(\w+)"', group) for group in listed]
    assert keys == [
        list(ExecResult._fields),
        list(CollectedOutput._fields),
        list(ArtifactRef._fields),
    ]
