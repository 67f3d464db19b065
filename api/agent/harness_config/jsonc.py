"""JSON and JSON with comments and trailing commas, edited by spans.

The text is parsed into the byte ranges of its values; an edit replaces,
inserts or removes one range, indented like its neighbours, and leaves every
other byte as it was (comments, order, blank lines, the file's own
indentation). Why not a library: the round-trip ones tried (json5kit 0.4.0,
jsoncgx 1.1) refused a block comment, and ``json.dumps`` of the parsed value
would drop every comment in the file.

A key is found by its parsed name, never by its text; a key found twice is
replaced once and its duplicates removed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


class ConfigError(ValueError):
    """A config file that cannot be parsed (it is left untouched)."""


KeyPath = Sequence[str]


@dataclass
class _Entry:
    """An object's member (``key`` set, ``start`` at its key) or an array's item."""

    key: str | None
    start: int
    value: _Node

    @property
    def end(self) -> int:
        return self.value.end


@dataclass
class _Node:
    start: int
    end: int
    kind: str = "scalar"  # "object", "array" or "scalar"
    entries: list[_Entry] = field(default_factory=list)


_WS = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERAL = re.compile(r"true|false|null")


class _Parser:
    def __init__(self, text: str, where: str) -> None:
        self.s = text
        self.where = where
        self.i = 0

    def fail(self, what: str) -> ConfigError:
        line = self.s.count("\n", 0, self.i) + 1
        col = self.i - (self.s.rfind("\n", 0, self.i) + 1) + 1
        return ConfigError(f"{self.where}: line {line}, column {col}: {what}")

    def ws(self) -> None:
        m = _WS.match(self.s, self.i)
        if m:
            self.i = m.end()
        if self.s.startswith("/*", self.i):
            raise self.fail("a comment that never ends")

    def document(self) -> _Node:
        self.ws()
        node = self.value()
        self.ws()
        if self.i != len(self.s):
            raise self.fail("text after the end of the document")
        return node

    def value(self) -> _Node:
        if self.i >= len(self.s):
            raise self.fail("the file ends where a value should be")
        if self.s[self.i] in "{[":
            return self.container()
        for pattern in (_STRING, _NUMBER, _LITERAL):
            m = pattern.match(self.s, self.i)
            if m:
                self.i = m.end()
                return _Node(m.start(), m.end())
        raise self.fail("expected a value")

    def container(self) -> _Node:
        is_object = self.s[self.i] == "{"
        close = "}" if is_object else "]"
        node = _Node(self.i, self.i, "object" if is_object else "array")
        self.i += 1
        self.ws()
        while not self.s.startswith(close, self.i):
            start, key = self.i, None
            if is_object:
                m = _STRING.match(self.s, self.i)
                if not m:
                    raise self.fail("expected a quoted key")
                key = json.loads(m.group())
                self.i = m.end()
                self.ws()
                if not self.s.startswith(":", self.i):
                    raise self.fail("expected ':'")
                self.i += 1
                self.ws()
            node.entries.append(_Entry(key, start, self.value()))
            self.ws()
            if self.s.startswith(",", self.i):
                self.i += 1
                self.ws()
            elif not self.s.startswith(close, self.i):
                raise self.fail(f"expected ',' or '{close}'")
        self.i += 1
        node.end = self.i
        return node


_COMMENT_OR_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA_OR_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|,(?=\s*[}\]])')


def _as_json(text: str) -> Any:
    """The value of a JSONC span: comments and trailing commas out, strings kept."""
    text = _COMMENT_OR_STRING.sub(lambda m: m.group() if m.group()[0] == '"' else " ", text)
    text = _TRAILING_COMMA_OR_STRING.sub(lambda m: m.group() if m.group()[0] == '"' else "", text)
    return json.loads(text)


class JsoncDocument:
    """A JSON or JSONC file, edited by spans (see the module doc)."""

    def __init__(self, text: str, where: str = "the file") -> None:
        self._where = where
        self._text = text if text.strip() else "{}\n"
        self._root = self._parse()

    def _parse(self) -> _Node:
        root = _Parser(self._text, self._where).document()
        if root.kind != "object":
            raise ConfigError(f"{self._where}: the document is not a JSON object")
        return root

    def text(self) -> str:
        return self._text

    def get(self, path: KeyPath) -> Any:
        node = self._find(path)
        return None if node is None else _as_json(self._text[node.start : node.end])

    def _find(self, path: KeyPath) -> _Node | None:
        node: _Node | None = self._root
        for key in path:
            if node is None or node.kind != "object":
                return None
            node = next((e.value for e in node.entries if e.key == key), None)
        return node

    # -- objects -----------------------------------------------------------------------

    def set(self, path: KeyPath, value: Any) -> None:
        """Set ``path`` to ``value``, making the objects above it as needed."""
        parent = self._root
        for i, step in enumerate(path[:-1]):
            found = [e for e in parent.entries if e.key == step]
            if not found or found[0].value.kind != "object":
                nested: Any = value
                for outer in reversed(path[i + 1 :]):
                    nested = {outer: nested}
                if found:
                    self._replace(found[0].value, nested)
                else:
                    self._insert(parent, step, nested)
                return
            parent = found[0].value
        found = [e for e in parent.entries if e.key == path[-1]]
        for extra in reversed(found[1:]):  # a duplicate key never survives an edit
            self._remove(parent, extra)
            parent = self._at(path[:-1])
        first = next((e for e in parent.entries if e.key == path[-1]), None)
        if first is None:
            self._insert(parent, path[-1], value)
        else:
            self._replace(first.value, value)

    def delete(self, path: KeyPath) -> bool:
        """Remove ``path`` (every copy of a duplicated key); False if absent."""
        parent = self._find(path[:-1])
        if parent is None or parent.kind != "object":
            return False
        found = [e for e in parent.entries if e.key == path[-1]]
        for entry in reversed(found):
            self._remove(parent, entry)
            parent = self._at(path[:-1])
        return bool(found)

    # -- arrays ------------------------------------------------------------------------

    def append(self, path: KeyPath, value: Any) -> None:
        """Add ``value`` at the end of the array at ``path`` (made if absent)."""
        node = self._find(path)
        if node is None or node.kind != "array":
            self.set(path, [value])
            return
        self._insert(node, None, value)

    def remove_where(self, path: KeyPath, matches: Callable[[Any], bool]) -> int:
        """Remove the items of the array at ``path`` that ``matches``; how many."""
        removed = 0
        while True:
            node = self._find(path)
            if node is None or node.kind != "array":
                return removed
            hit = next(
                (e for e in node.entries if matches(self.get_span(e.value))),
                None,
            )
            if hit is None:
                return removed
            self._remove(node, hit)
            removed += 1

    def get_span(self, node: _Node) -> Any:
        return _as_json(self._text[node.start : node.end])

    # -- the edits -----------------------------------------------------------------------

    def _at(self, path: KeyPath) -> _Node:
        node = self._find(path)
        assert node is not None
        return node

    def _indent_at(self, pos: int) -> str:
        line_start = self._text.rfind("\n", 0, pos) + 1
        m = re.match(r"[ \t]*", self._text[line_start:])
        return m.group() if m else ""

    def _unit(self) -> str:
        """The file's indentation step (two spaces where it cannot be told)."""
        m = re.search(r"\n([ \t]+)\S", self._text)
        return m.group(1) if m else "  "

    def _render(self, value: Any, indent: str) -> str:
        """``value`` as JSON, indented as the file is, its lines under ``indent``."""
        unit = self._unit()
        step: int | str = "\t" if "\t" in unit else len(unit)
        return json.dumps(value, indent=step, ensure_ascii=False).replace("\n", "\n" + indent)

    def _replace(self, node: _Node, value: Any) -> None:
        old = self._text[node.start : node.end]
        # A value written on one line (a compact file) is replaced on one line.
        if "\n" not in old and len(old) > 2:
            rendered = json.dumps(value, ensure_ascii=False)
        else:
            rendered = self._render(value, self._indent_at(node.start))
        self._text = self._text[: node.start] + rendered + self._text[node.end :]
        self._root = self._parse()

    def _insert(self, container: _Node, key: str | None, value: Any) -> None:
        s = self._text
        prefix = "" if key is None else f"{json.dumps(key, ensure_ascii=False)}: "
        if container.entries:
            last = container.entries[-1]
            multiline = "\n" in s[container.start : last.start]
            indent = self._indent_at(last.start) if multiline else ""
            rendered = self._render(value, indent) if multiline else json.dumps(value)
            # After the last entry's comma if it has one (a file written with
            # trailing commas keeps them), else after a comma added to it; and
            # after a comment on the rest of its line, which stays its own.
            m = re.match(r"[ \t]*,", s[last.end :])
            if m:
                pos, tail = last.end + m.end(), ","
            else:
                s = s[: last.end] + "," + s[last.end :]
                pos, tail = last.end + 1, ""
            if multiline:
                rest = re.match(r"[ \t]*(?://[^\n]*)?(?=\n)", s[pos:])
                pos += rest.end() if rest else 0
                s = s[:pos] + f"\n{indent}{prefix}{rendered}{tail}" + s[pos:]
            else:
                s = s[:pos] + f" {prefix}{rendered}{tail}" + s[pos:]
        else:
            outer = self._indent_at(container.start)
            indent = outer + self._unit()
            inside = s[container.start + 1 : container.end - 1].rstrip()  # a comment stays
            entry = f"{prefix}{self._render(value, indent)}"
            s = (
                s[: container.start + 1]
                + inside
                + f"\n{indent}{entry}\n{outer}"
                + s[container.end - 1 :]
            )
        self._text = s
        self._root = self._parse()

    def _remove(self, container: _Node, entry: _Entry) -> None:
        s = self._text
        index = container.entries.index(entry)
        start, end = entry.start, entry.end
        cuts = []
        m = re.match(r"[ \t]*,", s[end:])
        if m:
            end += m.end()
        elif index > 0:  # the last entry: the comma before it goes too
            k = s.find(",", container.entries[index - 1].end, start)
            if k >= 0:
                between = s[k + 1 : start]
                # On one line, the space after the comma with it; across lines only
                # the comma (a comment after it belongs to the entry before).
                cuts.append(
                    (k, start) if not between.strip() and "\n" not in between else (k, k + 1)
                )
        line_start = s.rfind("\n", 0, start) + 1
        if not s[line_start:start].strip():  # an entry on lines of its own: the lines go
            start = line_start
            m2 = re.match(r"[ \t]*\n", s[end:])
            if m2:
                end += m2.end()
        elif m:  # on a shared line, the space before it goes with it
            start = len(s[:start].rstrip(" \t")) if s[:start].rstrip(" \t").endswith(",") else start
        cuts.append((start, end))
        for lo, hi in sorted(cuts, reverse=True):
            s = s[:lo] + s[hi:]
        if len(container.entries) == 1:  # empty now: as an empty one is written, {} or []
            close = s.find("}" if container.kind == "object" else "]", container.start)
            if not s[container.start + 1 : close].strip():
                s = s[: container.start + 1] + s[close:]
        self._text = s
        self._root = self._parse()
