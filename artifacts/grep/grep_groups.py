"""Matches with their context merged into groups, as GNU ``grep -n -C`` prints them.

A search answers each match with its own before- and after-context, so two
matches close together share lines, and a later match can sit inside the
earlier one's after-context. Printed naively, a line appears twice, or a match
first as context (``N-``) and then again as a match (``N:``), and one group is
split in two. ``Groups`` turns the matches into rows the way grep does: every
line once, in order, a match marked as a match, groups that touch or overlap
merged, and a gap (``--``) only between groups that do not. It keeps state
across pages, so a reader that follows the pages prints one merged stream.

Generic over the line type (the store's ``Line`` records for the model tools, the
wire's JSON objects for the CLI) and standard library only, so the CLI's grep
does not load the store to print.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, NamedTuple, TypeVar

L = TypeVar("L")


class Row(NamedTuple, Generic[L]):
    line: L
    number: int
    is_match: bool
    gap_before: bool  # a ``--`` separator goes before this row


class Groups(Generic[L]):
    def __init__(self, number: Callable[[L], int], *, context: int) -> None:
        self._number = number
        self._context = context
        self._last = 0  # the last line number given out as a row
        self._after: list[L] = []  # the last match's after-context, not given out yet

    def peek(self, line: L, before: Sequence[L]) -> list[Row[L]]:
        """The rows this match adds (the earlier match's after-context up to it, its
        own before-context, the match), without taking it."""
        return self._rows(line, before)[0]

    def take(self, line: L, before: Sequence[L], after: Sequence[L]) -> list[Row[L]]:
        """``peek``, and the match is taken: its after-context waits for the next."""
        rows, self._last = self._rows(line, before)
        self._after = list(after)
        return rows

    def finish(self, below: int | None = None) -> list[Row[L]]:
        """The last match's after-context, only lines before line ``below`` (the
        next match, not taken now, whose line must not be given out as context)."""
        rows: list[Row[L]] = []
        last = self._last
        for ln in self._after:
            n = self._number(ln)
            if n > last and (below is None or n < below):
                rows.append(Row(ln, n, False, self._gap(last, n)))
                last = n
        self._after, self._last = [], last
        return rows

    def _rows(self, line: L, before: Sequence[L]) -> tuple[list[Row[L]], int]:
        n = self._number(line)
        around = sorted(
            (ln for ln in [*self._after, *before] if self._number(ln) < n), key=self._number
        )
        rows: list[Row[L]] = []
        last = self._last
        for ln in around:
            k = self._number(ln)
            if k > last:
                rows.append(Row(ln, k, False, self._gap(last, k)))
                last = k
        if n > last:
            rows.append(Row(line, n, True, self._gap(last, n)))
            last = n
        return rows, last

    def _gap(self, last: int, number: int) -> bool:
        return bool(self._context and last and number > last + 1)
