"""HTTP Range parsing (RFC 9110): one range, including suffix ranges.

A header this server does not serve (several ranges, another unit, bad syntax) is
ignored and the whole content is sent, as the RFC allows; a well-formed range that
lies wholly outside the content is unsatisfiable (416).
"""

from __future__ import annotations

import re

_RANGE = re.compile(r"^bytes=([0-9]*)-([0-9]*)$")
_DIGITS = 18


class RangeNotSatisfiable(Exception):
    """The range names no byte of the content."""


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """``(start, end_exclusive)`` to send, or None for the whole content."""
    if not header:
        return None
    m = _RANGE.match(header.strip().replace(" ", ""))
    if m is None:
        return None
    first, last = m.group(1), m.group(2)
    if not first and not last:
        return None
    # More digits than any size has: a start past every end, a suffix of it all
    # (and no 5,000-digit int() for a client to make us parse).
    if len(first) > _DIGITS:
        raise RangeNotSatisfiable
    if len(last) > _DIGITS:
        last = str(size) if not first else ""
    if not first:
        n = int(last)
        if n == 0 or size == 0:
            raise RangeNotSatisfiable
        return max(0, size - n), size
    start = int(first)
    if last and int(last) < start:
        return None  # syntactically invalid: ignored
    if start >= size:
        raise RangeNotSatisfiable
    end = size if not last else min(int(last) + 1, size)
    return start, end
