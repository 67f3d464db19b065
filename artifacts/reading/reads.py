"""Bounded views over an artifact's bytes: text windows, line pages and tails.

Every function here returns at most ``max_bytes`` of content and says where to
continue, and none reads more than a bounded amount per call. grep lives in
``artifacts.grep.grep``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from overspill.artifacts.errors import InvalidRange
from overspill.artifacts.records import (
    Line,
    LineWindow,
    TailWindow,
    TextWindow,
)
from overspill.artifacts.stored.content import Content
from overspill.artifacts.utf8 import utf8_char_len, utf8_safe_end, utf8_skip_partial

_BLOCK = 64 * 1024
MAX_LINE_BYTES = 64 * 1024  # a longer line is shown truncated (and flagged)


def text_window(content: Content, offset: int, limit: int, *, complete: bool) -> TextWindow:
    """Bytes ``[offset, offset + limit)`` as text, exactly: the window starts at the
    offset asked (bytes of a character begun before it show as U+FFFD, and
    ``split_start`` counts them) and ends at or before ``offset + limit`` -- before a
    character the limit would split, which the next window then starts with. So a
    chain of windows, each from the last one's ``next_offset``, shows every stored
    byte exactly once."""
    if offset < 0 or limit <= 0:
        raise InvalidRange(f"offset must be >= 0 and limit > 0 (got {offset}, {limit})")
    size = content.size
    start = min(offset, size)
    end = min(size, start + limit)
    raw = content.read(start, min(size, end + 3))
    body = raw[: end - start]
    cut = utf8_safe_end(body)
    if 0 < cut < len(body):
        # A character the window's end would split is left whole to the next
        # window -- only a real one, whose continuation bytes follow (stray bytes
        # are shown here, so a window meets the next shown one exactly), and
        # only where the window can hold it.
        need = utf8_char_len(body[cut])
        following = raw[len(body) : cut + need]
        if following and all(0x80 <= b <= 0xBF for b in following):
            body = body[:cut]
        elif not following and not complete:
            body = body[:cut]  # its continuation may not be written yet
    next_offset = start + len(body)
    first_line = content.line_number_at(start)
    newlines = body.count(b"\n")
    last_line = first_line + newlines - (1 if body.endswith(b"\n") else 0)
    return TextWindow(
        artifact_id=content.artifact_id,
        offset=start,
        next_offset=next_offset,
        text=body.decode("utf-8", errors="replace"),
        size_bytes=size,
        eof=next_offset >= size,
        complete=complete,
        first_line=first_line,
        last_line=last_line if body else first_line - 1,
        split_start=utf8_skip_partial(body) if start > 0 else 0,
    )


@dataclass
class _RawLine:
    offset: int
    data: bytes  # without the line terminator, at most MAX_LINE_BYTES
    truncated: bool
    end: int  # offset just past the terminator
    terminator: int  # offset of the newline (or of the end, for a last line without one)


def iter_lines(content: Content, start: int, max_line: int = MAX_LINE_BYTES) -> Iterator[_RawLine]:
    """Lines from byte ``start`` (a line start), with bounded memory per line."""
    buf = bytearray()
    line_start = start
    truncated = False
    pos = start
    for chunk in content.iter_range(start, content.size):
        view = 0
        while view < len(chunk):
            nl = chunk.find(b"\n", view)
            piece_end = len(chunk) if nl < 0 else nl
            room = max_line - len(buf)
            if room > 0:
                buf += chunk[view : min(piece_end, view + room)]
            if piece_end - view > max(room, 0):
                truncated = True
            if nl < 0:
                pos += len(chunk) - view
                break
            pos += nl + 1 - view
            yield _RawLine(line_start, _strip_cr(bytes(buf)), truncated, pos, pos - 1)
            buf.clear()
            truncated = False
            line_start = pos
            view = nl + 1
    if pos > line_start:
        yield _RawLine(line_start, _strip_cr(bytes(buf)), truncated, pos, pos)


def _strip_cr(data: bytes) -> bytes:
    return data[:-1] if data.endswith(b"\r") else data


def _line(number: int, raw: _RawLine) -> Line:
    return Line(
        number=number,
        offset=raw.offset,
        text=raw.data.decode("utf-8", errors="replace"),
        truncated=raw.truncated,
        end=raw.terminator,
    )


def line_window(
    content: Content, start: int, count: int, *, max_bytes: int, complete: bool
) -> LineWindow:
    if start < 1 or count < 1:
        raise InvalidRange(f"start must be >= 1 and count >= 1 (got {start}, {count})")
    offset = content.line_start(start)
    lines: list[Line] = []
    next_offset = content.size if offset is None else offset
    used = 0
    if offset is not None:
        for raw in iter_lines(content, offset, min(MAX_LINE_BYTES, max_bytes)):
            if lines and used + len(raw.data) > max_bytes:
                break
            lines.append(_line(start + len(lines), raw))
            used += len(raw.data)
            next_offset = raw.end
            if len(lines) >= count:
                break
    return LineWindow(
        artifact_id=content.artifact_id,
        start=start,
        lines=lines,
        next_line=start + len(lines),
        next_offset=next_offset,
        eof=next_offset >= content.size,
        complete=complete,
        line_count=content.line_count,
    )


def tail(
    content: Content,
    *,
    lines: int | None,
    nbytes: int | None,
    max_bytes: int,
    complete: bool,
) -> TailWindow:
    """The last ``lines`` lines or ``nbytes`` bytes, never more than ``max_bytes``:
    exactly one of them, at least 1, as ``TailQuery.chosen`` gives them (the one
    place the pair is checked)."""
    size = content.size
    if nbytes is not None:
        want = min(nbytes, max_bytes)
        start = max(0, size - want)
        truncated = nbytes > max_bytes and size > max_bytes
    else:
        assert lines is not None
        start, truncated = _tail_lines_start(content, lines, max_bytes)
    raw = content.read(start, size)
    skip = utf8_skip_partial(raw)
    if truncated and lines is not None and not _at_line_start(content, start):
        # Fewer lines than asked fit: show whole lines from the first line start
        # in the window, unless one line is longer than the whole window.
        nl = raw.find(b"\n", 0, max(0, len(raw) - 1))
        if nl >= 0:
            skip = nl + 1
    start += skip
    body = raw[skip:]
    at_line_start = _at_line_start(content, start)
    number = content.line_number_at(start)
    last = number + body.count(b"\n") - (1 if body.endswith(b"\n") else 0)
    return TailWindow(
        artifact_id=content.artifact_id,
        offset=start,
        text=body.decode("utf-8", errors="replace"),
        first_line=number if at_line_start else None,
        size_bytes=size,
        complete=complete,
        truncated=truncated,
        line=number,
        last_line=last if body else number - 1,
    )


def _at_line_start(content: Content, offset: int) -> bool:
    return offset == 0 or content.read(offset - 1, offset) == b"\n"


def _tail_lines_start(content: Content, lines: int, max_bytes: int) -> tuple[int, bool]:
    size = content.size
    end = size
    # A final newline terminates the last line; it does not start an empty one.
    if size and content.read(size - 1, size) == b"\n":
        end = size - 1
    found = 0
    pos = end
    floor = max(0, size - max_bytes)
    # Blocks grow from 4 KiB: a tail of a few short lines reads a few KiB, not 64.
    block_size = 4096
    while pos > floor:
        lo = max(floor, pos - block_size)
        block_size = min(block_size * 2, _BLOCK)
        block = content.read(lo, pos)
        idx = len(block)
        while True:
            idx = block.rfind(b"\n", 0, idx)
            if idx < 0:
                break
            found += 1
            if found == lines:
                return lo + idx + 1, False
        pos = lo
    return floor, floor > 0
