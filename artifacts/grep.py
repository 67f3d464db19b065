"""grep over an artifact's bytes, at the speed of the regex engine.

RE2 runs over large byte blocks (never per decoded line): with ``never_nl`` a
match cannot cross a line, and ``(?m)`` makes ``^``/``$`` line anchors, so a
block search finds what a line-by-line grep finds. Line boundaries and numbers
are worked out only around matches (newlines between matches are counted with a
vectorised count). A match anywhere on a line of any length is found: a line
longer than a block is searched piece by piece with an overlap of
``OVERLAP`` bytes, so only a single match longer than that could be missed where
two pieces meet. Each matching line comes back whole when it is short, else as
a window of ``line_cap`` bytes around the first match (``Line.window_offset``
says where the window starts).

Bounded three ways, each with a resume offset at a line start: the answer's
bytes (``max_bytes``), the bytes scanned (``scan_bytes``) and the time spent
(``time_budget_s``: a pathological pattern such as ``(.*){1000}`` stops early
instead of holding a worker).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

import re2

from overspill.artifacts.content import Content
from overspill.artifacts.errors import InvalidArgument, InvalidRange
from overspill.artifacts.newlines import count_newlines
from overspill.artifacts.records import GrepMatch, GrepResult, Line

BLOCK = 4 * 1024 * 1024
OVERLAP = 64 * 1024
MAX_SPANS = 50
MAX_PROGRAM = 2_000  # RE2 program size: bounds the cost per byte of a pattern


def compile_pattern(pattern: str, *, ignore_case: bool, fixed: bool) -> re2._Regexp:
    """A bytes regex that never matches across a newline, ^/$ at line edges."""
    if not pattern:
        raise InvalidArgument("grep pattern must not be empty")
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.literal = fixed
    options.never_nl = True
    options.log_errors = False
    source = pattern.encode() if fixed else b"(?m)" + pattern.encode()
    try:
        regex = re2.compile(source, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "syntax error"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", errors="replace")
        raise InvalidArgument(f"invalid regular expression {pattern!r}: {reason}") from None
    if regex.programsize > MAX_PROGRAM:
        raise InvalidArgument(
            f"regular expression {pattern!r} is too complex (program size "
            f"{regex.programsize}, at most {MAX_PROGRAM}); simplify it"
        )
    return regex


@dataclass
class _Hit:
    number: int
    start: int  # line start offset
    end: int  # offset of the line's terminator (or the end of the content)
    first: tuple[int, int]  # the first match, absolute offsets
    spans: list[tuple[int, int]]  # absolute


class _Grep:
    def __init__(
        self,
        content: Content,
        regex: re2._Regexp,
        *,
        context: int,
        max_matches: int,
        max_bytes: int,
        line_cap: int,
    ) -> None:
        self.content = content
        self.regex = regex
        self.context = context
        self.max_matches = max_matches
        self.max_bytes = max_bytes
        self.line_cap = line_cap
        self.matches: list[GrepMatch] = []
        self.used = 0
        # The block being searched: most lines a match needs are inside it.
        self.base = 0
        self.data = b""

    def read(self, start: int, end: int) -> bytes:
        lo, hi = start - self.base, end - self.base
        if 0 <= lo <= hi <= len(self.data):
            return self.data[lo:hi]
        return self.content.read(start, end)

    # -- lines around a match, read back by offset (bounded, only on hits) ------------

    def line_at(self, number: int, start: int, end: int, first: tuple[int, int] | None) -> Line:
        return self._line(number, start, end, first)[0]

    def _line(
        self, number: int, start: int, end: int, first: tuple[int, int] | None
    ) -> tuple[Line, bytes, int]:
        """Line ``number`` at [start, end): whole if short, else a window of
        ``line_cap`` bytes around ``first`` (or its start). Also the raw bytes
        shown and the offset they start at."""
        if end - start <= self.line_cap:
            data = self.read(start, end)
            return Line(number=number, offset=start, text=_decode(data)), data, start
        lo = start if first is None else max(start, first[0] - self.line_cap // 4)
        hi = min(end, lo + self.line_cap)
        data = self.read(lo, hi)
        line = Line(
            number=number, offset=start, text=_decode(data), truncated=True, window_offset=lo
        )
        return line, data, lo

    def _line_bounds_before(self, start: int) -> tuple[int, int] | None:
        """[start, end) of the line that ends just before ``start``."""
        if start <= 0:
            return None
        end = start - 1  # the terminator of the previous line
        rel = end - self.base
        if 0 <= rel <= len(self.data):
            nl = self.data.rfind(b"\n", 0, rel)
            if nl >= 0:
                return self.base + nl + 1, end
        lo = end
        while lo > 0:
            piece_lo = max(0, lo - OVERLAP)
            piece = self.content.read(piece_lo, lo)
            nl = piece.rfind(b"\n")
            if nl >= 0:
                return piece_lo + nl + 1, end
            lo = piece_lo
        return 0, end

    def _line_end(self, start: int) -> int:
        size = self.content.size
        rel = start - self.base
        if 0 <= rel <= len(self.data):
            nl = self.data.find(b"\n", rel)
            if nl >= 0:
                return self.base + nl
        pos = start
        while pos < size:
            piece = self.content.read(pos, min(size, pos + OVERLAP))
            nl = piece.find(b"\n")
            if nl >= 0:
                return pos + nl
            pos += len(piece)
        return size

    def before(self, hit: _Hit) -> list[Line]:
        lines: deque[Line] = deque()
        start = hit.start
        for k in range(1, self.context + 1):
            bounds = self._line_bounds_before(start)
            if bounds is None:
                break
            lines.appendleft(self.line_at(hit.number - k, bounds[0], _trim_cr(self, *bounds), None))
            start = bounds[0]
        return list(lines)

    def after(self, hit: _Hit) -> tuple[list[Line], int]:
        """Context lines after the hit, and the offset just past the last one."""
        lines = []
        pos = hit.end + 1
        size = self.content.size
        for k in range(1, self.context + 1):
            if pos >= size:
                break
            end = self._line_end(pos)
            lines.append(self.line_at(hit.number + k, pos, _trim_cr(self, pos, end), None))
            pos = end + 1
        return lines, min(pos, size)

    def record(self, hit: _Hit) -> int | None:
        """Add the hit; None when it does not fit the answer (resume at its line)."""
        line, raw, base = self._line(
            hit.number, hit.start, _trim_cr(self, hit.start, hit.end), hit.first
        )
        cost = len(raw) * (1 + 2 * self.context)
        if self.matches and self.used + cost > self.max_bytes:
            return None
        before = self.before(hit) if self.context else []
        after, past = self.after(hit) if self.context else ([], hit.end + 1)
        spans = [
            (_chars(raw, s - base), _chars(raw, e - base))
            for s, e in hit.spans
            if base <= s and e <= base + len(raw)
        ]
        self.matches.append(GrepMatch(line=line, before=before, after=after, spans=spans))
        self.used += cost
        return past


def _trim_cr(g: _Grep, start: int, end: int) -> int:
    """A line's shown end: without the CR of a CRLF terminator."""
    if end > start and g.read(end - 1, end) == b"\r":
        return end - 1
    return end


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _chars(raw: bytes, upto: int) -> int:
    return len(raw[: max(0, upto)].decode("utf-8", errors="replace"))


def grep(
    content: Content,
    pattern: str,
    *,
    ignore_case: bool = False,
    fixed: bool = False,
    context: int = 0,
    max_matches: int = 100,
    offset: int = 0,
    max_bytes: int,
    scan_bytes: int,
    complete: bool,
    line_cap: int = 64 * 1024,
    time_budget_s: float = 5.0,
) -> GrepResult:
    if context < 0 or context > 100:
        raise InvalidArgument(f"context must be between 0 and 100, got {context}")
    if max_matches < 1:
        raise InvalidArgument(f"max_matches must be >= 1, got {max_matches}")
    if offset < 0:
        raise InvalidRange(f"offset must be >= 0, got {offset}")
    regex = compile_pattern(pattern, ignore_case=ignore_case, fixed=fixed)
    size = content.size
    start = min(offset, size)
    g = _Grep(
        content,
        regex,
        context=context,
        max_matches=max_matches,
        max_bytes=max_bytes,
        line_cap=min(line_cap, max_bytes),
    )
    deadline = time.monotonic() + time_budget_s
    number = content.line_number_at(start)  # the line that holds ``pos``
    line_start = start  # where that line starts (or the scan started)
    pos = start
    stopped = False
    carry = b""  # the tail of a line longer than a block, searched again with the next piece
    while pos < size:
        block = content.read(pos, min(size, pos + BLOCK))
        cut = block.rfind(b"\n") + 1 if pos + len(block) < size else len(block)
        if cut == 0:  # no newline in a whole block: part of one very long line
            data = carry + block
            m = regex.search(data)
            if m is None:
                carry = data[-OVERLAP:]
                pos += len(block)
                if time.monotonic() > deadline:
                    stopped = True
                    break
                continue
            base = pos - len(carry)
            g.base, g.data = base, data
            end = g._line_end(base + m.end())
            hit = _Hit(
                number,
                line_start,
                end,
                (base + m.start(), base + m.end()),
                [(base + m.start(), base + m.end())],
            )
            past = g.record(hit)
            if past is None:
                stopped = True
                pos = line_start
                break
            carry = b""
            number += 1 + count_newlines(content.read(end + 1, past)) if past > end + 1 else 1
            pos = line_start = past
            if len(g.matches) >= max_matches:
                stopped = pos < size
                break
            continue
        data = carry + block[:cut]
        base = pos - len(carry)
        g.base, g.data = base, data
        carry = b""
        i = 0
        counted = 0
        resume: int | None = None
        while i < len(data):
            m = regex.search(data, i)
            if m is None:
                break
            ls = data.rfind(b"\n", 0, m.start()) + 1
            le = data.find(b"\n", m.end())
            if le < 0:
                le = len(data)
            number += count_newlines(memoryview(data)[counted:ls])
            counted = ls
            abs_ls = line_start if ls == 0 else base + ls
            spans = [(base + s.start(), base + s.end()) for s in _spans(regex, data, m, le)]
            hit = _Hit(number, abs_ls, base + le, (base + m.start(), base + m.end()), spans)
            past = g.record(hit)
            if past is None:
                stopped, resume = True, abs_ls
                break
            if len(g.matches) >= max_matches:
                stopped, resume = True, past
                break
            i = le + 1
        if resume is not None:
            pos = resume
            number = -1  # not needed past here
            break
        number += count_newlines(memoryview(data)[counted:])
        pos = base + len(data)
        line_start = pos
        if pos - start >= scan_bytes or time.monotonic() > deadline:
            stopped = pos < size
            break
    if stopped and pos >= size:
        stopped = False
    return GrepResult(
        artifact_id=content.artifact_id,
        pattern=pattern,
        matches=g.matches,
        scanned_from=start,
        next_offset=min(pos, size),
        eof=not stopped and pos >= size,
        complete=complete,
        truncated=stopped,
    )


def _spans(regex: re2._Regexp, data: bytes, first: re2._Match, end: int) -> list[re2._Match]:
    spans = [first]
    i = max(first.end(), first.start() + 1)
    while len(spans) < MAX_SPANS and i < end:
        m = regex.search(data, i, end)
        if m is None:
            break
        spans.append(m)
        i = max(m.end(), m.start() + 1)
    return spans
