"""What the model is shown of one stream (artifact render mode).

The stored bytes never change; this is only the view. It starts a tail at a line
boundary when one is near, removes terminal escape sequences, shows other
control characters as visible escapes, clips a line longer than ``line_cap``
bytes with the call that reads the rest (only where an artifact holds it), and
replaces binary output with a one-line notice. It also says exactly which bytes
and lines it shows, for the truncation line.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from overspill.artifacts.utf8 import utf8_safe_end, utf8_skip_partial

from .results import StreamView
from .wording import binary_line, clipped_line, gap_line

DEFAULT_LINE_CAP = 2_000

# CSI (colours, cursor moves), OSC (titles, hyperlinks), and two-byte escapes.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(ch: re.Match[str]) -> str:
    code = ord(ch.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class Rendered(NamedTuple):
    text: str
    escapes_removed: bool
    clipped: tuple[tuple[int, int, int], ...]


def count_lines(newlines: int, total: int, ends_with_newline: bool) -> int:
    return newlines + (1 if total and not ends_with_newline else 0)


def _looks_binary(data: bytes) -> bool:
    if b"\0" in data:
        return True
    sample = data[:8192].decode("utf-8", errors="replace")
    if not sample:
        return False
    odd = sum(1 for c in sample if c == "\ufffd" or (c < " " and c not in "\n\t\r\x1b"))
    return odd > len(sample) // 10


def clean_line(raw: bytes) -> tuple[str, bool]:
    """One line (without its newline) as shown; True if escapes were removed."""
    text = raw.decode("utf-8", errors="replace")
    if text.endswith("\r"):
        text = text[:-1]  # CRLF: the CR is part of the terminator
    cleaned = _ANSI.sub("", text)
    return _CONTROL.sub(_visible, cleaned), cleaned != text


def _plain(data: bytes, line_cap: int | None) -> str | None:
    """The text of ``data`` when nothing in it needs a line of its own: no escape
    or control character (a CR of CRLF aside) and no line to clip. Most output
    is so, and one pass over the whole block (decode, one search) is what the
    per-line path costs for each of ~10,000 lines of a 64 KB tail."""
    if line_cap is not None and max(map(len, data.split(b"\n"))) > line_cap:
        return None
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    if text.endswith("\r"):
        text = text[:-1]
    return None if _CONTROL.search(text) else text


def render_lines(
    data: bytes, base: int, first_line: int, *, line_cap: int, artifact_id: str | None
) -> Rendered:
    """``data`` (starting at whole-stream ``base``, line ``first_line``) as shown.
    Lines are clipped only when an artifact holds what the clip leaves out."""
    plain = _plain(data, line_cap if artifact_id is not None else None)
    if plain is not None:
        return Rendered(plain, False, ())
    return render_each_line(data, base, first_line, line_cap=line_cap, artifact_id=artifact_id)


def render_each_line(
    data: bytes, base: int, first_line: int, *, line_cap: int, artifact_id: str | None
) -> Rendered:
    """``render_lines`` one line at a time (escapes, controls, clipping). A line
    longer than ``line_cap`` keeps its start and its end -- how a line ends (an
    error at the end of a long JSON line, the last state of a progress bar) is
    what a reader most needs -- and says which bytes of the middle are left out,
    with the call that reads them."""
    out: list[str] = []
    removed = False
    clipped: list[tuple[int, int, int]] = []
    pos = 0
    number = first_line
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl
        raw = data[pos:end]
        if artifact_id is not None and len(raw) > line_cap:
            head = utf8_safe_end(raw[: line_cap // 2]) or line_cap // 2
            back = len(raw) - (line_cap - head)
            tail = back + utf8_skip_partial(raw[back:])
            first, r1 = clean_line(raw[:head])
            last, r2 = clean_line(raw[tail:])
            gap_start, gap_end = base + pos + head, base + pos + tail
            clip = clipped_line(number, len(raw), gap_start, gap_end, artifact_id)
            text = f"{first} … {clip} … {last}"
            clipped.append((number, gap_start, gap_end))
            r = r1 or r2
        else:
            text, r = clean_line(raw)
        removed = removed or r
        out.append(text + ("\n" if nl >= 0 else ""))
        pos = end + 1 if nl >= 0 else end
        number += 1
    return Rendered("".join(out), removed, tuple(clipped))


def stream_view(
    head: bytes,
    tail: bytes,
    total: int,
    newlines: int,
    *,
    truncated: bool,
    artifact_id: str | None,
    line_cap: int = DEFAULT_LINE_CAP,
    max_lines: int | None = None,
) -> StreamView:
    """The view of a stream whose memory holds ``head`` (head_tail mode) and the
    last ``tail`` bytes of ``total``, with ``newlines`` newlines in all; a tail
    of at most ``max_lines`` lines where the client cuts by lines."""
    ends_nl = (tail or head).endswith(b"\n")
    total_lines = count_lines(newlines, total, ends_nl)
    if not truncated:
        data = head + tail
        if artifact_id is not None and _looks_binary(data):
            return _binary(total, total_lines, artifact_id)
        r = render_lines(data, 0, 1, line_cap=line_cap, artifact_id=artifact_id)
        return StreamView(r.text, 0, total, 1, total_lines, total_lines, False, 0, False, *r[1:])
    start = total - len(tail)
    skip = utf8_skip_partial(tail)
    # Start at a line boundary when one is near (the cut line is not shown).
    nl = tail.find(b"\n", skip, skip + line_cap)
    if 0 <= nl < len(tail) - 1:
        skip = nl + 1
    shown = tail[skip:]
    start += skip
    mid_line = skip == utf8_skip_partial(tail) and start > 0
    if max_lines is not None and shown.count(b"\n") > max_lines:
        cut = _after_newlines(shown, shown.count(b"\n") - max_lines)
        shown, start, mid_line = shown[cut:], start + cut, False
    if artifact_id is not None and _looks_binary(shown):
        return _binary(total, total_lines, artifact_id)
    shown_lines = count_lines(shown.count(b"\n"), len(shown), ends_nl)
    first = total_lines - shown_lines + 1
    body, removed, clipped = render_lines(
        shown, start, first, line_cap=line_cap, artifact_id=artifact_id
    )
    head_end = 0
    if head:
        head = head[: utf8_safe_end(head)]
        cut = head.rfind(b"\n", len(head) - line_cap)
        if cut >= 0:
            head = head[: cut + 1]
        head_end = len(head)
        head_text, r1, c1 = render_lines(head, 0, 1, line_cap=line_cap, artifact_id=artifact_id)
        gap = gap_line(head_end, start, artifact_id) + "\n"
        sep = "" if head_text.endswith("\n") or not head_text else "\n"
        body = head_text + sep + gap + body
        removed, clipped = removed or r1, c1 + clipped
    return StreamView(
        body,
        start,
        total,
        first,
        total_lines,
        total_lines,
        mid_line,
        head_end,
        False,
        removed,
        clipped,
        head_lines=head[:head_end].count(b"\n"),
        max_lines=max_lines,
    )


def _after_newlines(data: bytes, n: int) -> int:
    """The offset just after the ``n``-th newline of ``data``."""
    pos = -1
    for _ in range(n):
        pos = data.index(b"\n", pos + 1)
    return pos + 1


def _binary(total: int, total_lines: int, artifact_id: str) -> StreamView:
    text = binary_line(total, artifact_id)
    return StreamView(text, total, total, total_lines, total_lines, total_lines, False, 0, True)
