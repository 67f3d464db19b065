"""The regex side of grep: a pattern compiled with its bounds (never across a
newline, ``^``/``$`` at line edges, a program size that bounds the cost per
byte), and the engine's core match call that the scans make per matching line.
"""

from __future__ import annotations

import functools

import re2

from overspill.artifacts.errors import InvalidArgument

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
    options.never_capture = True  # only where a match is, never what a group held
    source = pattern.encode() if fixed else b"(?m)" + pattern.encode()
    try:
        regex = re2.compile(source, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "syntax error"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", errors="replace")
        # RE2 quotes the pattern as compiled: without the (?m) it never saw typed.
        reason = reason.replace(": (?m)", ": ", 1)
        raise InvalidArgument(f"invalid regular expression {pattern!r}: {reason}") from None
    if regex.programsize > MAX_PROGRAM:
        raise InvalidArgument(
            f"regular expression {pattern!r} is too complex (program size "
            f"{regex.programsize}, at most {MAX_PROGRAM}); simplify it"
        )
    return regex


def compile_inside(pattern: str, *, ignore_case: bool, fixed: bool) -> re2._Regexp:
    """The pattern followed by one more byte: its matches are the pattern's matches
    that end *before* the end of the text searched. Where a long line is searched
    in parts, a match that reaches a part's edge may be one of ``$`` or ``\\b``
    only because the part ends there; this finds, in one linear pass, the leftmost
    match that does not depend on the edge (retrying one byte further after each
    edge match made a pattern such as ``(a+)+$`` quadratic in the part)."""
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.never_nl = True
    options.log_errors = False
    options.never_capture = True
    body = re2.escape(pattern.encode()) if fixed else pattern.encode()
    return re2.compile(b"(?m)(?:" + body + b")(?s:.)", options)


class Finder:
    """RE2's core match call on bytes: (start, end) of the first match in
    [pos, endpos), or None. The package's ``search`` builds a Match object per
    call (and counts groups three times); with one call per matching line that
    wrapper, not the engine, set the pace of a grep with many matches. Falls
    back to ``search`` should the core call not be there."""

    def __init__(self, regex: re2._Regexp, inside: re2._Regexp | None = None) -> None:
        self.regex = regex
        self._inside = inside
        core = getattr(regex, "_regexp", None)
        anchor = getattr(getattr(getattr(re2, "_re2", None), "RE2", None), "Anchor", None)
        self._core = core if core is not None and anchor is not None else None
        self._anchor = getattr(anchor, "UNANCHORED", None)

    def inside(self, data: bytes, pos: int, endpos: int) -> tuple[int, int] | None:
        """The leftmost match followed by one more byte before ``endpos``, that byte
        included (see ``compile_inside``)."""
        if self._inside is None:
            return None
        m = self._inside.search(data, pos, endpos)
        return None if m is None else (m.start(), m.end())

    def find(self, data: bytes, pos: int, endpos: int) -> tuple[int, int] | None:
        if self._core is not None:
            span: tuple[int, int] = self._core.Match(self._anchor, data, pos, endpos)[0]
            return None if span[0] < 0 else span
        m = self.regex.search(data, pos, endpos)
        return None if m is None else (m.start(), m.end())


@functools.lru_cache(maxsize=64)
def finder_for(pattern: str, *, ignore_case: bool, fixed: bool) -> Finder:
    """The pattern's finder, with its edge-safe twin for lines searched in parts
    (a bad or too complex pattern raises InvalidArgument here, before a scan).
    Kept for the next call: a search greps each of its outputs with one pattern
    (1,000 outputs compiled it 2,000 times, 15% of the walk), and a model pages
    through one pattern. RE2 programs are immutable and safe across threads;
    64 of at most 2,000 instructions each are a few MB at most."""
    options = {"ignore_case": ignore_case, "fixed": fixed}
    return Finder(compile_pattern(pattern, **options), compile_inside(pattern, **options))
