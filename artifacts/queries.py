"""What a caller asks of the store, one typed model per read: the HTTP query
string (FastAPI reads these models as query parameters), the store, the HTTP
client, the CLI and the model-facing tools all pass the same object, so a new
option is added in one place and its bounds are the same everywhere.

The bounds here are the published ones (OpenAPI, the tools' schemas); the store
still checks what only it can (a cursor it issued, text without NUL).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from overspill.artifacts import bounds as b
from overspill.artifacts.bounds import MAX_OFFSET, MAX_PAGE
from overspill.artifacts.errors import InvalidArgument

State = Literal["writing", "complete", "capped", "incomplete", "failed", "expired", "deleted"]


class _Query(BaseModel):
    model_config = ConfigDict(frozen=True)

    def params(self) -> dict[str, Any]:
        """The fields a caller set (defaults left out), for a query string or a
        printed continuation: what was asked, not every default."""
        return self.model_dump(exclude_defaults=True, mode="json")


class GrepQuery(_Query):
    pattern: str = Field(
        min_length=1, max_length=b.MAX_PATTERN_CHARS, description="RE2 pattern (linear time)"
    )
    ignore_case: bool = False
    fixed: bool = Field(default=False, description="The pattern is a literal string")
    context: int = Field(
        default=0, ge=0, le=b.MAX_CONTEXT_LINES, description="Lines before and after each match"
    )
    max_matches: int = Field(default=b.DEFAULT_GREP_MATCHES, ge=1, le=b.MAX_GREP_MATCHES)
    offset: int = Field(
        default=0, ge=0, le=MAX_OFFSET, description="Byte offset to resume a scan at"
    )
    final: bool = Field(
        default=False,
        description="max_matches ends the search (as grep -m): no page follows, and the "
        "last match's trailing context shows lines that match too",
    )


class GrepLinesQuery(_Query):
    """grep as ``grep -n`` prints it, streamed (``artifacts.grep.grep_text``): every
    match to the end (or ``max_count``), not pages of records."""

    pattern: str = Field(
        min_length=1, max_length=b.MAX_PATTERN_CHARS, description="RE2 pattern (linear time)"
    )
    ignore_case: bool = False
    fixed: bool = Field(default=False, description="The pattern is a literal string")
    context: int = Field(default=0, ge=0, le=b.MAX_CONTEXT_LINES, description="Lines around")
    before: int | None = Field(
        default=None, ge=0, le=b.MAX_CONTEXT_LINES, description="Lines before (-B)"
    )
    after: int | None = Field(
        default=None, ge=0, le=b.MAX_CONTEXT_LINES, description="Lines after (-A)"
    )
    invert: bool = Field(default=False, description="The lines that do not match (-v)")
    count: bool = Field(default=False, description="Only the number of matching lines (-c)")
    max_count: int | None = Field(default=None, ge=1, le=MAX_OFFSET, description="-m")
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET, description="Byte offset to resume at")


class SearchQuery(_Query):
    """A search across a principal's own outputs, newest first."""

    pattern: str = Field(
        min_length=1, max_length=b.MAX_PATTERN_CHARS, description="RE2 pattern (linear time)"
    )
    ignore_case: bool = False
    fixed: bool = Field(default=False, description="The pattern is a literal string")
    session_id: str | None = Field(
        default=None,
        max_length=b.MAX_SESSION_CHARS,
        description="Only this session's outputs (default: all)",
    )
    tool: str | None = Field(
        default=None, max_length=b.MAX_TOOL_CHARS, description="Only outputs of this tool"
    )
    name: str | None = Field(
        default=None, max_length=b.MAX_NAME_CHARS, description="Name contains this"
    )
    state: State | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    max_matches: int = Field(
        default=b.DEFAULT_SEARCH_MATCHES,
        ge=1,
        le=b.MAX_SEARCH_MATCHES,
        description="Matching lines per call",
    )
    max_scan_bytes: int = Field(
        default=b.DEFAULT_SEARCH_SCAN,
        ge=b.MIN_SEARCH_SCAN,
        le=b.MAX_SEARCH_SCAN,
        description="Bytes searched per call",
    )
    cursor: str | None = Field(
        default=None, max_length=b.MAX_CURSOR_CHARS, description="From next_cursor"
    )


class TextQuery(_Query):
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET, description="Byte offset of the window")
    limit: int = Field(
        default=b.DEFAULT_TEXT_LIMIT, ge=1, le=b.MAX_WINDOW_BYTES, description="Bytes to read"
    )


class TailQuery(_Query):
    """The last lines or bytes: one of the two (neither: the last 100 lines)."""

    lines: int | None = Field(
        default=None, ge=1, le=b.MAX_TAIL_LINES, description="The last N lines"
    )
    bytes: int | None = Field(default=None, ge=1, le=MAX_OFFSET, description="The last N bytes")
    max_bytes: int | None = Field(default=None, ge=1, le=b.MAX_WINDOW_BYTES)

    def chosen(self) -> tuple[int | None, int | None]:
        """``(lines, bytes)`` with exactly one set, checked here so that every
        path to a tail (HTTP, tools, in process) answers a bad pair alike."""
        if self.lines is not None and self.bytes is not None:
            raise InvalidArgument("give lines or bytes for a tail, not both")
        if self.lines is None and self.bytes is None:
            return b.DEFAULT_TAIL_LINES, None
        return self.lines, self.bytes


class LineQuery(_Query):
    start: int = Field(default=1, ge=1, le=MAX_OFFSET, description="1-based line number")
    count: int = Field(default=b.DEFAULT_LINE_COUNT, ge=1, le=b.MAX_LINE_COUNT)
    max_bytes: int | None = Field(default=None, ge=1, le=b.MAX_WINDOW_BYTES)


class ListQuery(_Query):
    owner: str | None = Field(
        default=None, max_length=b.MAX_OWNER_CHARS, description="Admins: any owner"
    )
    session_id: str | None = Field(default=None, max_length=b.MAX_SESSION_CHARS)
    kind: str | None = Field(default=None, max_length=b.MAX_KIND_CHARS)
    state: State | None = None
    min_size: int | None = Field(default=None, ge=0, le=MAX_OFFSET)
    created_after: datetime | None = None
    created_before: datetime | None = None
    include_gone: bool = Field(default=False, description="Also list expired and deleted")
    spill_path: str | None = Field(
        default=None, max_length=4096, description="Only the one that holds this legacy spill file"
    )
    sort: Literal["created", "size"] = "created"
    order: Literal["asc", "desc"] = "desc"
    limit: int = Field(default=b.DEFAULT_PAGE, ge=1, le=MAX_PAGE)
    cursor: str | None = Field(default=None, max_length=b.MAX_LIST_CURSOR_CHARS)
