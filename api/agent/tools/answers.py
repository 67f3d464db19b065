"""The parts of the artifact tools' answers that are the tools' own: the line
spans of a window, a grep row (and the window of a long line), the structured
data beside each text. The sentences every surface shares (coverage, the end of
what is stored, continuations, errors) are in ``shell.wording``.
"""

from __future__ import annotations

from typing import Any

from overspill.artifacts.records import ArtifactInfo, Line, Window
from overspill.shell.wording import call, coverage, end_of_stored, searched

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
