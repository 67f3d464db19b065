"""Every sentence of the artifact tools' answers that is the tools' own: each
read's head and foot (what it shows, what it does not, the call that goes on),
the line spans of a window, a grep row (and the window of a long line), the
grep, info, list and save lines, and the structured data beside each text.
The handlers decide what to read; the words are here. The sentences every
surface shares (coverage, the end of what is stored, continuations, errors,
how a masked secret is shown) are in ``shell.wording``.
"""

from __future__ import annotations

from typing import Any

from overspill.artifacts.records import (
    ArtifactInfo,
    Line,
    LineWindow,
    TailWindow,
    TextWindow,
    Window,
)
from overspill.shell.wording import call, count, coverage, end_of_stored, searched

LINE_CAP = 2_000  # a grep line longer than this is shown as a window around the match


def coverage_of(w: Window) -> str:
    """Whether what is stored is the whole output, and if not, what is missing."""
    return coverage(w.state, w.size_bytes, w.total_bytes, w.error)


def info_coverage(i: ArtifactInfo) -> str:
    return coverage(i.state, i.size_bytes, i.total_bytes, i.error)


def end_of(w: Window, again: str) -> str:
    return end_of_stored(w.state, w.size_bytes, w.total_bytes, w.error, again)


def searched_all(res: Window, again: str) -> str:
    return searched(res.state, res.size_bytes, res.total_bytes, res.error, again)


def line_span(first: int, last: int, text: str, end: int, size: int) -> str:
    if last < first:
        return ""
    more = f", line {last} continues" if end < size and not text.endswith("\n") else ""
    return f", lines {first}-{last}{more}" if last > first else f", line {first}{more}"


def grep_row(art: str, ln: Line, mark: str, span: tuple[int, int] | None) -> str:
    """One grep row: the whole line, or for a line longer than ``LINE_CAP`` a window
    around the match that says which bytes of the artifact it shows and the call
    that reads the line whole."""
    text = ln.text
    if len(text.encode()) <= LINE_CAP and not ln.truncated:
        return f"{ln.number}{mark}{text}"
    lo, hi = span or (0, 0)
    room = LINE_CAP // 4
    start = max(0, lo - room)
    piece = text[start : max(hi, lo) + room][: LINE_CAP // 2]
    # Byte offsets in the artifact: the text starts at the line (or at the window
    # the search took of it); characters before the piece are counted in bytes.
    base = ln.window_offset if ln.window_offset is not None else ln.offset
    first = base + len(text[:start].encode())
    last = first + len(piece.encode())
    span_of = f"bytes {ln.offset}-{ln.end}" if ln.end is not None else f"from byte {ln.offset}"
    size = f"{ln.end - ln.offset} bytes, " if ln.end is not None else ""
    whole = call("artifact_read", id=art, offset=ln.offset)
    return (
        f"{ln.number}{mark}{'…' if first > ln.offset else ''}{piece}… [line {ln.number} is "
        f"{size}{span_of}; shown: bytes {first}-{last}; all of it from byte {ln.offset}: {whole}]"
    )


def data(w: Window, start: int, end: int) -> dict[str, Any]:
    return {
        "start": start,
        "end": end,
        "size_bytes": w.size_bytes,
        "total_bytes": max(w.total_bytes, w.size_bytes),
        "state": w.state,
    }


# -- artifact_read: heads and feet ---------------------------------------------------


def continue_with(again: str) -> str:
    return f"[continue: {again}]"


def window_head(art: str, w: TextWindow, lines: str) -> str:
    """A byte window: its bytes, its lines, a character it starts inside of."""
    split = (
        f"; it starts inside a character: its first {count(w.split_start, 'byte')} show as \ufffd"
        if w.split_start
        else ""
    )
    return (
        f"[{art}: bytes {w.offset}-{w.next_offset} of {w.size_bytes} stored{lines}{split}; "
        f"{coverage_of(w)}]"
    )


def hex_head(art: str, start: int, end: int, info: ArtifactInfo) -> str:
    return (
        f"[{art}: bytes {start}-{end} of {info.size_bytes} stored, as hex; {info_coverage(info)}]"
    )


def no_such_line(art: str, number: int, w: LineWindow) -> str:
    return (
        f"[{art}: there is no line {number}; the stored bytes hold {w.line_count} lines; "
        f"{coverage_of(w)}]"
    )


def lines_head(art: str, first: int, last: int, w: LineWindow, start: int, end: int) -> str:
    span = f"lines {first}-{last}" if last > first else f"line {first}"
    return f"[{art}: {span} of {w.line_count} stored (bytes {start}-{end}); {coverage_of(w)}]"


def long_line_head(art: str, line: Line, end: int, w: TextWindow) -> str:
    return (
        f"[{art}: line {line.number} is {end - line.offset} bytes (bytes {line.offset}-{end}), "
        f"longer than one answer; shown bytes {w.offset}-{w.next_offset} of it; {coverage_of(w)}]"
    )


def long_line_foot(rest: str, following: str) -> str:
    return f"[continue this line: {rest}; or skip to the next line: {following}]"


def tail_lines(t: TailWindow) -> str:
    """Which lines a tail shows (the end of a line it starts inside of)."""
    if t.first_line is None and t.offset > 0:
        more = f" and lines {t.line + 1}-{t.last_line}" if t.last_line > t.line else ""
        return f", the end of line {t.line}{more}"
    if t.last_line > t.line:
        return f", lines {t.line}-{t.last_line}"
    if t.last_line == t.line:
        return f", line {t.line}"
    return ""


def tail_fewer(asked: int, whole: int, within: str) -> str:
    """Why a tail holds fewer whole lines than were asked for."""
    return f" (fewer than the {asked} lines asked: {count(max(0, whole), 'whole line')} fit in {within})"


def tail_head(art: str, t: TailWindow, fewer: str) -> str:
    size = t.size_bytes
    return (
        f"[{art}: the last {size - t.offset} bytes (bytes {t.offset}-{size} of {size} "
        f"stored{tail_lines(t)}){fewer}; {coverage_of(t)}]"
    )


def tail_foot(t: TailWindow, earlier: str, just_before: str) -> str:
    return (
        f"[bytes 0-{t.offset} are not shown; from the start: {earlier}; "
        f"just before this: {just_before}]"
    )


# -- artifact_grep, artifact_info, artifact_list, artifact_save ----------------------


def grep_full(found: str, scanned_from: int, resume: int, again: str) -> str:
    return (
        f"[{found} shown, bytes {scanned_from}-{resume} searched; the answer is full; "
        f"continue: {again}]"
    )


def grep_stopped(found: str, scanned_from: int, next_offset: int, why: str, again: str) -> str:
    return f"[{found} in bytes {scanned_from}-{next_offset}; {why}; continue: {again}]"


def grep_done(found: str, scanned_from: int, next_offset: int, done: str) -> str:
    return f"[{found} in bytes {scanned_from}-{next_offset}; {done}]"


def info_reads(artifact_id: str) -> str:
    return (
        f"[read: {call('artifact_read', id=artifact_id, offset=0)} or "
        f"{call('artifact_read', id=artifact_id, tail_lines=50)}; search: "
        f"{call('artifact_grep', id=artifact_id, pattern='<regex>')}]"
    )


def list_empty(scope: str, more_gone: str) -> str:
    return f"[no stored outputs in {scope}{more_gone}]"


def list_head(n: int, noun: str, scope: str, more_gone: str) -> str:
    return f"[{count(n, noun[:-1], noun)} in {scope}, newest first{more_gone}]"


def list_more(again: str) -> str:
    return f"[more: {again}]"


LIST_END = "[end of list]"


def saved_head(saved_id: str, nbytes: int, lines: int, hint: str) -> str:
    return f"[saved as {saved_id}: {nbytes} bytes, {lines} lines; {hint}]"
