"""What each real harness hands its model, when overspill answers.

Claude Code, Codex and Gemini CLI (pinned versions from npm, headless) are
configured in their own config files to run ``overspill mcp``, and pointed at a
stand-in model endpoint on loopback. The stand-in plays the model: it calls
overspill's tools, copies the call each answer prints to continue, and records
every request, so these tests assert the text the model actually received --
not what overspill sent -- and follow each continuation to its end through the
harness. Each run is traced: a connect() to anything but loopback fails it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest

from overspill.api.agent.harnesses import budget_for
from overspill.shell.wording import find_calls
from tests.harnesses.clients import (
    HARNESSES,
    Harness,
)
from tests.harnesses.standin import Action, Reply, StandIn, ToolCall, Turn

pytestmark = [pytest.mark.slow, pytest.mark.harness]

CLIENT_NAMES = {
    "claude-code": "claude-code",
    "codex": "codex-mcp-client",
    "gemini": "gemini-cli-mcp-client",
    "opencode": "opencode",
}

Steps = Generator[Action, str, None]


@pytest.fixture(params=list(HARNESSES))
def harness(request: pytest.FixtureRequest, harness_bin: Path) -> Harness:
    return HARNESSES[request.param]


class Planned:
    """The stand-in's script from a generator: it yields the model's next action
    and is sent the text of each tool result. The same number of results always
    gets the same action (a harness may resend a request)."""

    def __init__(self, steps: Callable[[], Steps]) -> None:
        self._gen = steps()
        self._actions: list[Action] = []
        self.offered: list[str] = []  # the tools of the first turn, as the harness named them

    def __call__(self, turn: Turn) -> Action:
        if not self.offered:
            self.offered = list(turn.tools)
        want = len(turn.results)
        while len(self._actions) <= want:
            try:
                if not self._actions:
                    action = next(self._gen)
                else:
                    action = self._gen.send(turn.results[len(self._actions) - 1])
            except StopIteration:
                action = Reply("done")
            self._actions.append(action)
        return self._actions[want]


class Drive:
    """One harness run: a fresh home for the harness and one for overspill."""

    def __init__(self, harness: Harness, tmp_path: Path) -> None:
        self.harness = harness
        self.home = tmp_path / "harness-home"
        self.work = tmp_path / "work"
        self.store = tmp_path / "overspill-home"
        for d in (self.home, self.work):
            d.mkdir()

    def __call__(
        self, steps: Callable[[], Steps], *, shell: bool = False, env: dict[str, str] | None = None
    ) -> list[str]:
        self.planned = Planned(steps)
        with StandIn(self.harness.dialect, self.planned) as model:
            run = self.harness.run(
                home=self.home,
                work=self.work,
                store=self.store,
                model_url=model.url,
                shell=shell,
                extra_env=env,
            )
        assert not model.errors, model.errors
        assert not run.foreign, f"{self.harness.key} reached past loopback: {run.foreign[:5]}"
        assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
        return model.received


@pytest.fixture
def drive(harness: Harness, tmp_path: Path) -> Iterator[Drive]:
    yield Drive(harness, tmp_path)


def follow(first: ToolCall, limit: int = 40) -> Callable[[], Steps]:
    """Call ``first``, then the call each answer ends with, until none is printed."""

    def steps() -> Steps:
        action: ToolCall = first
        for _ in range(limit):
            text = yield action
            calls = find_calls(_last_line(text))
            if not calls:
                return
            action = ToolCall(*calls[0])

    return steps


def _last_line(text: str) -> str:
    """The answer's last line, without a harness's closing wrapper."""
    lines = [ln for ln in text.rstrip().split("\n") if ln and not ln.startswith("</untrusted")]
    return lines[-1] if lines else ""


def _answer(text: str) -> str:
    """overspill's answer inside what the harness wrapped around it (Codex puts a
    'Wall time' line and 'Output:' before it, Gemini CLI an untrusted-context
    envelope around it)."""
    m = re.match(r"Wall time: [0-9.]+ seconds\nOutput:", text)
    if m:
        text = text[m.end() :]
    m = re.match(r"<untrusted_context>\n(.*)\n</untrusted_context>\Z", text, re.S)
    return m.group(1) if m else text


SEQ = "".join(f"{i}\n" for i in range(1, 200_001)).encode()


# -- bash: the tail, the id, and the call that reads on ----------------------------------


def test_an_overflowing_bash_reaches_the_model_whole_with_its_id_and_the_read_that_continues(
    drive: Drive,
) -> None:
    received = drive(follow(ToolCall("bash", {"command": "seq 1 200000"}), limit=3))
    first = _answer(received[0])
    budget = budget_for(CLIENT_NAMES[drive.harness.key])
    assert len(first.encode()) <= budget.answer_bytes
    if budget.answer_lines is not None:  # (opencode cuts by lines too)
        assert first.count("\n") < budget.answer_lines
    body, _, marker = first.rpartition("\n[output truncated")
    marker = "[output truncated" + marker
    before = "lines" if budget.answer_lines is not None else "bytes"
    m = re.fullmatch(
        r"\[output truncated; full output: \S+; artifact (art_\w+); shown lines (\d+)-200000 "
        r"of 200000 \(bytes (\d+)-1288895 of 1288895\); not shown: lines 1-(\d+), bytes "
        rf"0-(\d+); read more: artifact_read (\{{.*?\}}) \(the {before} just before these\), or "
        r"search: artifact_grep \{.*\}\]",
        marker,
    )
    assert m, marker[-600:]
    first_line, start = int(m.group(2)), int(m.group(3))
    # The lines shown are the output's own, from the line and byte it names.
    assert body == SEQ[start:].decode()
    assert body.split("\n", 1)[0] == str(first_line)
    # The continuation the marker printed was followed through the harness twice.
    assert len(received) == 3
    for answer, end in ((received[1], start), (received[2], None)):
        text = _answer(answer)
        header, _, rest = text.partition("\n")
        shown, _, footer = rest.rpartition("\n")
        span = re.search(r"bytes (\d+)-(\d+)", header)
        assert span, header[:300]
        lo, hi = int(span.group(1)), int(span.group(2))
        if end is not None:
            assert hi == end  # the window just before the tail shown first
        if re.match(r"\[art_\w+: lines ", header):
            shown += "\n"  # (a line window shows each line without its newline)
        assert shown == SEQ[lo:hi].decode(), header[:300]
        assert shown.count("\n") < (budget.answer_lines or len(shown) + 1)
        assert "the whole output is stored" in header
        if end is None and budget.answer_lines is not None:
            # Read on by lines from the window before the tail: the tail, to the end.
            assert footer == "[end of output: you have seen up to its last byte]", footer
            continue
        assert footer.startswith("[continue: artifact_read {"), footer[-300:]


# -- grep and search: the rows, the header, every page ------------------------------------


def test_grep_pages_reach_the_model_and_are_followed_to_the_last(drive: Drive) -> None:
    def steps() -> Steps:
        text = yield ToolCall("bash", {"command": "seq 1 200000"})
        (art,) = re.findall(r"artifact (art_\w+);", text)
        yield from follow(
            ToolCall("artifact_grep", {"id": art, "pattern": "^1999[0-9]5$", "max_matches": 4})
        )()

    received = drive(steps)
    pages = [_answer(t) for t in received[1:]]
    rows = [row for page in pages for row in page.split("\n") if re.match(r"\d+:", row)]
    assert rows == [f"{n}:{n}" for n in range(199905, 200000, 10)]
    assert len(pages) == 3  # 4 + 4 + 2 matches, each page calling the next
    for page in pages[:-1]:
        assert find_calls(_last_line(page))[0][0] == "artifact_grep"
    assert find_calls(_last_line(pages[-1])) == []
    assert pages[-1].endswith("; search complete: the whole output was searched]"), pages[-1][-300:]


def test_search_across_outputs_reaches_the_model_with_the_ids_it_names(drive: Drive) -> None:
    def steps() -> Steps:
        yield ToolCall("bash", {"command": "seq 1 70000; echo 'ECONNREFUSED 10.0.0.1:5432'"})
        yield ToolCall("bash", {"command": "seq 1 70000 >&2"})
        yield ToolCall("artifact_search", {"pattern": "ECONNREFUSED", "all_sessions": True})

    received = drive(steps)
    (art,) = re.findall(r"artifact (art_\w+);", received[0])
    answer = _answer(received[2])
    assert art in answer
    assert "70001:ECONNREFUSED 10.0.0.1:5432" in answer.replace(f"{art}:", "")


# -- the harness's own shell into the store ---------------------------------------------


def test_claude_codes_own_bash_overflows_into_overspill_and_reads_on_through_its_tools(
    harness_bin: Path, tmp_path: Path
) -> None:
    from tests.helpers import cli_env, run_cli

    drive = Drive(HARNESSES["claude-code"], tmp_path)

    def steps() -> Steps:
        text = yield ToolCall("Bash", {"command": "seq 1 200000", "description": "count"})
        calls = find_calls(text.rstrip().split("\n")[-1])
        if calls:
            yield ToolCall(*calls[0])

    # The local server that the command starts idles out at once, so the traced
    # harness's last descendant ends with the run.
    received = drive(steps, shell=True, env={"OVERSPILL_LOCAL_SERVER_IDLE_S": "2"})
    first = received[0]
    assert len(first) <= 30_000  # under Claude Code's own cut: no <persisted-output>
    assert "persisted-output" not in first
    m = re.search(
        r"artifact (art_\w+); shown lines 1-2221 and the start of line 2222 \(bytes 0-10000\) "
        r"and lines (\d+)-200000 \(bytes (\d+)-1288895\) of 200000 lines",
        first,
    )
    assert m, first[-800:]
    art, start = m.group(1), int(m.group(3))
    head, _, rest = first.partition("\n[... bytes 10000-")
    assert head == SEQ[:10_000].decode()  # written as it came
    tail = rest.split(" ...]\n", 1)[1].split("\n[output truncated")[0]
    assert tail + "\n" == SEQ[start:].decode()
    # The artifact holds the whole output, and the model read on through overspill's tool.
    env = cli_env(OVERSPILL_HOME=drive.store)
    info = run_cli(env, "info", art, "--json")
    assert info.returncode == 0, info.stderr
    meta = json.loads(info.stdout)
    assert (meta["size_bytes"], meta["state"]) == (1_288_895, "complete")
    assert meta["source"]["command"] == "seq 1 200000"
    assert run_cli(env, "cat", art).stdout == SEQ
    window = _answer(received[1])
    span = re.search(r"bytes (\d+)-(\d+) of 1288895", window.partition("\n")[0])
    assert span and int(span.group(1)) == 10_000


def test_gemini_clis_own_shell_overflows_into_overspill_and_reads_on_through_its_tools(
    harness_bin: Path, tmp_path: Path
) -> None:
    from tests.helpers import cli_env, run_cli

    drive = Drive(HARNESSES["gemini"], tmp_path)

    def steps() -> Steps:
        text = yield ToolCall(
            "run_shell_command", {"command": "seq 1 200000", "description": "count"}
        )
        calls = find_calls(text)
        if calls:
            yield ToolCall(*calls[0])

    received = drive(steps, shell=True, env={"OVERSPILL_LOCAL_SERVER_IDLE_S": "2"})
    first = received[0]
    # Gemini CLI's own view of the command, as without overspill, and then
    # overspill's note: the whole output's id and the calls that read it.
    assert "Showing first 8,000 and last 32,000 characters" in first
    # (Gemini CLI hands over its output without the final newline.)
    m = re.search(
        r"<hook_context>\[overspill: this output as Gemini CLI handed it over \(1288894 "
        r"bytes, 200000 lines\) is stored whole as artifact (art_\w+); read it: ",
        first,
    )
    assert m, first[-1500:]
    art = m.group(1)
    env = cli_env(OVERSPILL_HOME=drive.store)
    meta = json.loads(run_cli(env, "info", art, "--json").stdout)
    assert (meta["size_bytes"], meta["state"]) == (1_288_894, "complete")
    assert meta["source"]["command"] == "seq 1 200000"
    assert run_cli(env, "cat", art).stdout == SEQ[:-1]
    window = _answer(received[1])
    span = re.search(r"bytes (\d+)-(\d+) of 1288894", window.partition("\n")[0])
    assert span and int(span.group(1)) == 0


def test_opencodes_own_bash_overflows_into_overspill_and_reads_on_through_its_tools(
    harness_bin: Path, tmp_path: Path
) -> None:
    from tests.helpers import cli_env, run_cli

    COMMAND = "seq 1 200000; sleep 1"

    drive = Drive(HARNESSES["opencode"], tmp_path)

    def steps() -> Steps:
        # "=bash": opencode's own shell (overspill's MCP one is ``bash`` too). The
        # pause: opencode answers when the command exits, not when its pipe is
        # drained, so under load it shows (and keeps) a prefix of the output --
        # seen in 2 of 3 runs beside the suite (anomalyco/opencode#36795, open in
        # 1.18.33). What overspill stores is what opencode kept, either way.
        text = yield ToolCall("=bash", {"command": COMMAND, "description": "count"})
        calls = find_calls(text.rstrip().split("\n")[-1])
        if calls:
            yield ToolCall(*calls[0])

    received = drive(steps, shell=True, env={"OVERSPILL_LOCAL_SERVER_IDLE_S": "2"})
    first = received[0]
    # overspill's view in place of opencode's (whose file is stored and gone).
    assert "Full output saved to" not in first
    assert first.count("\n") < 1_800 and len(first.encode()) < 46_080  # 90% of its cut
    m = re.search(
        r"\[output truncated; full output: artifact (art_\w+); shown lines (\d+)-200000 of "
        r"200000 \(bytes (\d+)-1288895 of 1288895\)",
        first,
    )
    assert m, first[-800:]
    art, start = m.group(1), int(m.group(3))
    assert first.split("\n[output truncated")[0] == SEQ[start:].decode()
    env = cli_env(OVERSPILL_HOME=drive.store)
    meta = json.loads(run_cli(env, "info", art, "--json").stdout)
    assert (meta["size_bytes"], meta["state"]) == (1_288_895, "complete")
    assert meta["source"]["command"] == COMMAND
    assert run_cli(env, "cat", art).stdout == SEQ
    outputs = drive.home / ".local" / "share" / "opencode" / "tool-output"
    assert not outputs.exists() or not any(outputs.iterdir())
    window = _answer(received[1])  # the lines just before the tail, by lines
    span = re.search(r"bytes (\d+)-(\d+)", window.partition("\n")[0])
    assert span and int(span.group(2)) == start


CODEX_SHELLS = {"shell", "shell_command", "exec_command", "local_shell", "write_stdin"}
"""The names Codex gives its own shell tools (by its config: classic, unified exec)."""


def test_codex_keeps_its_own_shell_beside_overspills_tools(
    harness_bin: Path, tmp_path: Path
) -> None:
    """``install codex`` adds the tools and leaves Codex's shell -- its sandbox and
    approval rules -- as it was (``--shell`` is refused: tests/test_install.py)."""
    drive = Drive(HARNESSES["codex"], tmp_path)

    def steps() -> Steps:
        yield Reply("nothing to run")

    drive(steps)
    offered = set(drive.planned.offered)
    assert any(name.endswith("artifact_read") or name == "tool_search" for name in offered)
    assert offered & CODEX_SHELLS, sorted(offered)
