"""The text the model sees. The legacy strings are contract; the artifact-aware
forms add to them (still "output truncated", the spill path kept in the same line)
so a consumer parsing the old form keeps working."""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from .results import CollectedOutput, ExecResult
from .view import READ_WINDOW, StreamView, hex_call
from .wording import MASKED, call

RenderMode = Literal["artifact", "legacy"]


def truncation_line(out: CollectedOutput, view: StreamView | None, mode: RenderMode) -> str:
    art = out.artifact
    stored = art is not None and art.state != "failed"
    if mode == "legacy":
        # The old line exactly; where the old system had only "(unavailable)" but
        # an artifact holds the whole stream, it is named instead.
        where = out.spill_path or (f"artifact://{art.id}" if art is not None and stored else None)
        return f"[output truncated; full output: {where or '(unavailable)'}]"
    assert view is not None
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
    total = out.total_bytes
    not_shown: list[str] = []
    if view.binary:
        parts.append(f"binary output of {total} bytes, none of it shown")
    elif view.head_end:
        parts.append(f"shown {_head_and_tail(view)} of {view.total_lines} lines, {total} bytes")
        not_shown.append(_between(view))
    else:
        span = _lines(view.first_line, view.last_line)
        shown = f"shown {span} of {view.total_lines} (bytes {view.start}-{view.end} of {total})"
        if view.mid_line:
            shown += f", line {view.first_line} from byte {view.start}"
        parts.append(shown)
        if view.start > 0:
            before = view.first_line - 1
            lines = f"{_lines(1, before)}, " if before >= 1 else ""
            start_of = f" (with the start of line {view.first_line})" if view.mid_line else ""
            not_shown.append(f"{lines}bytes 0-{view.start}{start_of}")
    if len(view.clipped) == 1:
        ((line, lo, hi),) = view.clipped
        not_shown.append(f"bytes {lo}-{hi} of the clipped line {line}")
    elif view.clipped:
        hidden = sum(hi - lo for _, lo, hi in view.clipped)
        not_shown.append(
            f"{hidden} bytes from the middle of {len(view.clipped)} clipped long lines "
            "(each says which)"
        )
    if not_shown:
        parts.append("not shown: " + " and ".join(not_shown))
    if view.quoted:
        numbers = ", ".join(map(str, view.quoted))
        word = "line" if len(view.quoted) == 1 else "lines"
        parts.append(f"quoted before them: failure-like {word} {numbers} of the part not shown")
    if view.escapes_removed:
        parts.append("terminal escape sequences removed")
    if out.redacted:
        parts.append(f"{out.redacted}, {MASKED}")
    reason = (out.storage_error or "").replace("\n", " ").replace("]", ")")
    # A capped artifact (its cap, or the owner's quota) holds a readable prefix:
    # the reason says why the rest is missing, and the calls read what is there.
    prefix = art is not None and art.state == "capped" and art.size_bytes > 0
    if art is not None and art.state == "capped":
        parts.append(
            f"artifact holds the first {art.size_bytes} bytes (capped{': ' + reason if reason else ''}); "
            f"bytes {art.size_bytes}-{max(art.size_bytes, view.start)} are not stored"
        )
    if reason and not prefix:
        parts.append(f"artifact unavailable: {reason}")
    elif art is not None:
        grep = call("artifact_grep", id=art.id, pattern="<regex>")
        parts.append(f"read more: {_read_more(art.id, art.size_bytes, view)}, or search: {grep}")
    return "[" + "; ".join(parts) + "]"


def _read_more(artifact_id: str, stored: int, view: StreamView) -> str:
    """The call that reads on from what is shown: the window just before the shown
    tail (or, after a head, the gap's start), so the reader meets what it saw
    exactly; binary output as hex."""
    if view.binary:
        return hex_call(artifact_id, 0)
    if view.head_end:
        return call("artifact_read", id=artifact_id, offset=view.head_end)
    if view.max_lines and view.first_line > 1 and view.start <= stored:
        # A client that cuts by lines reads on by lines: those just before these.
        first = max(1, view.first_line - view.max_lines)
        lines = call(
            "artifact_read", id=artifact_id, start_line=first, line_count=view.first_line - first
        )
        return f"{lines} (the lines just before these)"
    end = min(view.start, stored)
    begin = max(0, end - READ_WINDOW)
    if end <= 0:
        return call("artifact_read", id=artifact_id, offset=0)
    which = "the bytes just before these" if end == view.start else "the last bytes stored"
    return f"{call('artifact_read', id=artifact_id, offset=begin, limit=end - begin)} ({which})"


def _head_and_tail(view: StreamView) -> str:
    """The lines and bytes a head and a tail show."""
    head = _lines(1, view.head_lines) if view.head_lines else ""
    if view.head_cut_line:
        cut = f"the start of line {view.head_lines + 1}"
        head = f"{head} and {cut}" if head else cut
    tail = _lines(view.first_line, view.last_line)
    if view.mid_line:
        tail = f"{tail} from byte {view.start}"
    return f"{head} (bytes 0-{view.head_end}) and {tail} (bytes {view.start}-{view.end})"


def _between(view: StreamView) -> str:
    """What lies between a head and a tail."""
    first = view.head_lines + 1
    said = []
    if view.head_cut_line:
        said.append(f"the rest of line {first}")
        first += 1
    last = view.first_line - (0 if view.mid_line else 1)
    if first <= last:
        said.append(_lines(first, last))
    said.append(f"bytes {view.head_end}-{view.start}")
    return ", ".join(said)


def _lines(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


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


def result_markers(result: ExecResult) -> list[str]:
    """``status_markers`` of a finished run."""
    return status_markers(
        exit_code=result.exit_code,
        signal=result.signal,
        timed_out=result.timed_out,
        timeout_ms=result.timeout_ms,
    )


def dropped_line(
    missing: list[tuple[str, tuple[int, int], str | None, str | None]],
    paths: list[str],
    mode: RenderMode,
) -> str:
    """The lossy-read line. Its prefix is the legacy one (``…memory; full output: ``);
    the artifact form adds each stream's missing bytes and where they are."""
    where = ", ".join(paths) if paths else "(unavailable)"
    line = f"[some output was dropped from memory; full output: {where}"
    if mode == "legacy":
        return line + "]"
    for stream, (lo, hi), art, error in missing:
        if art and not error:
            holder = f"in artifact {art}: {call('artifact_read', id=art, offset=lo)}"
        else:
            reason = (error or "no artifact").replace("\n", " ").replace("]", ")")
            holder = f"not stored: {reason}"
        line += f"; {stream} bytes {lo}-{hi} not shown ({holder})"
    return line + "]"


def _ms(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else str(value)


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
