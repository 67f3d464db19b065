"""The model tools' table: names, titles, descriptions, JSON schemas and MCP
annotations, on the standard library alone.

A bound a model is shown is the bound the store enforces, because both come
from ``artifacts.bounds``: the query models (``artifacts.queries``) read the
same numbers. The table imports nothing heavy, so ``overspill mcp`` answers a
harness's ``tools/list`` from it before pydantic or the store are loaded (a
harness starts its servers in parallel with its first model call, and one that
answers late is left out of that call).

Annotations tell a harness what a tool does to the world: every read is
``readOnlyHint`` (Codex then runs it without asking), ``bash_kill`` is
destructive, ``bash`` reaches the open world.
"""

from __future__ import annotations

import copy
from typing import Any

from overspill.artifacts import bounds as b

DEFAULT_CHARS = b.DEFAULT_ANSWER_CHARS
MAX_CHARS = b.MAX_ANSWER_CHARS

READ_ONLY = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}
"""A read of what is stored: changes nothing, safe to repeat."""


def _integer(description: str, *, minimum: int = 0, maximum: int = b.MAX_OFFSET) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": maximum, "description": description}


def _string(max_length: int, description: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string", **extra, "maxLength": max_length}
    if description:
        out["description"] = description
    return out


_ID = {
    "type": "string",
    "maxLength": b.MAX_ID_CHARS,
    "description": "The artifact id (art_…) from an output marker or an earlier answer; "
    "artifact://art_… and any letter case are accepted.",
}


def tool_definitions(max_chars: int = DEFAULT_CHARS) -> list[dict[str, Any]]:
    """The four artifact tools, as an answer of ``max_chars`` enforces them."""
    return [
        {
            "name": "artifact_read",
            "title": "Read a stored output",
            "annotations": READ_ONLY,
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
                    "offset": _integer("Byte offset"),
                    "limit": _integer(
                        f"Bytes to read (default and most: {max_chars}; a larger limit is "
                        "cut to that, and the answer says which bytes it shows)",
                        minimum=1,
                        maximum=MAX_CHARS,
                    ),
                    "hex": {
                        "type": "boolean",
                        "description": "Show the byte window as a hex dump (binary output)",
                    },
                    "start_line": _integer("1-based line", minimum=1),
                    "line_count": _integer(
                        f"Lines to read (default {b.DEFAULT_TOOL_LINES})",
                        minimum=1,
                        maximum=b.MAX_LINE_COUNT,
                    ),
                    "tail_lines": _integer("The last N lines", minimum=1, maximum=b.MAX_TAIL_LINES),
                    "tail_bytes": _integer("The last N bytes", minimum=1, maximum=max_chars),
                },
                "required": ["id"],
                "additionalProperties": False,
            },
        },
        {
            "name": "artifact_grep",
            "title": "Search a stored output",
            "annotations": READ_ONLY,
            "description": (
                "Search a stored output with a regular expression (RE2 syntax, linear time), "
                "or for its failure-like lines (failures: true, as the quotes in a truncated "
                "output count them). Returns matching lines with line numbers and optional "
                "context, and the exact call that resumes when the search stopped early."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "id": _ID,
                    "pattern": _string(b.MAX_PATTERN_CHARS, minLength=1),
                    "failures": {
                        "type": "boolean",
                        "description": "Search for failure-like lines instead of a pattern",
                    },
                    "ignore_case": {"type": "boolean"},
                    "fixed": {"type": "boolean", "description": "Match the pattern literally"},
                    "context": _integer(
                        "Lines before and after each match", maximum=b.MAX_CONTEXT_LINES
                    ),
                    "max_matches": _integer(
                        f"Matches to return (default {b.DEFAULT_TOOL_GREP_MATCHES})",
                        minimum=1,
                        maximum=b.MAX_GREP_MATCHES,
                    ),
                    "offset": _integer("Resume a search at this byte (from a previous answer)"),
                },
                "required": ["id"],
                "additionalProperties": False,
            },
        },
        {
            "name": "artifact_search",
            "title": "Search all stored outputs",
            "annotations": READ_ONLY,
            "description": (
                "Search every stored output of this session (or of all your sessions) for a "
                "regular expression (RE2): which outputs printed it, the matching lines with "
                "their line numbers, newest output first, and the exact call that goes on. "
                "Use it to find an error you saw earlier when you no longer have its id."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "pattern": _string(b.MAX_PATTERN_CHARS, minLength=1),
                    "ignore_case": {"type": "boolean"},
                    "fixed": {"type": "boolean", "description": "Match the pattern literally"},
                    "all_sessions": {"type": "boolean"},
                    "tool": _string(b.MAX_TOOL_CHARS),
                    "max_matches": _integer(
                        f"Lines to return (default {b.DEFAULT_TOOL_SEARCH_MATCHES})",
                        minimum=1,
                        maximum=b.MAX_SEARCH_MATCHES,
                    ),
                    "cursor": _string(b.MAX_CURSOR_CHARS),
                },
                "required": ["pattern"],
                "additionalProperties": False,
            },
        },
        {
            "name": "artifact_info",
            "title": "Describe a stored output",
            "annotations": READ_ONLY,
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
            "title": "List stored outputs",
            "annotations": READ_ONLY,
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
                    "limit": _integer(
                        f"Rows (default {b.DEFAULT_TOOL_LIST_ROWS})",
                        minimum=1,
                        maximum=b.MAX_TOOL_LIST_ROWS,
                    ),
                    "cursor": _string(b.MAX_LIST_CURSOR_CHARS),
                },
                "additionalProperties": False,
            },
        },
    ]


TOOL_DEFINITIONS = tool_definitions()

SAVE_DEFINITION: dict[str, Any] = {
    "name": "artifact_save",
    "title": "Store a large result",
    "description": (
        "Store a result that is too big to keep in the conversation (a fetched page, a file, "
        "another tool's answer). Returns its id, a head/tail preview and how to read the rest."
    ),
    "annotations": {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": False,
    },
    "input_schema": {
        "type": "object",
        "properties": {
            "content": {"type": "string", "description": "The text to store"},
            "tool": _string(b.MAX_TOOL_CHARS, "What produced it"),
            "name": _string(b.MAX_NAME_CHARS, "A suggested name"),
            "media_type": _string(b.MAX_MEDIA_TYPE_CHARS),
            "budget": _integer(
                f"Bytes of preview to return (default {b.DEFAULT_PREVIEW_BUDGET})",
                minimum=b.MIN_PREVIEW_BUDGET,
                maximum=b.MAX_PREVIEW_BUDGET,
            ),
        },
        "required": ["content"],
        "additionalProperties": False,
    },
}


def save_definition() -> dict[str, Any]:
    return copy.deepcopy(SAVE_DEFINITION)


_JOB_ID = {
    "type": "object",
    "properties": {"job_id": _string(b.MAX_JOB_ID_CHARS)},
    "required": ["job_id"],
    "additionalProperties": False,
}

BASH_DEFINITIONS: list[dict[str, Any]] = [
    {
        "name": "bash",
        "title": "Run a shell command",
        "description": (
            "Run a command with bash -c. The answer is its output as you should see it: "
            "when a stream is longer than the inline limit you get its last part, and the "
            "whole stream is stored as an artifact whose id and read calls the answer gives. "
            "With background=true it starts the command and returns a job id at once."
        ),
        "annotations": {
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": False,
            "openWorldHint": True,
        },
        "input_schema": {
            "type": "object",
            "properties": {
                "command": _string(b.MAX_COMMAND_CHARS, minLength=1),
                "timeout_ms": _integer(
                    "Milliseconds before the command is stopped",
                    minimum=1,
                    maximum=b.MAX_TIMEOUT_MS,
                ),
                "workdir": _string(b.MAX_WORKDIR_CHARS),
                "background": {"type": "boolean"},
                "description": _string(500),
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    },
    {
        "name": "bash_output",
        "title": "Read a background job's output",
        "description": "What a background job printed since the last read (reads consume).",
        # Consuming, so not idempotent; it changes nothing outside the job's read cursor.
        "annotations": {
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": False,
            "openWorldHint": False,
        },
        "input_schema": _JOB_ID,
    },
    {
        "name": "bash_kill",
        "title": "Stop a background job",
        "description": "Stop a background job and its whole process tree.",
        "annotations": {
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": True,
            "openWorldHint": False,
        },
        "input_schema": _JOB_ID,
    },
]
