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

from overspill.shell.wording import call

if TYPE_CHECKING:
    from ..client.calls import ApiCalls
    from .json_stream import JsonStream


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
    said = "; ".join(f"{art} could not be stored ({why})" for art, why in failed)
    return {
        "hookSpecificOutput": {
            "hookEventName": name,
            "additionalContext": f"[overspill: {said}; only the part shown above was kept]",
        }
    }


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
    read = call("artifact_read", id=art, offset=0)
    state = "stored whole" if stored.get("state") == "complete" else f"{stored.get('state')}"
    # No "<regex>" placeholder: Gemini CLI escapes angle brackets in a hook's note.
    text = (
        f"[overspill: this output as Gemini CLI handed it over ({stored.get('total_bytes')} "
        f"bytes, {lines} lines) is {state} as artifact {art}; read it: {read} (continue at "
        f"the offset each answer gives), or search it with artifact_grep and this id]"
    )
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
