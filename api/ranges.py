"""HTTP Range parsing (RFC 9110): one range, including suffix ranges.

A header this server does not serve (several ranges, another unit, bad syntax) is
ignored and the whole content is sent, as the RFC allows; a well-formed range that
lies wholly outside the content is unsatisfiable (416).
"""

from __future__ import annotations

import re

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


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
