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

State = Literal["writing", "complete", "capped", "incomplete", "failed", "expired", "deleted"]
MAX_PAGE = 500


class _Query(BaseModel):
    model_config = ConfigDict(frozen=True)

    def params(self) -> dict[str, Any]:
        """The fields a caller set (defaults left out), for a query string or a
        printed continuation: what was asked, not every default."""
        return self.model_dump(exclude_defaults=True, mode="json")


class GrepQuery(_Query):
    pattern: str = Field(min_length=1, max_length=1000, description="RE2 pattern (linear time)")
    ignore_case: bool = False
    fixed: bool = Field(default=False, description="The pattern is a literal string")
    context: int = Field(default=0, ge=0, le=100, description="Lines before and after each match")
    max_matches: int = Field(default=100, ge=1, le=10_000)
    offset: int = Field(default=0, ge=0, le=2**62, description="Byte offset to resume a scan at")


class SearchQuery(_Query):
    """A search across a principal's own outputs, newest first."""

    pattern: str = Field(min_length=1, max_length=1000, description="RE2 pattern (linear time)")
    ignore_case: bool = False
    fixed: bool = Field(default=False, description="The pattern is a literal string")
    session_id: str | None = Field(
        default=None, max_length=200, description="Only this session's outputs (default: all)"
    )
    tool: str | None = Field(default=None, max_length=100, description="Only outputs of this tool")
    name: str | None = Field(default=None, max_length=500, description="Name contains this")
    state: State | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    max_matches: int = Field(default=50, ge=1, le=1000, description="Matching lines per call")
    max_scan_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1024, le=2**30, description="Bytes searched per call"
    )
    cursor: str | None = Field(default=None, max_length=1000, description="From next_cursor")


class TextQuery(_Query):
    offset: int = Field(default=0, ge=0, le=2**62, description="Byte offset of the window")
    limit: int = Field(default=65536, ge=1, le=16 * 1024 * 1024, description="Bytes to read")


class TailQuery(_Query):
    lines: int | None = Field(default=None, ge=1, le=100_000, description="The last N lines")
    bytes: int | None = Field(default=None, ge=1, le=2**62, description="The last N bytes")
    max_bytes: int | None = Field(default=None, ge=1, le=16 * 1024 * 1024)


class LineQuery(_Query):
    start: int = Field(default=1, ge=1, le=2**62, description="1-based line number")
    count: int = Field(default=100, ge=1, le=10_000)
    max_bytes: int | None = Field(default=None, ge=1, le=16 * 1024 * 1024)


class ListQuery(_Query):
    owner: str | None = Field(default=None, max_length=200, description="Admins: any owner")
    session_id: str | None = Field(default=None, max_length=200)
    kind: str | None = Field(default=None, max_length=50)
    state: State | None = None
    min_size: int | None = Field(default=None, ge=0, le=2**62)
    created_after: datetime | None = None
    created_before: datetime | None = None
    include_gone: bool = Field(default=False, description="Also list expired and deleted")
    sort: Literal["created", "size"] = "created"
    order: Literal["asc", "desc"] = "desc"
    limit: int = Field(default=50, ge=1, le=MAX_PAGE)
    cursor: str | None = Field(default=None, max_length=500)
