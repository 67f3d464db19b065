"""Saving any tool's oversized result as an artifact, and the preview a model sees.

The system overspill replaces spills a tool's too-large result (a web fetch, a
file read, another MCP tool's answer) to a file and shows the model a head/tail
preview with a notice naming the file. Here the content streams into an artifact
instead (never held whole: the preview keeps only a bounded head and tail), and
the notice names the artifact, its expiry and the exact calls that read or
search it. Over HTTP the same function runs in the server; the legacy file, when
the compatibility layer wants one, is written by the caller (``ResultSaver``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from overspill.artifacts.errors import InvalidArgument, OverspillError
from overspill.artifacts.records import ArtifactInfo
from overspill.artifacts.utf8 import utf8_safe_end, utf8_skip_partial
from overspill.shell.failures import FailureScan, default_matcher, quote_omitted
from overspill.shell.redact.policy import Redaction
from overspill.shell.wording import retrieval_hint, saved_notice

DEFAULT_BUDGET = 50_000
MIN_BUDGET = 2_000
MAX_BUDGET = 1_000_000
_NOTICE_ROOM = 1_200  # bytes kept free for the notice line and its newlines
_NEAR_LINE = 4  # cut at a newline found within the last (first) quarter of a half


class SaveRequest(BaseModel):
    """What is known of a result before its bytes: one model for the Python API,
    the HTTP route and the client, so the fields are written once."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str = Field("result", min_length=1, max_length=100)
    name: str | None = Field(None, max_length=500)
    session_id: str | None = Field(None, max_length=200)
    media_type: str = Field("text/plain; charset=utf-8", min_length=1, max_length=200)
    source: dict[str, Any] = Field(default_factory=dict)
    budget: int = Field(DEFAULT_BUDGET, ge=MIN_BUDGET, le=MAX_BUDGET)

    @field_validator("tool", "name", "session_id", "media_type")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        # PostgreSQL refuses NUL in text; refused here so it is a 400, not a failed save.
        if value is not None and "\x00" in value:
            raise ValueError("must not contain a NUL character")
        return value

    @classmethod
    def checked(cls, **fields: Any) -> SaveRequest:
        """The request, or ``InvalidArgument`` in one sentence naming the field."""
        try:
            return cls(**fields)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "request"
            raise InvalidArgument(f"{where}: {first['msg']}") from None

    def full_source(self) -> dict[str, Any]:
        return {**self.source, "tool": self.tool}

    def open_writer(self, store: Any, principal: Any) -> Any:
        return store.open_writer(
            principal,
            kind="result",
            name=self.name,
            media_type=self.media_type,
            session_id=self.session_id,
            source=self.full_source(),
        )


class SavedResult(BaseModel):
    """What a save returns: the id and the text to put in the model's context."""

    model_config = ConfigDict(frozen=True)

    id: str | None
    bytes: int
    lines: int
    state: str | None
    expires_at: datetime | None
    retrieval_hint: str
    preview: str
    omitted_bytes: int
    legacy_path: str | None = None
    error: str | None = None


class PreviewBuffer:
    """The first and last ``budget/2`` bytes of a stream, bounded whatever its size,
    and (``quote_failures``) its failure-like lines, for the preview to quote those
    of the omitted middle."""

    def __init__(self, budget: int, *, quote_failures: bool = True) -> None:
        half = max(1, (budget - _NOTICE_ROOM) // 2)
        self._head_cap = half
        self._tail_cap = half
        self.head = bytearray()
        self._tail = bytearray()
        self.total = 0
        matcher = default_matcher() if quote_failures else None
        # Hits in the shown head need no quote: only those past where it may be cut.
        keep_from = half - half // _NEAR_LINE - 1
        self._scan = FailureScan(matcher, keep_from=keep_from) if matcher is not None else None

    def feed(self, chunk: bytes | bytearray | memoryview) -> None:
        view = memoryview(chunk)
        self.total += len(view)
        if self._scan is not None:
            self._scan.feed(view)
        room = self._head_cap - len(self.head)
        if room > 0:
            self.head += view[:room]
            view = view[room:]
        if view:
            self._tail += view[-self._tail_cap :]
            if len(self._tail) > 2 * self._tail_cap:
                del self._tail[: len(self._tail) - self._tail_cap]

    @property
    def tail(self) -> bytes:
        return bytes(self._tail[-self._tail_cap :])

    def preview(
        self, notice: Callable[[int, int], str], budget: int, artifact_id: str | None = None
    ) -> tuple[str, int]:
        """The head, the notice (given the omitted byte count), the failure-like
        lines of the omitted part quoted (given the artifact that holds them all)
        and the tail, within ``budget`` bytes; the whole content when it fits.
        Returns (text, omitted)."""
        if self.total <= budget and self.total == len(self.head) + len(self._tail):
            whole = bytes(self.head) + bytes(self._tail)
            return whole.decode("utf-8", errors="replace"), 0
        if self._scan is not None:
            self._scan.finish()
        head = _cut_head(bytes(self.head))
        tail, tail_at_line = _cut_tail(self.tail)
        for _ in range(4):
            omitted = self.total - len(head) - len(tail)
            quotes = ""
            if self._scan is not None and artifact_id is not None:
                quotes = quote_omitted(
                    self._scan, head, tail, tail_at_line, self.total, artifact_id, budget
                )
            text = (
                head.decode("utf-8", errors="replace")
                + ("" if not head or head.endswith(b"\n") else "\n")
                + notice(omitted, len(head))
                + "\n"
                + quotes
                + tail.decode("utf-8", errors="replace")
            )
            excess = len(text.encode()) - budget
            if excess <= 0:
                return text, omitted
            # Replacement characters for invalid bytes, or a long notice: shrink both.
            cut = excess // 2 + 4
            head = head[: utf8_safe_end(head[: max(0, len(head) - cut)])]
            tail = tail[min(len(tail), cut) :]
            tail, tail_at_line = tail[utf8_skip_partial(tail) :], False
        return notice(self.total, 0), self.total


def _cut_head(data: bytes) -> bytes:
    nl = data.rfind(b"\n", len(data) - len(data) // _NEAR_LINE)
    if nl >= 0:
        return data[: nl + 1]
    return data[: utf8_safe_end(data)]


def _cut_tail(data: bytes) -> tuple[bytes, bool]:
    """The tail from a line start near its beginning (True), else from a character."""
    nl = data.find(b"\n", 0, len(data) // _NEAR_LINE)
    if 0 <= nl < len(data) - 1:
        return data[nl + 1 :], True
    return data[utf8_skip_partial(data) :], False


def _expiry(info: ArtifactInfo) -> str:
    if info.pinned or info.expires_at is None:
        return "kept until deleted"
    return f"kept until {info.expires_at:%Y-%m-%d %H:%M} UTC"


def notice_for(
    info: ArtifactInfo, legacy_path: str | None = None, legacy_hint: str | None = None
) -> Callable[[int, int], str]:
    """The line that replaces what the preview leaves out (the replaced system's
    wording, with the artifact added; the legacy path stays right after "at: ")."""
    where = f"{info.size_bytes} bytes, {info.line_count} lines, {_expiry(info)}" + (
        "" if info.state == "complete" else f", {info.state}"
    )

    def notice(omitted: int, gap_start: int) -> str:
        return saved_notice(info.id, omitted, gap_start, where, legacy_path, legacy_hint)

    return notice


Opener = Callable[[], Any]
"""Returns a started writer (``write(bytes)``, ``close() -> WriteResult``)."""


class ResultSave:
    """One save in progress: ``feed`` chunks, then ``finish``. The sync driver
    (``save_stream``) and the HTTP route (async body) share it.

    Storage trouble never raises out of ``finish``: the result has ``error`` set
    and no id, and the caller keeps its original result, as the replaced system
    does.
    """

    def __init__(
        self,
        open_writer: Opener,
        get: Callable[[str], ArtifactInfo],
        *,
        budget: int = DEFAULT_BUDGET,
        redaction: Redaction,
    ) -> None:
        check_budget(budget)
        # Secrets are masked (same length) before the preview or the store sees a byte,
        # with the admin's rules (the writer's ``Redaction``).
        self._redactor = redaction.redactor()
        self._get = get
        self._budget = budget
        self._buf = PreviewBuffer(budget)
        self._error: str | None = None
        self._writer: Any = None
        # Opened with the first byte: an empty result makes no artifact at all.
        self._open: Opener | None = open_writer

    def _start(self) -> None:
        opener, self._open = self._open, None
        if opener is None:
            return
        try:
            self._writer = opener()
        except InvalidArgument:
            raise  # bad input is the caller's to fix (a 4xx), not a storage failure
        except OverspillError as exc:
            self._error = exc.message

    def feed(self, chunk: bytes) -> None:
        if self._redactor is None:
            self._take(chunk)
            return
        for piece in self._redactor.feed(chunk):
            self._take(piece)

    def _take(self, chunk: bytes | memoryview) -> None:
        if not chunk:
            return
        self._start()
        self._buf.feed(chunk)
        if self._error is None:
            try:
                self._writer.write(chunk)
            except OverspillError as exc:
                self._error = exc.message

    def finish(self) -> SavedResult:
        info: ArtifactInfo | None = None
        update = None
        if self._redactor is not None:
            self._take(self._redactor.finish())
            manifest = self._redactor.manifest
            update = {"redactions": manifest.as_json()} if manifest.total else None
        if self._buf.total == 0:
            raise InvalidArgument("the result is empty: there is nothing to store")
        if self._writer is not None:
            result = self._writer.close(error=self._error, source_update=update)
            if result.state == "failed":
                self._error = self._error or result.error or "storage failed"
            else:
                try:
                    info = self._get(result.id)
                except OverspillError as exc:
                    self._error = exc.message
        if info is None or self._error is not None:
            return not_stored(self._buf.total, self._error or "storage failed")
        text, omitted = self._buf.preview(notice_for(info), self._budget, info.id)
        return SavedResult(
            id=info.id,
            bytes=info.size_bytes,
            lines=info.line_count,
            state=info.state,
            expires_at=info.expires_at,
            retrieval_hint=retrieval_hint(info.id),
            preview=text,
            omitted_bytes=omitted,
            error=info.error if info.state != "complete" else None,
        )


def not_stored(total: int, why: str) -> SavedResult:
    """The answer when nothing was stored: no id, no preview (the caller keeps its
    original result), and why."""
    return SavedResult(
        id=None,
        bytes=total,
        lines=0,
        state=None,
        expires_at=None,
        retrieval_hint="",
        preview="",
        omitted_bytes=0,
        error=f"the result could not be stored: {why}",
    )


def suggested_name(name: str | None) -> str | None:
    """A tool's suggested name as a name the store takes: control characters
    dropped and at most 500 characters (a long URL still saves)."""
    if name is None:
        return None
    clean = "".join(ch for ch in name if ch.isprintable() or ch == " ")
    return clean if len(clean) <= 500 else clean[:499] + "…"


def save_stream(
    open_writer: Opener,
    get: Callable[[str], ArtifactInfo],
    chunks: Iterable[bytes],
    **options: Any,
) -> SavedResult:
    """Stream ``chunks`` into a new artifact and build the preview on the way."""
    save = ResultSave(open_writer, get, **options)
    for chunk in chunks:
        save.feed(chunk)
    return save.finish()


def check_budget(budget: int) -> None:
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise InvalidArgument(
            f"budget must be between {MIN_BUDGET} and {MAX_BUDGET} bytes, got {budget}"
        )


def as_chunks(content: bytes | str | Iterable[bytes], size: int = 1024 * 1024) -> Iterator[bytes]:
    """Any accepted content form as byte chunks (a str is UTF-8 encoded)."""
    if isinstance(content, str):
        content = content.encode()
    if isinstance(content, bytes | bytearray | memoryview):
        view = memoryview(content)
        for i in range(0, len(view), size):
            yield bytes(view[i : i + size])
        return
    for chunk in content:
        yield chunk.encode() if isinstance(chunk, str) else bytes(chunk)
