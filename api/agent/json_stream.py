"""Reading one JSON document from a stream without holding its big strings.

A harness hands its hook the whole of a command's output inside one JSON
object on stdin (Gemini CLI's ``AfterTool``: several megabytes). ``JsonStream``
walks the object and hands each string value out in pieces as it is decoded,
so a hook can store a long output while holding a chunk of it at a time; small
values (the tool's name, its input) are read whole, up to a bound.

Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import IO, Any

_CHUNK = 1 << 16
_WHITESPACE = " \t\r\n"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class JsonStreamError(ValueError):
    """The input is not the JSON it should be (or a small value is too big)."""


class JsonStream:
    """A pull reader over text: ``members()`` of an object, ``string_pieces()``
    of a string value, ``value()`` of a small one, ``skip()`` of anything."""

    def __init__(self, source: IO[str], small_limit: int = 1 << 20) -> None:
        self._source = source
        self._buf = ""
        self._pos = 0
        self._small_limit = small_limit

    def _fill(self) -> bool:
        chunk = self._source.read(_CHUNK)
        if not chunk:
            return False
        self._buf = self._buf[self._pos :] + chunk
        self._pos = 0
        return True

    def _peek(self) -> str:
        """The next character that is not whitespace ("" at the end)."""
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in _WHITESPACE:
                self._pos += 1
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._fill():
                return ""

    def _take(self, expected: str) -> None:
        if self._peek() != expected:
            raise JsonStreamError(f"expected {expected!r} at offset {self._pos}")
        self._pos += 1

    def members(self) -> Iterator[str]:
        """The keys of the object that starts here; after each, the caller reads or
        skips its value before asking for the next."""
        self._take("{")
        if self._peek() == "}":
            self._pos += 1
            return
        while True:
            self._take('"')
            key = "".join(self._string_rest())
            self._take(":")
            yield key
            nxt = self._peek()
            self._pos += 1
            if nxt == "}":
                return
            if nxt != ",":
                raise JsonStreamError(f"expected ',' or '}}' after the value of {key!r}")

    def is_string(self) -> bool:
        return self._peek() == '"'

    def string_pieces(self) -> Iterator[str]:
        """The string value that starts here, decoded, in pieces."""
        self._take('"')
        yield from self._string_rest()

    def _string_rest(self) -> Iterator[str]:
        while True:
            if self._pos >= len(self._buf) and not self._fill():
                raise JsonStreamError("the input ends inside a string")
            buf, pos = self._buf, self._pos
            quote = buf.find('"', pos)
            backslash = buf.find("\\", pos)
            stop = min(i for i in (quote, backslash, len(buf)) if i >= 0)
            if stop > pos:
                yield buf[pos:stop]
            self._pos = stop
            if stop == quote:
                self._pos += 1
                return
            if stop == backslash:
                yield self._escape()

    def _escape(self) -> str:
        self._need(2)
        code = self._buf[self._pos + 1]
        if code in _ESCAPES:
            self._pos += 2
            return _ESCAPES[code]
        if code != "u":
            raise JsonStreamError(f"bad escape \\{code}")
        self._need(12)  # room for a surrogate pair
        unit = int(self._buf[self._pos + 2 : self._pos + 6], 16)
        self._pos += 6
        if 0xD800 <= unit < 0xDC00 and self._buf[self._pos : self._pos + 2] == "\\u":
            low = int(self._buf[self._pos + 2 : self._pos + 6], 16)
            if 0xDC00 <= low < 0xE000:
                self._pos += 6
                return chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
        return chr(unit)

    def _need(self, n: int) -> None:
        while len(self._buf) - self._pos < n and self._fill():
            pass

    def value(self) -> Any:
        """A small value read whole (raises if it is bigger than the bound)."""
        parts: list[str] = []
        size = 0

        def keep(piece: str) -> None:
            nonlocal size
            size += len(piece)
            if size > self._small_limit:
                raise JsonStreamError(f"a value longer than {self._small_limit} characters")
            parts.append(piece)

        self._walk(keep)
        return json.loads("".join(parts))

    def skip(self) -> None:
        self._walk(lambda piece: None)

    def _walk(self, out: Callable[[str], None]) -> None:
        """Pass the value that starts here to ``out`` as JSON text, in pieces."""
        c = self._peek()
        if c == '"':
            self._pos += 1
            out('"')
            for piece in self._string_rest():
                out(json.dumps(piece)[1:-1])
            out('"')
        elif c in "{[":
            self._pos += 1
            out(c)
            close = "}" if c == "{" else "]"
            first = True
            while self._peek() != close:
                if not first:
                    self._take(",")
                    out(",")
                first = False
                if c == "{":
                    self._walk(out)
                    self._take(":")
                    out(":")
                self._walk(out)
            self._pos += 1
            out(close)
        elif c:  # a number, true, false or null: up to the next delimiter
            pieces = []
            while True:
                start = self._pos
                while self._pos < len(self._buf) and self._buf[self._pos] not in ",}] \t\r\n":
                    self._pos += 1
                pieces.append(self._buf[start : self._pos])
                if self._pos < len(self._buf) or not self._fill():
                    break
            out("".join(pieces))
        else:
            raise JsonStreamError("the input ends where a value should be")
