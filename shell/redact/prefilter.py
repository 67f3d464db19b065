"""Finding the rules' literal triggers in a buffer: the one pass over every byte.

Three engines behind one ``Prefilter`` interface, chosen by measurement (see
``bench/redact.py``): Hyperscan (optional; ~4 GB/s on log lines, all triggers at
once), RE2 (a dependency already, for grep; ~0.7 GB/s on the same literal
alternation) and the standard library's ``re`` (~0.08 GB/s, but no import and
no compile cost: a command whose output is a few kilobytes -- most of them --
never pays for more). ``StreamRedactor`` starts on ``re`` and moves to the
fastest available engine once a stream has passed ``LARGE`` bytes (~4 ms on
``re``; Hyperscan's import and compile cost ~11 ms).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, Protocol

LARGE = 256 * 1024


class Prefilter(Protocol):
    def find(self, data: bytes | bytearray | memoryview) -> Iterator[tuple[int, int]]:
        """(position, literal index) of every trigger in ``data``, in any order;
        overlapping triggers may be reported or not, except that one at each
        position where some trigger starts is. A narrowed trigger (Hyperscan) is
        reported only where a secret of its rule may be."""
        ...

    def any(self, data: bytes | bytearray | memoryview) -> bool:
        """Whether ``data`` holds a trigger (stops at the first)."""
        ...


# What may come before a token's trigger (the tokens' rules check the same): at
# the fast engines, ``sk-`` inside ``task-`` or ``disk-`` is no trigger at all, so
# ordinary logs cost no callback for it (two thirds of all hits on the bench's logs).
_NOT_WORD = rb"(?:^|[^A-Za-z0-9_\-])"


class Narrowing(NamedTuple):
    """A trigger the fast engine looks for as ``expression`` (its rule's
    ``candidate``), which starts with the trigger and holds no second one; a
    secret still arriving is a bare trigger in the last ``reach`` bytes."""

    expression: bytes
    reach: int


def _expressions(
    literals: Sequence[bytes],
    word_start: Sequence[bool],
    narrow: Sequence[Narrowing | None] = (),
) -> list[bytes]:
    narrow = narrow or [None] * len(literals)
    return [
        (_NOT_WORD if word else b"") + (n.expression if n is not None else re.escape(lit))
        for lit, word, n in zip(literals, word_start, narrow, strict=True)
    ]


def _alternation(literals: Sequence[bytes]) -> bytes:
    """``lit|lit|...``, longest first: where two start at one position the longer
    is the one kept. No capturing groups: with them ``re`` loses its first-byte
    scan and runs at 2 MB/s instead of 60 (the matched text names the literal)."""
    return b"|".join(re.escape(lit) for lit in sorted(literals, key=len, reverse=True))


class StdlibPrefilter:
    def __init__(self, literals: Sequence[bytes]) -> None:
        self._index = {lit: i for i, lit in enumerate(literals)}
        self._re = re.compile(_alternation(literals)) if literals else None

    def find(self, data: bytes | bytearray | memoryview) -> Iterator[tuple[int, int]]:
        if self._re is None:
            return
        index = self._index
        for m in self._re.finditer(data):
            yield m.start(), index[m.group()]

    def any(self, data: bytes | bytearray | memoryview) -> bool:
        return self._re is not None and self._re.search(data) is not None


class Re2Prefilter:
    """Word-start triggers only where no letter, digit, ``_`` or ``-`` is before."""

    def __init__(self, literals: Sequence[bytes], word_start: Sequence[bool] | None = None) -> None:
        import re2

        words = word_start or [False] * len(literals)
        self._index = {lit: i for i, lit in enumerate(literals)}
        order = sorted(range(len(literals)), key=lambda i: -len(literals[i]))
        exprs = _expressions(literals, words)
        self._re: Any = re2.compile(b"|".join(exprs[i] for i in order)) if literals else None

    def find(self, data: bytes | bytearray | memoryview) -> Iterator[tuple[int, int]]:
        if self._re is None:
            return
        index = self._index
        for m in self._re.finditer(bytes(data)):
            text = m.group()
            i = index.get(text)
            if i is None:  # a word-start trigger with the byte before it
                text = text[1:]
                i = index[text]
            yield m.end() - len(text), i

    def any(self, data: bytes | bytearray | memoryview) -> bool:
        return self._re is not None and self._re.search(bytes(data)) is not None


class HyperscanPrefilter:
    """All triggers in one scan; word-start ones as RE2's. Each match reports its
    end, and the trigger starts its own length before it.

    A narrowed trigger (``Narrowing``) is reported where its looser expression
    matches, and, as a bare trigger, in the last ``reach`` bytes (where a secret
    may not have arrived whole): a log full of URLs without passwords then costs
    no callback per URL (~120 per 64 KiB of the bench's logs: 320 -> ~1,000 MB/s).
    """

    def __init__(
        self,
        literals: Sequence[bytes],
        word_start: Sequence[bool] | None = None,
        narrow: Sequence[Narrowing | None] = (),
    ) -> None:
        import hyperscan  # type: ignore[import-not-found,import-untyped,unused-ignore]

        self._hs = hyperscan
        self._literals = list(literals)
        self._lens = [len(lit) for lit in literals]
        self._narrowed = {i: n.reach for i, n in enumerate(narrow) if n is not None}
        self._db: Any = None
        if literals:
            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            words = word_start or [False] * len(literals)
            db.compile(
                expressions=_expressions(literals, words, narrow),
                ids=list(range(len(literals))),
                elements=len(literals),
                flags=[0] * len(literals),
            )
            self._db = db
        # A database is shared by every stream of its rules (compiling it costs
        # ~8 ms, once per upload before); scratch space is per scan thread.
        self._scratch = hyperscan.Scratch(self._db) if self._db is not None else None

    def sharing(self) -> HyperscanPrefilter:
        """A prefilter on the same compiled database, with scratch of its own."""
        twin = copy.copy(self)
        twin._scratch = self._hs.Scratch(self._db) if self._db is not None else None
        return twin

    def find(self, data: bytes | bytearray | memoryview) -> Iterator[tuple[int, int]]:
        if self._db is None:
            return iter(())
        found: list[tuple[int, int]] = []
        lens = self._lens
        narrowed = self._narrowed
        ends: list[tuple[int, int]] = []

        def on_match(ident: int, start: int, end: int, flags: int, context: Any) -> int:
            if ident in narrowed:
                ends.append((end, ident))
            else:
                found.append((end - lens[ident], ident))
            return 0

        # Hyperscan scans any buffer in place: a chunk is not copied to be searched.
        self._db.scan(data, match_event_handler=on_match, scratch=self._scratch)
        if narrowed:
            seen = set(self._near_end(data))
            if ends:  # (rare: a URL that may hold a password)
                # The trigger a match starts with is the last one before its end.
                text = data if not isinstance(data, memoryview) else bytes(data)
                seen.update((text.rfind(self._literals[i], 0, end), i) for end, i in ends)
            found += seen
        return iter(found)

    def _near_end(self, data: bytes | bytearray | memoryview) -> Iterator[tuple[int, int]]:
        """Narrowed triggers whose secret may still be arriving (only the last
        ``reach`` bytes are copied to be searched)."""
        for i, reach in self._narrowed.items():
            lit = self._literals[i]
            start = max(0, len(data) - reach)
            tail = bytes(data[start:])
            pos = tail.find(lit)
            while pos >= 0:
                yield start + pos, i
                pos = tail.find(lit, pos + 1)

    def any(self, data: bytes | bytearray | memoryview) -> bool:
        if self._db is None:
            return False
        seen: list[bool] = []

        def on_match(ident: int, start: int, end: int, flags: int, context: Any) -> int:
            seen.append(True)
            return 1  # stop the scan

        try:
            self._db.scan(data, match_event_handler=on_match, scratch=self._scratch)
        except self._hs.ScanTerminated:
            pass
        return bool(seen) or next(self._near_end(data), None) is not None


def fastest(
    literals: Sequence[bytes], word_start: Sequence[bool], narrow: Sequence[Narrowing | None]
) -> Prefilter:
    """Hyperscan where it is installed (with the narrowed triggers), else RE2."""
    try:
        return HyperscanPrefilter(literals, word_start, narrow)
    except ImportError:
        return Re2Prefilter(literals, word_start)
