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
    done = subprocess.run(
        ["sh", "-e", "-c", block.group(1)],  # POSIX sh: no job control to lean on
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert '"code":"offset_conflict"' in done.stdout
    assert '"text":"line one\\nline two\\nline three\\n"' in done.stdout
    # Nothing is left running: the walk-through stopped its own server.
    left = subprocess.run(["pgrep", "-f", "serve --port 8799"], capture_output=True, text=True)
    assert left.stdout == "", left.stdout
