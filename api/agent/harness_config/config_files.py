"""Editing a harness's own config file without regenerating it.

``overspill install`` adds one entry to a file a person also edits by hand (and
a harness rewrites): everything else in it -- comments, order, other servers,
the indentation -- must stay byte for byte. So each format is edited in place:

- TOML (Codex) with ``tomlkit``, YAML (Goose) with ``ruamel.yaml``: both keep a
  document's comments and layout through a load and a dump.
- JSON and JSON with comments and trailing commas (Claude Code, Cursor, Gemini
  CLI, opencode) by spans, in ``jsonc``.

An entry is found by its parsed key, never by its text (Claude Code rewrites
``~/.claude.json`` at every start, reindenting it); a key found twice is
replaced once and its duplicates removed. A file that does not parse is never
written: ``ConfigError`` says where it broke.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from overspill.api.agent.harness_config.jsonc import ConfigError, JsoncDocument

Path_ = Sequence[str]


class ConfigDocument(Protocol):
    """One config file's text, edited in place."""

    def get(self, path: Path_) -> Any:
        """The parsed value at ``path`` (None where absent)."""
        ...

    def set(self, path: Path_, value: Any) -> None:
        """Set ``path`` to ``value``, making the objects above it as needed."""
        ...

    def delete(self, path: Path_) -> bool:
        """Remove ``path``; False when it was not there."""
        ...

    def text(self) -> str: ...


# -- TOML and YAML, through round-trip libraries ---------------------------------------------


class TomlDocument:
    def __init__(self, text: str, where: str = "the file") -> None:
        import tomlkit
        from tomlkit.exceptions import TOMLKitError

        try:
            self._doc = tomlkit.parse(text)
        except TOMLKitError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        self._blank_end = text.endswith("\n\n")

    def text(self) -> str:
        import tomlkit

        text: str = tomlkit.dumps(self._doc)
        # tomlkit puts a blank line before a table it adds, and leaves it when the
        # table goes: at the end of the file, the blank line goes with the table.
        if text.endswith("\n\n") and not self._blank_end:
            text = text.rstrip("\n") + "\n"
        return text

    def get(self, path: Path_) -> Any:
        node = _walk(self._doc, path)
        return node.unwrap() if hasattr(node, "unwrap") else node

    def set(self, path: Path_, value: Any) -> None:
        import tomlkit

        node: Any = self._doc
        for key in path[:-1]:
            if key not in node:
                node[key] = tomlkit.table(is_super_table=True)
            node = node[key]
        table = tomlkit.table()
        if isinstance(value, dict):
            for k, v in value.items():
                table[k] = _toml_value(v)
            node[path[-1]] = table
        else:
            node[path[-1]] = value

    def delete(self, path: Path_) -> bool:
        node: Any = self._doc
        for key in path[:-1]:
            if key not in node:
                return False
            node = node[key]
        if path[-1] not in node:
            return False
        del node[path[-1]]
        return True


def _toml_value(value: Any) -> Any:
    """Nested tables of an entry written inline (``env = { K = "v" }``), as
    Codex's own documentation writes them."""
    import tomlkit

    if isinstance(value, dict):
        inline = tomlkit.inline_table()
        inline.update(value)
        return inline
    return value


class YamlDocument:
    def __init__(self, text: str, where: str = "the file") -> None:
        from ruamel.yaml import YAML
        from ruamel.yaml.error import YAMLError

        self._yaml = YAML()
        self._yaml.preserve_quotes = True
        try:
            self._doc = self._yaml.load(text) if text.strip() else None
        except YAMLError as exc:
            raise ConfigError(f"{where}: {str(exc).splitlines()[0]}") from None
        if self._doc is None:
            from ruamel.yaml.comments import CommentedMap

            self._doc = CommentedMap()
        if not hasattr(self._doc, "get"):
            raise ConfigError(f"{where}: the document is not a mapping")

    def text(self) -> str:
        import io

        out = io.StringIO()
        self._yaml.dump(self._doc, out)
        return out.getvalue()

    def get(self, path: Path_) -> Any:
        return _walk(self._doc, path)

    def set(self, path: Path_, value: Any) -> None:
        from ruamel.yaml.comments import CommentedMap

        node: Any = self._doc
        for key in path[:-1]:
            if node.get(key) is None:
                node[key] = CommentedMap()
            node = node[key]
        node[path[-1]] = value

    def delete(self, path: Path_) -> bool:
        node: Any = self._doc
        for key in path[:-1]:
            node = node.get(key) if hasattr(node, "get") else None
            if node is None:
                return False
        if path[-1] not in node:
            return False
        del node[path[-1]]
        return True


def document(kind: str, text: str, where: str) -> ConfigDocument:
    """A document of ``kind`` (json, toml, yaml) from a file's text."""
    if kind == "toml":
        return TomlDocument(text, where)
    if kind == "yaml":
        return YamlDocument(text, where)
    return JsoncDocument(text, where)


def _walk(node: Any, path: Path_) -> Any:
    """The value at ``path`` in a parsed document (None where the path ends early)."""
    for key in path:
        if not hasattr(node, "get"):
            return None
        node = node.get(key)
        if node is None:
            return None
    return node
