"""``overspill run`` on a terminal: the output as the command writes it, masked,
then where the whole of it is stored; off a terminal, or under a harness, the
model's view as before. Driven through a real pseudo-terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from overspill.api.cli.live import HARNESS_VARIABLES
from tests.helpers import Process, wait_until

ROOT = Path(__file__).resolve().parents[1]
GITHUB = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"  # the built-in github_token rule


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    for name in HARNESS_VARIABLES:
        env.pop(name, None)
    env.update(OVERSPILL_HOME=str(home), OVERSPILL_OWNER="user:tester", **extra)
    return env


class Terminal:
    """A command on a pseudo-terminal (stdout and stderr both), read as it comes."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self._master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env, cwd=cwd
        )
        os.close(slave)
        self.seen = bytearray()

    def read_until(self, wanted: bytes, timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        while wanted not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0 or not self._read_once(left):
                return wanted in self.seen
        return True

    def _read_once(self, timeout: float) -> bool:
        ready, _, _ = select.select([self._master], [], [], timeout)
        if not ready:
            return True
        try:
            piece = os.read(self._master, 1 << 16)
        except OSError:  # EIO: every writer closed its side
            return False
        self.seen += piece
        return bool(piece)

    def finish(self) -> tuple[int, str]:
        while self._read_once(60):
            pass
        code = self.proc.wait(timeout=60)
        os.close(self._master)
        return code, self.seen.replace(b"\r\n", b"\n").decode()


def _overspill(*args: str) -> list[str]:
    return [sys.executable, "-m", "overspill.api.cli", *args]


def test_on_a_terminal_the_output_shows_while_the_command_still_runs(tmp_path: Path) -> None:
    gate = tmp_path / "go"
    # The command waits for the test to see its first line: without a live view
    # that line shows only at the end, after the wait gave up ("never").
    script = (
        f"echo first; echo warm >&2; for i in $(seq 300); do [ -e {gate} ] && break; "
        "sleep 0.1; done; [ -e " + str(gate) + " ] && echo second || echo never"
    )
    term = Terminal(_overspill("run", "--", script), _env(tmp_path / "home"), ROOT)
    assert term.read_until(b"first\r\n") and term.read_until(b"warm\r\n")
    gate.touch()
    code, text = term.finish()
    assert code == 0
    lines = text.splitlines()  # (stdout and stderr are two pipes: either may come first)
    assert sorted(lines[:2]) == ["first", "warm"] and lines[2:] == ["second"]  # no trailer


def test_a_live_run_ends_with_where_the_whole_output_is_and_that_call_works(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    term = Terminal(_overspill("run", "--", "seq 1 30000; echo oops >&2; exit 3"), _env(home), ROOT)
    code, text = term.finish()
    assert code == 3
    lines = text.splitlines()
    assert lines[:30000] == [str(i) for i in range(1, 30001)]  # every line, in order
    assert lines[30000] == "oops"
    trailer = lines[30001:]
    match = re.fullmatch(
        r"\[stdout: 168894 bytes, stored whole as artifact (art_\w+); "
        r"read it again: overspill cat (art_\w+)\]",
        trailer[0],
    )
    assert match is not None and match[1] == match[2], trailer
    assert trailer[1:] == ["[exit code: 3]"]
    again = subprocess.run(
        _overspill("cat", match[1]), capture_output=True, env=_env(home), cwd=ROOT, check=True
    )
    assert again.stdout == b"".join(b"%d\n" % i for i in range(1, 30001))


def test_a_secret_is_masked_on_the_terminal_as_in_the_store(tmp_path: Path) -> None:
    term = Terminal(
        _overspill("run", "--", f"echo token {GITHUB}; echo done"), _env(tmp_path / "h"), ROOT
    )
    code, text = term.finish()
    assert code == 0 and GITHUB not in text
    masked = "ghp_" + "*" * (len(GITHUB) - 4)
    assert text.startswith(f"token {masked}\ndone\n")
    assert text.splitlines()[-1].startswith("[stdout: 1 secret redacted (github_token)")


def test_off_a_terminal_under_a_harness_or_with_no_live_the_model_view_is_printed(
    tmp_path: Path,
) -> None:
    # One home for every case: its local server starts once.
    command = ["run", "--max-output-bytes", "200", "--", "seq 1 5000"]
    piped = subprocess.run(
        _overspill(*command), capture_output=True, env=_env(tmp_path / "home"), cwd=ROOT
    )
    model_view = piped.stdout.decode()
    assert not model_view.startswith("1\n2\n") and "5000\n\n[output truncated;" in model_view
    for how, env in (
        ("harness", _env(tmp_path / "home", CLAUDECODE="1")),
        ("codex", _env(tmp_path / "home", CODEX_THREAD_ID="01a24dbf")),
        ("--no-live", _env(tmp_path / "home")),
        ("setting", _env(tmp_path / "home", OVERSPILL_LIVE="off")),
    ):
        argv = _overspill(*command[:1], "--no-live", *command[1:]) if how == "--no-live" else None
        term = Terminal(argv or _overspill(*command), env, ROOT)
        code, text = term.finish()
        assert code == 0, how
        assert not text.startswith("1\n2\n"), how  # not streamed
        assert "4999\n5000\n\n[output truncated; full output:" in text, how


def test_ctrl_c_during_a_live_run_ends_the_command_and_exits_130(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"echo $$ > {pid_file}; echo started; sleep 60; echo never"
    term = Terminal(_overspill("run", "--", script), _env(tmp_path / "home"), ROOT)
    assert term.read_until(b"started\r\n")
    shell = Process.of(int(pid_file.read_text()))
    term.proc.send_signal(signal.SIGINT)  # what Ctrl-C sends overspill on a terminal
    code, text = term.finish()
    assert code == 130
    assert "never" not in text and text.startswith("started\n")
    assert wait_until(shell.gone, timeout=10)  # the command's shell is gone with it
