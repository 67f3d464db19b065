"""The text the model sees. The legacy strings are contract; the artifact-aware
forms add to them (still "output truncated", the spill path kept in the same line)
so a consumer parsing the old form keeps working."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from overspill.shell.calls import call
from overspill.shell.results import CollectedOutput

RenderMode = Literal["artifact", "legacy"]


def truncation_line(out: CollectedOutput, shown: int, mode: RenderMode) -> str:
    if mode == "legacy":
        return f"[output truncated; full output: {out.spill_path or '(unavailable)'}]"
    art = out.artifact
    stored = art is not None and art.state != "failed"
    parts = ["output truncated"]
    # The spill path stays right after "full output: ", as in the legacy line.
    if out.spill_path:
        parts.append(f"full output: {out.spill_path}")
        if art is not None and stored:
            parts.append(f"artifact {art.id}")
    elif art is not None and stored:
        parts.append(f"full output: artifact {art.id}")
    else:
        parts.append("full output: (unavailable)")
    parts.append(f"shown last {shown} of {out.total_bytes} bytes")
    if art is not None and art.state == "capped":
        parts.append(
            f"artifact holds the first {art.size_bytes} bytes (capped); "
            f"bytes {art.size_bytes}-{out.total_bytes - shown} are not stored"
        )
    if out.storage_error:
        reason = out.storage_error.replace("\n", " ").replace("]", ")")
        parts.append(f"artifact unavailable: {reason}")
    elif art is not None:
        read = call("artifact_read", id=art.id, offset=0)
        grep = call("artifact_grep", id=art.id, pattern="<regex>")
        parts.append(f"read more: {read}, or search: {grep}")
    return "[" + "; ".join(parts) + "]"


def stream_text(out: CollectedOutput, shown: int, mode: RenderMode) -> str:
    if not out.truncated:
        return out.text
    return f"{out.text}\n{truncation_line(out, shown, mode)}"


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
    return "\n".join([body, *markers])


def status_markers(
    *, exit_code: int | None, signal: str | None, timed_out: bool, timeout_ms: float | None
) -> list[str]:
    """The marker lines that end a rendered result (none for a plain exit 0)."""
    markers = []
    if timed_out:
        markers.append(f"[timed out after {_ms(timeout_ms)}ms]")
    if signal:
        markers.append(f"[killed by signal: {signal}]")
    elif exit_code not in (0, None):
        markers.append(f"[exit code: {exit_code}]")
    return markers


def dropped_line(
    missing: list[tuple[str, tuple[int, int], str | None]],
    paths: list[str],
    mode: RenderMode,
) -> str:
    where = ", ".join(paths) if paths else "(unavailable)"
    if mode == "legacy":
        return f"[some output was dropped from memory; full output: {where}]"
    gaps = []
    for stream, (lo, hi), art in missing:
        holder = f" (in artifact {art})" if art else ""
        gaps.append(f"{stream} bytes {lo}-{hi}{holder}")
    return f"[some output was dropped from memory: {', '.join(gaps)}; full output: {where}]"


def _ms(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else str(value)


@dataclass(frozen=True)
class ExitStatus:
    body: str
    exit_code: int | None
    signal: str | None


_SIGNAL_RE = re.compile(r"\n\[killed by signal: ([^\]\n]+)\]\Z")
_EXIT_RE = re.compile(r"\n\[exit code: (-?\d+)\]\Z")


def parse_exit_status(text: str) -> ExitStatus:
    """Read the status back from rendered text. A marker counts only as the very
    end of the string and only after a newline; anything else is output."""
    if (m := _SIGNAL_RE.search(text)) is not None:
        return ExitStatus(text[: m.start()], None, m.group(1))
    if (m := _EXIT_RE.search(text)) is not None:
        return ExitStatus(text[: m.start()], int(m.group(1)), None)
    return ExitStatus(text, 0, None)
