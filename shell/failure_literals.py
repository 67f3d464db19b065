"""Whether a block holds one of the failure patterns' literals, in any case.

A ``FailureScan`` asks this of every chunk of an overflowing stream before it
looks for lines: most chunks hold none, and then nothing more is done. The
answer must cover what RE2's ``(?i)`` matches, and RE2 folds simply: besides
the two ASCII cases, ``k`` also matches the Kelvin sign (U+212A) and ``s`` the
long s (U+017F); no other letter of ``a-z`` has a non-ASCII fold.

Two engines behind one ``LiteralFinder``: Hyperscan (a dependency where it has
wheels), one caseless scan for all literals that stops at the first, ~6 us per
64 KiB; StringZilla's full-Unicode uncased search, one pass per literal, ~35 us
(measured on zeros: the scan was 13.5% of a 64 MiB capture's samples). A
stream starts on StringZilla, which costs no import, and moves past ``LARGE`` bytes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any, Protocol

from .redact.prefilter import LARGE

# The non-ASCII members of an ASCII letter's simple case fold orbit, in UTF-8.
_FOLDS = {"k": "\u212a".encode(), "s": "\u017f".encode()}


class LiteralFinder(Protocol):
    def found(self, data: bytes | bytearray | memoryview) -> bool:
        """Whether ``data`` holds one of the literals in some case."""
        ...


def _expression(literal: str) -> bytes:
    parts = []
    for ch in literal.lower():
        letter = re.escape(ch.encode())
        fold = _FOLDS.get(ch)
        parts.append(b"(?:" + letter + b"|" + re.escape(fold) + b")" if fold else letter)
    return b"".join(parts)


@functools.cache
def _database(literals: tuple[str, ...]) -> Any:
    """Compiled once per process for a set of literals (~1 ms); streams share it."""
    import hyperscan  # type: ignore[import-not-found,import-untyped,unused-ignore]

    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    flags = hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_SINGLEMATCH
    db.compile(
        expressions=[_expression(lit) for lit in literals],
        ids=list(range(len(literals))),
        elements=len(literals),
        flags=[flags] * len(literals),
    )
    return db


class HyperscanFinder:
    def __init__(self, literals: Sequence[str]) -> None:
        import hyperscan  # type: ignore[import-not-found,import-untyped,unused-ignore]

        self._hs = hyperscan
        self._db = _database(tuple(literals))
        self._scratch = hyperscan.Scratch(self._db)  # per stream: scans run on threads

    def found(self, data: bytes | bytearray | memoryview) -> bool:
        try:
            self._db.scan(data, match_event_handler=_stop, scratch=self._scratch)
        except self._hs.ScanTerminated:
            return True
        return False


def _stop(ident: int, start: int, end: int, flags: int, context: Any) -> int:
    return 1  # the first literal answers the question


class StringZillaFinder:
    def __init__(self, literals: Sequence[str]) -> None:
        import stringzilla

        self._search = stringzilla.utf8_uncased_search
        self._literals = tuple(lit.encode() for lit in literals)

    def found(self, data: bytes | bytearray | memoryview) -> bool:
        search = self._search
        return any(search(data, lit) >= 0 for lit in self._literals)


class _Growing:
    """StringZilla for a stream's first ``LARGE`` bytes, then the fastest engine:
    Hyperscan's import and compile (~3-11 ms) would cost an output of a few
    hundred kilobytes more than they save. The redactor moves at the same size
    (its ``LARGE``), so the import is then shared."""

    def __init__(self, literals: Sequence[str]) -> None:
        self._literals = tuple(literals)
        self._finder: LiteralFinder = StringZillaFinder(literals)
        self._seen = 0

    def found(self, data: bytes | bytearray | memoryview) -> bool:
        if self._seen <= LARGE:
            self._seen += len(data)
            if self._seen > LARGE:
                self._finder = _fastest(self._literals)
        return self._finder.found(data)


def _fastest(literals: Sequence[str]) -> LiteralFinder:
    try:
        return HyperscanFinder(literals)
    except ImportError:
        return StringZillaFinder(literals)


def literal_finder(literals: Sequence[str]) -> LiteralFinder:
    """A finder for one stream (it holds scratch space): StringZilla first, then
    Hyperscan where it is installed, once the stream is large."""
    return _Growing(literals)
