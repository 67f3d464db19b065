"""Installed into Claude Code, overspill changes nothing the person chose.

Each case runs the real Claude Code (headless, against the stand-in model) twice
on the same configuration: once as the person has it, once after ``overspill
install claude-code --shell``. The stand-in plays the same model both times --
a read-only command, a command that writes a file, one that deletes one -- and
what the model received for each call, and what happened on disk, must be the
same: a command that ran without asking runs, one that was refused (a headless
run refuses what it would have asked about) is refused with the same words.
The cases cover the settings files' rules (user, project, local; allow, ask,
deny), the command-line flags (``--allowedTools``, ``--disallowedTools``,
``--permission-mode`` in every mode) and Claude Code's own allowance for
read-only commands; and its sandbox, which must still confine a command run
through overspill while overspill stores its output.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from overspill.shell.wording import find_calls
from tests.harnesses.clients import HARNESSES
from tests.harnesses.standin import Action, Reply, StandIn, ToolCall, Turn
from tests.helpers import cli_env, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.harness]

CALLS = [
    ToolCall("Bash", {"command": "ls", "description": "list"}),
    ToolCall("Bash", {"command": "touch made.txt && echo made", "description": "make"}),
    ToolCall("Bash", {"command": "rm gone.txt && echo removed", "description": "remove"}),
]
"""A read-only command, one that writes a file, one that deletes one."""

ALLOW_ALL = {"permissions": {"allow": ["Bash"]}}


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2)


CASES: dict[str, dict[str, Any]] = {
    # Claude Code's own allowance: a read-only command runs, the rest is refused.
    "no rules": {"settings": {}},
    "user allow touch": {"settings": {"permissions": {"allow": ["Bash(touch:*)"]}}},
    "project deny rm": {
        "settings": ALLOW_ALL,
        "files": {".claude/settings.json": _json({"permissions": {"deny": ["Bash(rm:*)"]}})},
    },
    "local ask touch": {
        "settings": ALLOW_ALL,
        "files": {
            ".claude/settings.local.json": _json({"permissions": {"ask": ["Bash(touch:*)"]}})
        },
    },
    "user deny rm": {"settings": {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}},
    "--allowedTools Bash": {"settings": {}, "flags": ["--allowedTools", "Bash"]},
    "--allowedTools Bash(touch:*)": {"settings": {}, "flags": ["--allowedTools", "Bash(touch:*)"]},
    "--disallowedTools Bash(rm:*)": {
        "settings": {},
        "flags": ["--allowedTools", "Bash", "--disallowedTools", "Bash(rm:*)"],
    },
    **{
        f"--permission-mode {mode}": {"settings": {}, "flags": ["--permission-mode", mode]}
        for mode in ("default", "acceptEdits", "plan", "dontAsk", "auto")
    },
    "--permission-mode bypassPermissions": {
        "settings": {},
        "flags": ["--permission-mode", "bypassPermissions"],
        # Claude Code refuses to bypass permissions as root outside a sandbox.
        "env": {"IS_SANDBOX": "1"},
    },
}


class Outcome:
    def __init__(self, received: list[str], files: set[str], root: Path, code: int) -> None:
        self.received = [_normal(text, root) for text in received]
        self.files = files
        self.code = code  # the harness's own exit status (plan mode: 1 when it refused)


def _normal(text: str, root: Path) -> str:
    """A run's text without what differs between any two runs: its folder."""
    return text.replace(str(root), "<run>")


@pytest.fixture
def short_tmp() -> Iterator[str]:
    """A temp dir with a short path: Claude Code's sandbox binds Unix sockets
    under it, and a socket's path holds at most 107 bytes."""
    path = tempfile.mkdtemp(prefix="ovs-", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _run(
    tmp_path: Path,
    name: str,
    *,
    install: bool,
    calls: list[ToolCall] | Callable[[Turn], Action] = CALLS,
    **case: Any,
) -> tuple[Outcome, list[str], Path]:
    """One headless Claude Code run of ``calls`` (or a script that sees the
    answers) on the case's configuration."""
    harness = HARNESSES["claude-code"]
    root = tmp_path / ("with" if install else "without") / re.sub(r"\W+", "-", name)
    home, work, store = root / "home", root / "work", root / "store"
    for d in (home, work):
        d.mkdir(parents=True)
    (work / "gone.txt").write_text("x\n")

    def listed(turn: Turn) -> Action:
        n = len(turn.results)
        assert isinstance(calls, list)
        return calls[n] if n < len(calls) else Reply("done")

    step = calls if callable(calls) else listed
    with StandIn("anthropic", step) as model:
        run = harness.run(
            home=home,
            work=work,
            store=store,
            model_url=model.url,
            shell=True,
            install=install,
            flags=case.get("flags", []),
            settings=case.get("settings", {}),
            files=case.get("files"),
            extra_env={"OVERSPILL_LOCAL_SERVER_IDLE_S": "2", **case.get("env", {})},
        )
    assert not model.errors, model.errors
    assert not run.foreign, run.foreign[:5]
    files = {p.name for p in work.iterdir() if not p.name.startswith(".")}
    return Outcome(model.received, files, root, run.returncode), model.received, root


@pytest.mark.parametrize("name", list(CASES))
def test_a_bash_call_runs_is_asked_about_or_refused_as_it_would_be_without_overspill(
    harness_bin: Path, tmp_path: Path, name: str
) -> None:
    case = CASES[name]
    without, _, _ = _run(tmp_path, name, install=False, **case)
    with_, _, _ = _run(tmp_path, name, install=True, **case)
    assert len(without.received) == len(CALLS), without.received
    assert with_.received == without.received
    assert (with_.files, with_.code) == (without.files, without.code)


def test_the_read_only_allowance_and_a_refusal_are_what_the_model_sees(
    harness_bin: Path, tmp_path: Path
) -> None:
    """The matrix compares like with like; this pins that the cases differ: with
    no rules, ``ls`` runs unasked and the write is refused, with overspill on."""
    outcome, _, _ = _run(tmp_path, "pinned", install=True, settings={})
    listed, made, removed = outcome.received
    assert "gone.txt" in listed
    assert "made" not in made.split("\n") and "approval" in made
    assert "removed" not in removed.split("\n")
    assert outcome.files == {"gone.txt"}


def test_the_sandbox_still_confines_a_command_and_its_output_is_stored(
    harness_bin: Path, tmp_path: Path, short_tmp: str
) -> None:
    sandbox = {"sandbox": {"enabled": True, "autoAllowBashIfSandboxed": True}}
    confined = ToolCall(
        "Bash", {"command": "touch /root/overspill-outside; echo $?", "description": "escape"}
    )
    short = {"TMPDIR": short_tmp}
    without, _, _ = _run(
        tmp_path, "sandbox", install=False, settings=sandbox, calls=[confined], env=short
    )
    with_, _, _ = _run(
        tmp_path, "sandbox", install=True, settings=sandbox, calls=[confined], env=short
    )
    assert "Read-only file system" in without.received[0]
    assert with_.received == without.received
    assert not Path("/root/overspill-outside").exists()

    # A long output of a confined command: handed out, stored by the hook under
    # the id the model reads, and read on through overspill's tool.
    count = ToolCall("Bash", {"command": "seq 1 200000", "description": "count"})

    def step(turn: Turn) -> Action:
        if not turn.results:
            return count
        if len(turn.results) == 1:
            found = find_calls(turn.results[0].rstrip().splitlines()[-1])
            if found:
                return ToolCall(*found[0])
        return Reply("done")

    long, received, root = _run(
        tmp_path,
        "sandbox-long",
        install=True,
        calls=step,
        settings=sandbox,
        flags=["--allowedTools", "mcp__overspill"],
        env=short,
    )
    assert long.code == 0
    first, window = received[0], received[1]
    (art,) = set(re.findall(r"artifact (art_\w+);", first))
    env = cli_env(OVERSPILL_HOME=root / "store")
    seq = "".join(f"{i}\n" for i in range(1, 200_001)).encode()
    assert run_cli(env, "cat", art).stdout == seq
    assert "offset 10000" in window or "bytes 10000-" in window, window[:300]
