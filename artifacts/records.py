"""What the store hands out: plain, immutable records (also the API's response shapes)."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

Role = Literal["agent", "user", "admin"]
ROLES: tuple[str, ...] = ("agent", "user", "admin")
FINAL_STATES = frozenset({"complete", "capped", "incomplete", "failed"})
GONE_STATES = frozenset({"expired", "deleted"})
STATES = ("writing", "complete", "capped", "incomplete", "failed", "expired", "deleted")


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


_M = TypeVar("_M", bound=BaseModel)


def from_row(model: type[_M], row: Any, **given: Any) -> _M:
    """The record of a database row: each field the row has by the same name is
    copied, and ``given`` names the ones that are worked out (a state, a default).
    One line per difference instead of one per column, so a column added to both
    the table and the record needs no edit here."""
    table: Any = type(row)
    fields = {name: getattr(row, name) for name in _shared(model, table)}
    fields.update(given)
    return model(**fields)


@functools.cache
def _shared(model: type[BaseModel], table: Any) -> tuple[str, ...]:
    """The record's fields that the row's class also has (worked out once a pair)."""
    return tuple(name for name in model.model_fields if hasattr(table, name))


class Principal(_Record):
    """Who is acting. Owners are principals; admins see every owner's artifacts."""

    name: str
    role: Role = "agent"

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


class ArtifactInfo(_Record):
    id: str
    owner: str
    session_id: str | None
    kind: str
    name: str | None
    media_type: str
    source: dict[str, Any]
    state: str
    size_bytes: int
    total_bytes: int
    max_bytes: int
    line_count: int
    sha256: str | None
    error: str | None
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    expires_at: datetime | None
    retention_source: str | None
    retention_clamped: bool
    pinned: bool
    pinned_at: datetime | None
    pinned_by: str | None
    pin_reason: str | None
    deleted_at: datetime | None
    delete_reason: str | None
    # What the artifact takes in the store: size_bytes while stored as written,
    # its compressed frames once compacted (frames it shares with another output
    # of the same owner count there). Quotas and usage count this.
    stored_bytes: int | None = None
    compressed: bool = False
    # The bytes of this output a model was shown inline when it was made (None:
    # not an output a model was shown a view of); see artifacts/ledger/ledger.py.
    shown_bytes: int | None = None

    @property
    def complete(self) -> bool:
        """True once no more bytes will ever be added."""
        return self.state != "writing"


class ArtifactPage(_Record):
    items: list[ArtifactInfo]
    next_cursor: str | None
    total_bytes: int | None = None  # of everything the filter matches (with_total)
    total_count: int | None = None


class Window(_Record):
    """Where the artifact stood when a window was read, so an answer can say
    whether the reader has now seen the end of the *output*, not only of what is
    stored: ``capped`` and ``failed`` artifacts hold less than was produced."""

    state: str = "writing"
    size_bytes: int = 0  # bytes stored when the window was read
    total_bytes: int = 0  # bytes the producer offered (> stored when capped/failed)
    error: str | None = None  # why storing stopped, when it did


class TextWindow(Window):
    artifact_id: str
    offset: int
    next_offset: int
    text: str
    size_bytes: int
    eof: bool
    complete: bool
    first_line: int = 1  # the line that holds byte ``offset``
    last_line: int = 0  # the line that holds the window's last byte (< first_line if empty)
    split_start: int = 0  # leading bytes of a character begun before ``offset`` (shown as U+FFFD)


class Line(_Record):
    number: int
    offset: int  # where the line starts
    text: str
    truncated: bool = False  # the text is part of the line
    window_offset: int | None = None  # where the text starts, when not at ``offset``
    # Where the line's bytes end: its newline, or the end of what is stored. With
    # ``offset`` it names the line's exact bytes (a CR, invalid UTF-8, the part
    # a truncated text leaves out), for a caller that must print them as stored.
    end: int | None = None


class LineWindow(Window):
    artifact_id: str
    start: int
    lines: list[Line]
    next_line: int
    next_offset: int
    eof: bool
    complete: bool
    line_count: int


class TailWindow(Window):
    artifact_id: str
    offset: int
    text: str
    first_line: int | None  # set when the window starts at a line start
    size_bytes: int
    complete: bool
    truncated: bool  # fewer lines or bytes than asked fitted in the bound
    line: int = 1  # the line that holds byte ``offset`` (mid-line when first_line is None)
    last_line: int = 0  # the line that holds the window's last byte


class GrepMatch(_Record):
    line: Line
    before: list[Line]
    after: list[Line]
    spans: list[tuple[int, int]]


class SearchGroup(_Record):
    """One artifact's matching lines in a search, with what identifies the output."""

    artifact_id: str
    created_at: datetime
    command: str | None
    name: str | None
    tool: str | None
    matches: list[GrepMatch]  # (no context lines: a search says where, a grep shows)
    # Resumes the search at any line of this group: ``resume_cursor(group, offset)``.
    cursor_page: str | None = None


class SearchResult(_Record):
    pattern: str
    groups: list[SearchGroup]
    matches: int
    artifacts_searched: int
    bytes_searched: int
    # Where the next call resumes (which artifact, which offset, inside the
    # cursor), or None when every output that matches the filters was searched.
    next_cursor: str | None
    resume_artifact: str | None = None
    resume_offset: int | None = None
    stopped: str | None = None  # "max_matches" or "max_scan_bytes" when cut short


class GrepResult(Window):
    artifact_id: str
    pattern: str
    matches: list[GrepMatch]
    scanned_from: int
    next_offset: int
    eof: bool
    complete: bool
    truncated: bool
    # Why the page ended before the content: "max_matches", "answer_full" (the
    # byte bound), "scan_limit" (bytes scanned per call) or "time_budget".
    stopped: str | None = None
