"""The text the model sees. The legacy strings are contract; the artifact-aware
forms add to them (still "output truncated", the spill path kept in the same line)
so a consumer parsing the old form keeps working."""

from __future__ import annotations

import re
from typing import NamedTuple

from .results import CollectedOutput, ExecResult, StreamView
from .wording import MASKED, RenderMode, status_markers, truncation_line


def stream_text(out: CollectedOutput, view: StreamView | None, mode: RenderMode) -> str:
    """One stream as the model sees it: the shown text, then the truncation line
    (or, for a whole stream with a secret masked in it, a line saying so)."""
    body = out.text if mode == "legacy" or view is None else view.text
    if not out.truncated:
        if out.redacted and mode != "legacy":
            sep = "\n" if body and not body.endswith("\n") else ""
            return f"{body}{sep}[{out.redacted}, {MASKED}]"
        return body
    return f"{body}\n{truncation_line(out, view, mode)}"


def join_streams(stdout: str, stderr: str) -> str:
    body = stdout
    if stderr:
        if body and not body.endswith("\n"):
            body += "\n"
        body += "[stderr]\n" + stderr
    return body


def render_result(
    stdout: str,
    stderr: str,
    *,
    exit_code: int | None,
    signal: str | None,
    timed_out: bool,
    timeout_ms: float | None,
) -> str:
    body = join_streams(stdout, stderr) or "(no output)"
    markers = status_markers(
        exit_code=exit_code, signal=signal, timed_out=timed_out, timeout_ms=timeout_ms
    )
    if not markers and parse_exit_status(body) != ExitStatus(body, 0, None):
        # The command itself printed something that reads as a final marker: a
        # newline after it keeps parse_exit_status from taking it for ours.
        body += "\n"
    return "\n".join([body, *markers])


def result_markers(result: ExecResult) -> list[str]:
    """``status_markers`` of a finished run."""
    return status_markers(
        exit_code=result.exit_code,
        signal=result.signal,
        timed_out=result.timed_out,
        timeout_ms=result.timeout_ms,
    )


class ExitStatus(NamedTuple):
    body: str
    exit_code: int | None
    signal: str | None


_SIGNAL_RE = re.compile(r"\n\[killed by signal: ([^\]\n]+)\]\Z")
_EXIT_RE = re.compile(r"\n\[exit code: (-?[0-9]+)\]\Z")


def parse_exit_status(text: str) -> ExitStatus:
    """Read the status back from rendered text. A marker counts only as the very
    end of the string and only after a newline; anything else is output."""
    if (m := _SIGNAL_RE.search(text)) is not None:
        return ExitStatus(text[: m.start()], None, m.group(1))
    if (m := _EXIT_RE.search(text)) is not None:
        return ExitStatus(text[: m.start()], int(m.group(1)), None)
    return ExitStatus(text, 0, None)
