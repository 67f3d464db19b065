"""``overspill-shell COMMAND``: a harness's own shell through overspill, as Claude
Code's ``CLAUDE_CODE_SHELL_PREFIX`` runs it.

What a command prints within the harness's cut reaches it unchanged, byte for
byte and in the order written; a longer output keeps its head (written as it
came), a gap line, its tail and the truncation line, and is stored whole. The
command keeps what the harness chose (its environment, stdin, exit status). In a
sandbox the output is handed out and the harness's hook stores it under the id
the model was shown. The real harness is driven in tests/test_harnesses.py.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from overspill.api.agent.harness_shell import label_of, shell_of
from tests.helpers import cli_env, run_cli

pytestmark = pytest.mark.one_store

SEQ = "".join(f"{i}\n" for i in range(1, 200_001)).encode()


def wrapped(command: str, cwd_file: str = "/tmp/overspill-test-cwd", stdin: bool = False) -> str:
    """``command`` as Claude Code hands a Bash call to its shell prefix (which
    gives it no stdin, unless ``stdin``)."""
    null = "" if stdin else " < /dev/null"
    return f"eval {shlex.quote(command)}{null} && pwd -P >| {cwd_file}"


SHELL = [str(Path(sys.executable).with_name("overspill-shell"))]  # as Claude Code runs it
README_PATH = Path(__file__).resolve().parents[1] / "README.md"


def _prefix(
    env: dict[str, str],
    command: str,
    *,
    cwd: Path | None = None,
    stdin: bytes | None = None,
    bash_call: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """The command as Claude Code runs it: stdout and stderr into one file."""
    out_path = Path(env["OVERSPILL_HOME"]).parent / f"out-{time.monotonic_ns()}"
    cwd_file = str(out_path) + ".cwd"
    with open(out_path, "wb") as out:
        done = subprocess.run(
            [*SHELL, wrapped(command, cwd_file, stdin is not None) if bash_call else command],
            env=env,
            cwd=cwd,
            input=stdin,
            stdout=out,
            stderr=out,
            timeout=120,
            check=False,
        )
    done.stdout = out_path.read_bytes()
    return done


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return cli_env(OVERSPILL_HOME=tmp_path / "store", OVERSPILL_OWNER="agent:claude-code")


def test_a_short_output_reaches_the_harness_unchanged_in_the_order_written(
    env: dict[str, str],
) -> None:
    done = _prefix(env, "echo one; echo two >&2; printf 'three'; exit 3")
    assert done.returncode == 3
    assert done.stdout == b"one\ntwo\nthree"
    empty = _prefix(env, "true")
    assert (empty.returncode, empty.stdout) == (0, b"")
    # Up to the cut (head and tail, 25,000 bytes), every byte as printed.
    fits = "".join(f"{i}\n" for i in range(1, 4_800)).encode()
    assert len(fits) < 25_000
    assert _prefix(env, "seq 1 4799").stdout == fits


def test_a_long_output_keeps_its_head_gap_tail_and_line_and_is_stored_whole(
    env: dict[str, str],
) -> None:
    done = _prefix(env, "seq 1 200000; echo done >&2; exit 4")
    assert done.returncode == 4
    printed = SEQ + b"done\n"
    text = done.stdout
    assert len(text) < 27_000  # under Claude Code's cut with its own lines
    assert text[:10_000] == printed[:10_000]  # the head, as it was written
    assert text[10_000:].startswith(b"\n[... bytes 10000-")
    lines = text.decode().split("\n")
    marker = lines[-2]
    m = re.fullmatch(
        r"\[output truncated; full output: artifact (art_\w+); shown lines 1-2221 and the "
        r"start of line 2222 \(bytes 0-10000\) and lines (\d+)-200001 \(bytes (\d+)-1288900\) "
        r"of 200001 lines, 1288900 bytes; not shown: the rest of line 2222, lines 2223-(\d+), "
        r"bytes 10000-(\d+); read more: artifact_read \{\"id\": \"\1\", \"offset\": 10000\}, "
        r"or search: artifact_grep \{.*\}\]",
        marker,
    )
    assert m, marker
    art, first, start = m.group(1), int(m.group(2)), int(m.group(3))
    assert int(m.group(4)) == first - 1 and int(m.group(5)) == start
    tail = text.decode().rsplit("\n[output truncated", 1)[0].split(" ...]\n", 1)[1]
    assert tail.encode() + b"\n" == printed[start:]
    stored = run_cli(env, "cat", art)
    assert stored.stdout == printed
    info = json.loads(run_cli(env, "info", art, "--json").stdout)
    assert info["source"]["exit_code"] == 4 and info["owner"] == "agent:claude-code"


def test_the_command_keeps_the_harnesss_environment_and_stdin(env: dict[str, str]) -> None:
    env = {**env, "DEPLOY_TOKEN": "tok-abcdefghijklmnop-1234", "PAGER": "less", "TERM": "xterm"}
    done = _prefix(env, 'echo "$PAGER $TERM ${#DEPLOY_TOKEN}"; cat', stdin=b"from stdin\n")
    # overspill run would scrub the token and set PAGER=cat TERM=dumb: the harness's
    # shell keeps what the harness gave it.
    assert done.stdout == b"less xterm 25\nfrom stdin\n"
    shown = _prefix(env, 'echo "token=$DEPLOY_TOKEN"')
    # ... and the token itself is masked where the output shows it.
    assert b"tok-abcdefghijklmnop-1234" not in shown.stdout
    assert shown.stdout.startswith(b"token=" + b"*" * 25)


def test_a_broken_setup_runs_the_command_without_overspill(env: dict[str, str]) -> None:
    done = _prefix({**env, "OVERSPILL_TIMEOUT_MS": "-5"}, "echo still ran; exit 2")
    assert done.returncode == 2
    assert done.stdout.endswith(b"still ran\n")
    assert b"the command runs without overspill" in done.stdout


def test_a_signal_ends_the_commands_tree_and_leaves_nothing(
    env: dict[str, str], tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    proc = subprocess.Popen(
        [*SHELL, wrapped(f"sleep 300 & echo $! > {pidfile}; wait")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pidfile.read_text())
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{child}").exists()


def test_the_shell_and_command_are_read_from_claude_codes_wrapping() -> None:
    wrapped = (
        "source /h/.claude/shell-snapshots/snapshot-zsh-1-a.sh 2>/dev/null || true && "
        "eval 'make test 2>&1 | tee '\\''log'\\''' < /dev/null && pwd -P >| /tmp/claude-1-cwd"
    )
    assert shell_of(wrapped) == "zsh"
    assert shell_of(wrapped.replace("snapshot-zsh-", "snapshot-bash-")) == "bash"
    assert label_of(wrapped) == "make test 2>&1 | tee 'log'"
    assert label_of("echo plain") is None


def test_in_a_sandbox_the_output_is_handed_out_and_the_hook_stores_it_under_its_id(
    env: dict[str, str], tmp_path: Path
) -> None:
    tmp = tmp_path / "claude-tmp"
    tmp.mkdir()
    inside = {**env, "SANDBOX_RUNTIME": "1", "CLAUDE_TMPDIR": str(tmp), "TMPDIR": str(tmp)}
    inside["CLAUDE_CODE_SESSION_ID"] = "conv-9"
    done = _prefix(inside, "seq 1 200000")
    (art,) = set(re.findall(rb"artifact (art_\w+);", done.stdout))
    handoff = tmp / "overspill-handoff"
    assert sorted(p.suffix for p in handoff.iterdir()) == [".json", ".out"]
    assert (handoff.stat().st_mode & 0o777) == 0o700
    # Not in the store yet: the sandboxed process could not reach it.
    assert run_cli(env, "info", art.decode()).returncode != 0
    outside = {**env, "CLAUDE_TMPDIR": str(tmp)}
    event = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "session_id": "conv-9"}
    hook = run_cli(outside, "hook", "claude-code", stdin=json.dumps(event).encode())
    assert hook.returncode == 0 and hook.stdout == b"", hook.stderr
    assert run_cli(env, "cat", art.decode()).stdout == SEQ
    info = json.loads(run_cli(env, "info", art.decode(), "--json").stdout)
    assert (info["state"], info["session_id"]) == ("complete", "conv-9")
    assert list(handoff.iterdir()) == []


def test_a_hand_off_that_cannot_be_stored_is_said_to_the_model(
    env: dict[str, str], tmp_path: Path
) -> None:
    tmp = tmp_path / "claude-tmp"
    tmp.mkdir()
    inside = {**env, "SANDBOX_RUNTIME": "1", "CLAUDE_TMPDIR": str(tmp)}
    done = _prefix(inside, "seq 1 100000")
    (art,) = set(re.findall(rb"artifact (art_\w+);", done.stdout))
    (tmp / "overspill-handoff" / f"{art.decode()}.out").unlink()  # lost before the hook ran
    event = {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash"}
    outside = {**env, "CLAUDE_TMPDIR": str(tmp)}
    hook = run_cli(outside, "hook", "claude-code", stdin=json.dumps(event).encode())
    assert hook.returncode == 0
    said = json.loads(hook.stdout)["hookSpecificOutput"]
    assert said["hookEventName"] == "PostToolUseFailure"
    assert f"{art.decode()} could not be stored" in said["additionalContext"]


def test_what_is_no_bash_call_runs_exactly_as_without_overspill(env: dict[str, str]) -> None:
    """Claude Code starts its MCP servers and hooks through the prefix too."""
    done = _prefix(env, "seq 1 200000; exit 5", bash_call=False)
    assert (done.returncode, done.stdout) == (5, SEQ)


def test_outside_a_sandbox_the_store_is_used_directly(env: dict[str, str]) -> None:
    assert not os.environ.get("SANDBOX_RUNTIME")
    done = _prefix(env, "seq 1 100000")
    (art,) = set(re.findall(rb"artifact (art_\w+);", done.stdout))
    assert run_cli(env, "info", art.decode()).returncode == 0


def test_the_readmes_claude_code_view_is_what_the_shell_prints(env: dict[str, str]) -> None:
    """The README shows what Claude Code's model reads for ``seq 1 200000``; each
    of its lines (the ids aside; ``…`` stands for lines left out, "Exit code 4"
    is Claude Code's own) is a line of what overspill-shell prints, in order."""
    readme = README_PATH.read_text()
    start = readme.index("For `seq 1 200000`, captured\nthrough the harness:")
    block = re.search(r"```\n(.*?)```", readme[start:], re.S)
    assert block is not None
    done = _prefix(env, "seq 1 200000; echo done >&2; exit 4")
    assert done.returncode == 4
    same_id = re.compile(r"art_[0-9A-Z]{26}")
    got = [same_id.sub("art_ID", line) for line in done.stdout.decode().split("\n")]
    if os.environ.get("TEST_OVERSPILL_UPDATE_GOLDEN") == "1":
        # The README follows the code: each bracketed line (a sentence of ours)
        # becomes the printed line that starts as it does.
        shown = block.group(1).splitlines()
        for i, line in enumerate(shown):
            head = same_id.sub("art_ID", line)[:12]
            if line.startswith("[") and head not in ("[exit code: ",):
                found = next((g for g in got if g.startswith(head)), None)
                if found is not None:
                    old_id = same_id.search(line)
                    shown[i] = found.replace("art_ID", old_id.group(0)) if old_id else found
        fresh = "\n".join(shown) + "\n"
        text = readme[:start] + readme[start:].replace(block.group(1), fresh, 1)
        README_PATH.write_text(text)
        readme = text
        block = re.search(r"```\n(.*?)```", readme[start:], re.S)
        assert block is not None
    at = 0
    for line in block.group(1).splitlines():
        if line in ("…", "Exit code 4"):
            continue
        line = same_id.sub("art_ID", line)
        assert line in got[at:], line
        at = got.index(line, at) + 1
