"""The model tools' JSON schemas, made from the typed queries they run.

A bound a model is shown is the bound the store enforces, because both come
from one place: grep's from ``GrepQuery``, a line window's from ``LineQuery``, a
tail's from ``TailQuery``, a listing's from ``ListQuery`` (the HTTP API
publishes the same models in OpenAPI). Only what is the tools' own is written
here: the answer size (a byte window and a tail never exceed one answer) and the
descriptions a model reads.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

from overspill.artifacts.queries import (
    GrepQuery,
    LineQuery,
    ListQuery,
    SearchQuery,
    TailQuery,
    TextQuery,
)

DEFAULT_CHARS = 16_000
MAX_CHARS = 64_000


def bounds(model: type[BaseModel], field: str) -> dict[str, int]:
    """The JSON-schema bounds of one field of a query model."""
    out: dict[str, int] = {}
    for rule in model.model_fields[field].metadata:
        for attr, key in (
            ("ge", "minimum"),
            ("le", "maximum"),
            ("min_length", "minLength"),
            ("max_length", "maxLength"),
        ):
            value = getattr(rule, attr, None)
            if value is not None:
                out[key] = int(value)
        if getattr(rule, "gt", None) is not None:
            out["minimum"] = int(rule.gt) + 1
    return out


def _integer(model: type[BaseModel], field: str, description: str, **extra: int) -> dict[str, Any]:
    return {"type": "integer", **bounds(model, field), **extra, "description": description}


_ID = {
    "type": "string",
    "maxLength": 200,
    "description": "The artifact id (art_…) from an output marker or an earlier answer; "
    "artifact://art_… and any letter case are accepted.",
}


def tool_definitions(max_chars: int = DEFAULT_CHARS) -> list[dict[str, Any]]:
    """The four artifact tools, as an answer of ``max_chars`` enforces them."""
    return [
        {
            "name": "artifact_read",
            "description": (
                "Read part of a stored output. Give a byte window (offset, limit), a line "
                "window (start_line, line_count) or a tail (tail_lines or tail_bytes); one of "
                "them. The answer states the bytes and lines it shows, whether the whole "
                "output is stored, and the exact call that continues."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "id": _ID,
                    "offset": _integer(TextQuery, "offset", "Byte offset"),
                    "limit": _integer(
                        TextQuery,
                        "limit",
                        f"Bytes to read (default and most: {max_chars}; a larger limit is "
                        "cut to that, and the answer says which bytes it shows)",
                        maximum=MAX_CHARS,
                    ),
                    "hex": {
                        "type": "boolean",
                        "description": "Show the byte window as a hex dump (binary output)",
                    },
                    "start_line": _integer(LineQuery, "start", "1-based line"),
                    "line_count": _integer(LineQuery, "count", "Lines to read (default 200)"),
                    "tail_lines": _integer(TailQuery, "lines", "The last N lines"),
                    "tail_bytes": _integer(
                        TailQuery, "bytes", "The last N bytes", maximum=max_chars
                    ),
                },
                "required": ["id"],
                "additionalProperties": False,
            },
        },
        {
            "name": "artifact_grep",
            "description": (
                "Search a stored output with a regular expression (RE2 syntax, linear time). "
                "Returns matching lines with line numbers and optional context, and the exact "
                "call that resumes when the search stopped early."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "id": _ID,
                    "pattern": {"type": "string", **bounds(GrepQuery, "pattern")},
                    "ignore_case": {"type": "boolean"},
                    "fixed": {"type": "boolean", "description": "Match the pattern literally"},
                    "context": _integer(GrepQuery, "context", "Lines before and after each match"),
                    "max_matches": _integer(
                        GrepQuery, "max_matches", "Matches to return (default 50)"
                    ),
                    "offset": _integer(
                        GrepQuery,
                        "offset",
                        "Resume a search at this byte (from a previous answer)",
                    ),
                },
                "required": ["id", "pattern"],
                "additionalProperties": False,
            },
        },
        {
            "name": "artifact_search",
            "description": (
                "Search every stored output of this session (or of all your sessions) for a "
                "regular expression (RE2): which outputs printed it, the matching lines with "
                "their line numbers, newest output first, and the exact call that goes on. "
                "Use it to find an error you saw earlier when you no longer have its id."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", **bounds(SearchQuery, "pattern")},
                    "ignore_case": {"type": "boolean"},
                    "fixed": {"type": "boolean", "description": "Match the pattern literally"},
                    "all_sessions": {"type": "boolean"},
                    "tool": {"type": "string", **bounds(SearchQuery, "tool")},
                    "max_matches": _integer(
                        SearchQuery, "max_matches", "Lines to return (default 30)"
                    ),
                    "cursor": {"type": "string", **bounds(SearchQuery, "cursor")},
                },
                "required": ["pattern"],
                "additionalProperties": False,
            },
        },
        {
            "name": "artifact_info",
            "description": (
                "What a stored output is: command, stream, size, lines, state (and whether "
                "the whole output is stored), times, expiry and the other stream of the same run."
            ),
            "input_schema": {
                "type": "object",
                "properties": {"id": _ID},
                "required": ["id"],
                "additionalProperties": False,
            },
        },
        {
            "name": "artifact_list",
            "description": (
                "List stored outputs, newest first: of this session by default, or of every "
                "session of yours. Use it to find an id again after it left the context."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "all_sessions": {"type": "boolean"},
                    "include_gone": {
                        "type": "boolean",
                        "description": "Also list deleted and expired outputs (marked)",
                    },
                    "limit": _integer(ListQuery, "limit", "Rows (default 20)", maximum=100),
                    "cursor": {"type": "string", **bounds(ListQuery, "cursor")},
                },
                "additionalProperties": False,
            },
        },
    ]


TOOL_DEFINITIONS = tool_definitions()

SAVE_DEFINITION: dict[str, Any] = {
    "name": "artifact_save",
    "description": (
        "Store a result that is too big to keep in the conversation (a fetched page, a file, "
        "another tool's answer). Returns its id, a head/tail preview and how to read the rest."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "content": {"type": "string", "description": "The text to store"},
            "tool": {"type": "string", "maxLength": 100, "description": "What produced it"},
            "name": {"type": "string", "maxLength": 500, "description": "A suggested name"},
            "media_type": {"type": "string", "maxLength": 200},
            "budget": {
                "type": "integer",
                "minimum": 2_000,
                "maximum": 1_000_000,
                "description": "Bytes of preview to return (default 50000)",
            },
        },
        "required": ["content"],
        "additionalProperties": False,
    },
}


def save_definition() -> dict[str, Any]:
    return copy.deepcopy(SAVE_DEFINITION)
