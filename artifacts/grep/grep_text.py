"""grep as GNU ``grep -n`` prints it, streamed as bytes.

The JSON pages of ``artifacts.grep.grep`` build a record per match, then a client
decodes them again: with a million matches that, not the search, set the pace
(``overspill grep ID INFO``, 350,000 matches in 74 MB: 5.5 s where ``grep -n``
took 0.09 s). Here the same scan (``grep._Scan``: long lines, CRLF, context,
``-m``) writes each row as the bytes ``grep -n`` would print -- ``N:line`` for a
match, ``N-line`` for context, ``--`` between groups -- into a buffer handed out
per chunk, with the line as stored (a CR of a CRLF included, a long line whole).
``-v`` (lines that do not match) and ``-c`` (only the count) are line loops of
their own.

The stream ends with one status line that cannot be a row (rows begin with a
digit or ``--``): a NUL, then JSON with the next offset, whether the end was
reached, the number of matching lines and why it stopped, if it did. A request
is bounded in time (``time_budget_s``): past it the stream ends with the offset
the next request resumes at, at a line start.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from stringzilla import count as sz_count
from stringzilla import find as sz_find

from overspill.artifacts.grep import native
from overspill.artifacts.grep.grep import LINE_WHOLE, Spans, _Grep, _Hit, _Scan
from overspill.artifacts.grep.grep_groups import Groups
from overspill.artifacts.grep.grep_patterns import Finder, finder_for
from overspill.artifacts.queries import GrepLinesQuery
from overspill.artifacts.stored.content import Content

STATUS = b"\0"
"""The first byte of the stream's last line, the status (never a row's)."""


class _Count:
    """Stands for the list of matches: only how many (``len``) is kept."""

    def __init__(self) -> None:
        self.n = 0

    def append(self, _: object) -> None:
        self.n += 1

    def __len__(self) -> int:
        return self.n

    def __bool__(self) -> bool:
        return self.n > 0


class _Rows(_Grep):
    """The scan's sink: rows as bytes in ``out`` (none when only counting)."""

    def __init__(self, content: Content, regex: Finder, q: GrepLinesQuery) -> None:
        before = q.before if q.before is not None else q.context
        after = q.after if q.after is not None else q.context
        super().__init__(
            content,
            regex,
            context=max(before, after),
            max_matches=q.max_count or 2**62,
            max_bytes=2**62,
            line_cap=LINE_WHOLE,
        )
        self.before_n, self.after_n = before, after
        self.final = True  # max_count ends the search: trailing context shows matches too
        self.count_only = q.count
        self.out = bytearray()
        self.matches = _Count()  # type: ignore[assignment]
        self._groups: Groups[dict[str, Any]] = Groups(
            lambda ln: int(ln["number"]), context=max(before, after)
        )

    def lines_of(self, literal: bytes | None) -> None:
        """Take the chunks' complete lines in one loop (``bulk``): one search per
        matching line, no record; a pattern that is a plain string is found by
        a string search (several times faster a call than the regex engine's,
        which the pattern cannot need)."""
        self._literal = literal
        self.bulk = self._bulk

    def _bulk(
        self, chunk: bytes, pos: int, lo: int, last: int, number: int
    ) -> tuple[int | None, int, int]:
        """Every matching line of chunk[lo:last + 1] (complete lines) as a row: the
        line regex matches the whole line, so a hit is a row, no span search, no
        record; the line number is advanced by counting newlines between hits.
        (350,000 matches of 74 MB: 0.75 s through the general path's records, far
        less here.)"""
        # One loop for both finders: a plain string by StringZilla's SIMD search
        # (128 MiB without a match in 9 ms, where bytes.find took 52 ms; ~110 ns a
        # call between close matches against ~175), else the regex engine. A
        # branch a match, not a call: a call a match cost 12% of a many-match grep.
        literal = self._literal
        find = self.regex.find
        rfind, nl = chunk.rfind, chunk.find
        end, i = last + 1, lo
        rows: list[bytes] = []
        found, limit = len(self.matches), self.max_matches
        resume = None
        while True:
            if literal is not None:
                at = sz_find(chunk, literal, i, end)
                if at < 0:
                    break
                le = sz_find(chunk, b"\n", at, end)
            else:
                m = find(chunk, i, end)
                if m is None or m[0] > last:  # (an empty match past the last newline)
                    break
                # The line around the match (found by bytes, which any byte may
                # be: a regex's "any character" is not one where UTF-8 is broken).
                at = m[0]
                le = nl(b"\n", m[1] if m[1] > at else at, end)
            ls = rfind(b"\n", i, at) + 1 or i
            # StringZilla's count: 1.5x bytes.count over long gaps (a rare match),
            # and quicker a call over short ones (110 against 190 ns).
            number += sz_count(chunk, b"\n", i, ls)
            found += 1
            if not self.count_only:
                rows.append(b"%d:%s\n" % (number, chunk[ls:le]))
            i = le + 1
            number += 1
            if found >= limit:
                self.stopped = "max_matches"
                resume = pos + i
                break
        self.matches.n = found  # type: ignore[attr-defined]
        if rows:
            self.out += b"".join(rows)
        return resume, number, i

    def short(
        self, number: int, chunk: bytes, pos: int, ls: int, end: int, le: int, found: Spans
    ) -> int | None:
        self.matches.append({})
        if not self.count_only:
            self.out += b"%d:" % number
            self.out += chunk[ls:le]
            self.out += b"\n"
        if len(self.matches) >= self.max_matches:
            self.stopped = "max_matches"
            return pos + le + 1
        return None

    def record(self, hit: _Hit) -> int | None:
        if self.count_only:
            self.matches.append({})
            self.shown_to = hit.end + 1
            return hit.end + 1
        line = {"number": hit.number, "offset": hit.start, "end": hit.end}
        before = self.before(hit) if self.before_n else []
        after, past = self.after(hit) if self.after_n else ([], hit.end + 1)
        self._emit(self._groups.take(line, before, after))
        self.matches.append({})
        self.shown_to = past
        return past

    def flush_context(self) -> None:
        if not self.count_only:
            self._emit(self._groups.finish())

    def _emit(self, rows: list[Any]) -> None:
        for row in rows:
            if row.gap_before:
                self.out += b"--\n"
            ln = row.line
            self.out += b"%d%s" % (row.number, b":" if row.is_match else b"-")
            start, end = int(ln["offset"]), int(ln["end"])
            if (
                end - start <= len(self.data)
                and self.base <= start
                and end <= self.base + len(self.data)
            ):
                self.out += self.data[start - self.base : end - self.base]
            else:
                for piece in self.content.iter_range(start, end):
                    self.out += piece
            self.out += b"\n"


def grep_lines(
    content: Content,
    query: GrepLinesQuery,
    *,
    about: dict[str, Any] | None = None,
    time_budget_s: float = 20.0,
    native_engine: bool = True,
) -> Iterator[bytes]:
    """The rows of ``query`` over ``content`` from ``query.offset``, then the status
    (with ``about``: the artifact's state and sizes, for the reader's last word);
    ``native_engine``: ripgrep may write them (``artifacts.grep.native``)."""
    for chunk in _grep_lines(content, query, time_budget_s, native_engine):
        if chunk.startswith(STATUS) and about:
            state = json.loads(chunk[1:])
            chunk = STATUS + json.dumps({**state, **about}).encode() + b"\n"
        yield chunk


def _grep_lines(
    content: Content, query: GrepLinesQuery, time_budget_s: float, native_engine: bool
) -> Iterator[bytes]:
    regex = finder_for(query.pattern, ignore_case=query.ignore_case, fixed=query.fixed)
    size = content.size
    start = min(query.offset, size)
    deadline = time.monotonic() + time_budget_s
    if query.invert:
        yield from _inverted(content, regex, query, start, size, deadline)
        return
    rg = _native_engine(content, query, start, size) if native_engine else None
    if rg is not None:
        for piece in native.rows(content, rg[1], rg[0], deadline):
            if isinstance(piece, tuple):
                found, stop_at, stopped = piece
                if not (stopped == "engine_failed" and found == 0):
                    yield _status(stop_at, size, found, stopped)
                    return
            else:
                yield piece
        # ripgrep failed before its first row: the Python scan does it all.
    g = _Rows(content, regex, query)
    g.floor = g.shown_to = start
    g.lines_of(_plain(query))
    scan = _Scan(g, start, content.line_number_at(start))
    resume: int | None = None
    for chunk, newlines in content.iter_counted(start, size):
        resume = scan.feed(chunk, newlines)
        if g.out:
            yield bytes(g.out)
            g.out.clear()
        if resume is not None:
            break
        if time.monotonic() > deadline:
            resume, g.stopped = scan.line_start, "time_budget"
            break
    else:
        resume = scan.finish(size)
    g.flush_context()
    if g.out:
        yield bytes(g.out)
    yield _status(resume, size, len(g.matches), g.stopped)


def _inverted(
    content: Content,
    regex: Finder,
    q: GrepLinesQuery,
    start: int,
    size: int,
    deadline: float,
) -> Iterator[bytes]:
    """``-v``: the lines that do not match, whole (a line longer than LINE_WHOLE
    is judged by its first LINE_WHOLE bytes)."""
    number = content.line_number_at(start)
    pos = start
    found = 0
    limit = q.max_count or 2**62
    out = bytearray()
    carry = b""
    for chunk in content.iter_range(start, size):
        data = carry + chunk if carry else chunk
        base = pos - len(carry)
        i = 0
        while True:
            nl = data.find(b"\n", i)
            if nl < 0:
                break
            if regex.find(data, i, nl) is None:
                found += 1
                if not q.count:
                    out += b"%d:" % number
                    out += data[i:nl]
                    out += b"\n"
                if found >= limit:
                    yield bytes(out)
                    yield _status(base + nl + 1, size, found, "max_matches")
                    return
            number += 1
            i = nl + 1
        carry = data[i:][:LINE_WHOLE]
        pos += len(chunk)
        if out:
            yield bytes(out)
            out.clear()
        if time.monotonic() > deadline:
            yield _status(base + i, size, found, "time_budget")
            return
    if carry and regex.find(carry, 0, len(carry)) is None:
        found += 1
        if not q.count:
            out += b"%d:%s\n" % (number, carry)
    if out:
        yield bytes(out)
    yield _status(None, size, found, None)


_META = frozenset(b"\\^$.|?*+()[]{}")


def _plain(query: GrepLinesQuery) -> bytes | None:
    """The pattern as bytes when it is a plain string to find as it is (no
    metacharacter, or -F) and case matters (case folding is Unicode's: a Kelvin
    sign matches k), else None."""
    if query.ignore_case:
        return None
    raw = query.pattern.encode()
    if query.fixed or not (_META & set(raw)):
        return raw if b"\n" not in raw else None
    return None


def _native_engine(
    content: Content, query: GrepLinesQuery, start: int, size: int
) -> tuple[str, bytes] | None:
    """ripgrep and the literal, where its rows are exactly this scan's (see
    ``artifacts.grep.native``) and many, else None. Piping the bytes to ripgrep
    costs ~0.6 ms a MiB more than this scan finds a rare string in, and a row
    costs this scan ~0.6 us: ripgrep pays from ~1,000 rows a MiB, so it is
    asked when the first MiB holds native.MANY_PER_MIB occurrences or more."""
    if start or size < native.MIN_BYTES or query.count or query.max_count is not None:
        return None
    if query.context or query.before or query.after:
        return None
    literal = _plain(query)
    if literal is None or b"\0" in literal:
        return None
    sample = content.read(0, min(size, native.SAMPLE_BYTES))
    if sample.count(literal) * native.SAMPLE_BYTES < native.MANY_PER_MIB * len(sample):
        return None
    rg = native.ripgrep()
    return (rg, literal) if rg is not None else None


def _status(resume: int | None, size: int, matches: int, stopped: str | None) -> bytes:
    next_offset = size if resume is None else min(resume, size)
    state = {
        "next_offset": next_offset,
        "eof": next_offset >= size,
        "matches": matches,
        "stopped": stopped if next_offset < size else None,
    }
    return STATUS + json.dumps(state).encode() + b"\n"
