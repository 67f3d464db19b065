"""What overspill answers to a harness's hooks: Claude Code's ``PostToolUse`` and
``PostToolUseFailure`` on ``Bash`` (``overspill hook claude-code``), Gemini CLI's
``AfterTool`` on ``run_shell_command`` (``overspill hook gemini``).

Neither rewrites a command. A rewritten command is the one the harness's
permission rules judge (measured through both: a rule for the command no
longer matched, a rule for the wrapper let anything through), so no hook that
rewrites could keep them as the person set them. Claude Code's own Bash runs
through overspill by its shell prefix (``api.agent.harness_shell``); its hook only
stores what a command confined by its sandbox handed out
(``api.client.handoff``). Gemini CLI has no such prefix: its hook stores the
output it is handed after the command ran, and tells the model its id.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from overspill.shell.wording import gemini_stored, not_kept

if TYPE_CHECKING:
    from overspill.api.agent.json_stream import JsonStream
    from overspill.api.client.calls import ApiCalls


def claude_code_after_bash(
    event: dict[str, Any], stored: list[tuple[str, str | None]]
) -> dict[str, Any] | None:
    """The hook's answer after a Bash call (``PostToolUse`` or
    ``PostToolUseFailure``), once the hand-offs of sandboxed commands were stored
    (``stored``: id and error of each). Nothing to say when all were stored: the
    answer the model reads names them already. One that could not be stored is
    said, so the model does not take the id for a whole output."""
    failed = [(art, why) for art, why in stored if why]
    name = event.get("hook_event_name")
    if not failed or name not in ("PostToolUse", "PostToolUseFailure"):
        return None
    return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": not_kept(failed)}}


GEMINI_CUT = 40_000
"""Characters of a shell output past which Gemini CLI shows only its first 8,000
and last 32,000 and keeps the whole in a temp file of its own."""


def gemini_after_shell(stream: JsonStream, calls: ApiCalls) -> dict[str, Any] | None:
    """The hook's answer to one ``AfterTool`` event of ``run_shell_command``
    (None: nothing to add).

    Gemini CLI hands the hook the command's whole output (``returnDisplay``); one
    longer than its cut is stored as an artifact, streamed from the event as it
    is read, and the model is told its id and the calls that read and search it,
    after the part Gemini CLI shows. The command itself was never touched: its
    policy, approvals and sandbox judged and ran it as they would have."""
    event: dict[str, Any] = {}
    stored: dict[str, Any] | None = None
    for key in stream.members():
        if key != "tool_response":
            if key in _GEMINI_KEYS:
                event[key] = stream.value()
            else:
                stream.skip()
            continue
        if event.get("tool_name") != "run_shell_command":
            return None
        for field in stream.members():
            if field == "returnDisplay" and stream.is_string():
                stored = _store_long(stream.string_pieces(), event, calls)
            else:
                stream.skip()
    if stored is None:
        return None
    art = stored["id"]
    lines = stored.get("line_count", 0)
    state = "stored whole" if stored.get("state") == "complete" else f"{stored.get('state')}"
    text = gemini_stored(art, stored.get("total_bytes"), lines, state)
    return {"hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": text}}


_GEMINI_KEYS = ("session_id", "cwd", "tool_name", "tool_input")


def _store_long(
    pieces: Iterator[str], event: dict[str, Any], calls: ApiCalls
) -> dict[str, Any] | None:
    """The output (decoded pieces) as an artifact when it is longer than Gemini
    CLI's cut; None (and the rest read and dropped) when it is not."""
    head: list[str] = []
    size = 0
    for piece in pieces:
        head.append(piece)
        size += len(piece)
        if size > GEMINI_CUT:
            break
    else:
        return None
    tool_input = event.get("tool_input") if isinstance(event.get("tool_input"), dict) else {}
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    source = {"tool": "bash", "stream": "stdout", "harness": "gemini"}
    if isinstance(command, str):
        source["command"] = command
    if isinstance(event.get("cwd"), str):
        source["cwd"] = event["cwd"]
    session = event.get("session_id")
    made = calls.create(
        kind="output",
        name="bash stdout",
        session_id=session if isinstance(session, str) else None,
        source=source,
    )

    def chunks() -> Iterator[bytes]:
        yield "".join(head).encode("utf-8", "surrogatepass")
        for piece in pieces:
            yield piece.encode("utf-8", "surrogatepass")

    calls.upload(made["id"], _gathered(chunks()), complete=True)
    return calls.get(made["id"])


def _gathered(chunks: Iterator[bytes], size: int = 1 << 20) -> Iterator[bytes]:
    """Pieces of about ``size`` bytes (a request body is sent as they come)."""
    buf = bytearray()
    for chunk in chunks:
        buf += chunk
        if len(buf) >= size:
            yield bytes(buf)
            buf.clear()
    if buf:
        yield bytes(buf)


def opencode_after_bash(event: dict[str, Any], calls: ApiCalls) -> dict[str, Any] | None:
    """The answer to opencode's ``tool.execute.after`` of a bash call whose output
    it cut (its plugin hands over the event: the path of the file where opencode
    kept the whole output, the command, how it ended, what opencode showed).

    The file is stored as an artifact and deleted (it is the temp file overspill
    replaces); the answer is the view the model reads instead of opencode's: the
    tail, as stored (masked), within what opencode showed, and the truncation line
    with the artifact's id and the calls that read on. None: leave opencode's."""
    import os

    path = event.get("output_path")
    if not isinstance(path, str) or not os.path.isabs(path):
        return None
    from overspill.api.client.files import store_file

    command = event.get("command")
    source: dict[str, Any] = {"tool": "bash", "stream": "stdout", "harness": "opencode"}
    if isinstance(command, str):
        source["command"] = command
    for key, field in (("cwd", "cwd"), ("exit_code", "exit_code")):
        if event.get(key) is not None:
            source[field] = event[key]
    session = event.get("session_id")
    shown = event.get("shown")
    if isinstance(shown, str) and not _written(path, _opencode_tail(shown)):
        return None  # the file never caught up with what opencode showed: leave both
    stored = store_file(
        calls,
        path,
        remove=True,
        name="bash stdout",
        session_id=session if isinstance(session, str) else None,
        source=source,
    )
    from overspill.api.agent.harnesses import budget_for

    budget = budget_for("opencode")  # the cut of every tool answer, its own bash's too
    window = len(shown.encode()) if isinstance(shown, str) else budget.read_bytes
    view = tail_view(calls, stored, min(window, budget.read_bytes), budget.read_lines)
    return {"output": view}


def _opencode_tail(shown: str) -> bytes:
    """The end of the output in opencode's own view of it (after its notice)."""
    marker = "\n\nFull output saved to: "
    at = shown.find(marker)
    rest = shown[shown.find("\n\n", at + len(marker)) + 2 :] if at >= 0 else shown
    return rest.encode()[-4096:]


def _written(path: str, end: bytes, wait_s: float = 10.0) -> bool:
    """Whether the file ends with ``end`` yet. opencode starts the hook while the
    file it keeps an output in may still be being written (seen: 720,896 of
    1,288,895 bytes), so it is given a few seconds to catch up."""
    import os
    import time

    deadline = time.monotonic() + wait_s
    while True:
        try:
            with open(path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - len(end)))
                if f.read() == end:
                    return True
        except OSError:
            return False
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


def tail_view(
    calls: ApiCalls, info: dict[str, Any], window: int, max_lines: int | None = None
) -> str:
    """A stored output as ``overspill run`` shows a stream that overflowed: the
    last ``window`` bytes (at most ``max_lines`` lines) from a line start, then
    the truncation line."""
    from overspill.shell.results import ArtifactRef, CollectedOutput
    from overspill.shell.view import stream_view
    from overspill.shell.wording import redaction_summary, truncation_line

    size = int(info["size_bytes"])
    start = max(0, size - window)
    from overspill.artifacts.ledger.read_context import SHOWN, reading_as

    with reading_as(SHOWN):  # what the model is shown: the ledger counts it so
        tail = b"".join(calls.content(info["id"], start, size))
    total = int(info.get("total_bytes") or size)
    lines = int(info.get("line_count") or 0)
    newlines = lines - (0 if tail.endswith(b"\n") or not lines else 1)
    view = stream_view(
        b"", tail, size, newlines, truncated=True, artifact_id=info["id"], max_lines=max_lines
    )
    art = ArtifactRef(info["id"], info["state"], size, total, info.get("sha256"))
    masked = redaction_summary((info.get("source") or {}).get("redactions"))
    out = CollectedOutput("", True, total, art, redacted=masked)
    return f"{view.text}\n{truncation_line(out, view, 'artifact')}"
