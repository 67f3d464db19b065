"""``/v1/artifacts/{id}/...`` reads: raw bytes (Range, ETag, follow), a download
link, and the bounded JSON windows (text, lines, tail, grep).

Every route goes through the store with the caller's principal, so another
owner's artifact is a 404 exactly like a missing one. The expensive ones (a
grep, a large range or download) count against the caller's bound on
concurrent expensive reads (429 past it), so one caller cannot take every
worker thread.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from starlette.background import BackgroundTask

from overspill.artifacts.errors import OverspillError, TooManyRequests
from overspill.artifacts.queries import GrepLinesQuery, GrepQuery, LineQuery, TailQuery, TextQuery
from overspill.artifacts.reading.follow import Backoff
from overspill.artifacts.records import (
    GrepResult,
    LineWindow,
    Principal,
    TailWindow,
    TextWindow,
)

from ..deps import (
    PrincipalDep,
    ReaderDep,
    StoreDep,
    bearer_secret,
    content_scope,
)
from ..errors import GONE, RESPONSES, ErrorBody, error_response
from ..limits import LARGE_READ_BYTES
from ..ranges import RangeNotSatisfiable, parse_range
from .artifacts import ARTIFACT_ID

router = APIRouter(prefix="/v1/artifacts", tags=["reads"], responses=RESPONSES)

# A read's query string, as its query model (``artifacts.queries``) validates it.
TextParams = Annotated[TextQuery, Query()]
LineParams = Annotated[LineQuery, Query()]
TailParams = Annotated[TailQuery, Query()]
GrepParams = Annotated[GrepQuery, Query()]
GrepLinesParams = Annotated[GrepLinesQuery, Query()]

_LIMITED: dict[int | str, dict[str, Any]] = {
    429: {"model": ErrorBody, "description": "Too many expensive reads at once"}
}


async def _expensive_slot(request: Request, who: PrincipalDep) -> AsyncIterator[Any]:
    """The caller's slot among its concurrent expensive reads, taken on the event
    loop before the read is handed to a worker thread: past the bound the 429
    costs no thread at all. It is answered after a pause (on the loop, parking
    nothing): a client that retries at once, whatever Retry-After says, would
    otherwise keep the loop busy refusing it, and everyone else would wait."""
    try:
        release = _expensive(request, who)
    except TooManyRequests:
        await anyio.sleep(REFUSAL_PAUSE_S)
        raise
    try:
        yield who
    finally:
        release()


ExpensiveDep = Annotated[Principal, Depends(_expensive_slot)]
REFUSAL_PAUSE_S = 0.5


def _expensive(request: Request, who: Any) -> Callable[[], None]:
    """A slot among the principal's concurrent expensive reads (429 past the bound)."""
    release: Callable[[], None] = request.app.state.expensive.acquire(who.name)
    return release


def _content_type(media_type: str) -> str:
    # Served as inert data: text stays plain text, everything else is a download.
    return (
        "text/plain; charset=utf-8"
        if media_type.startswith("text/")
        else "application/octet-stream"
    )


_INERT = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cache-Control": "private, no-cache",
}


@router.head("/{artifact_id}/content", include_in_schema=False)  # as GET, without the body
@router.get(
    "/{artifact_id}/content",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"application/octet-stream": {}}, "description": "The bytes"},
        206: {"content": {"application/octet-stream": {}}, "description": "A byte range"},
        304: {"description": "ETag matched"},
        **GONE,
        416: {"model": ErrorBody, "description": "Range not satisfiable"},
        **_LIMITED,
    },
)
def download_content(
    artifact_id: ARTIFACT_ID,
    request: Request,
    store: StoreDep,
    who: ReaderDep,
    range_header: str | None = Header(None, alias="range"),
    if_none_match: str | None = Header(None),
    follow: bool = Query(False, description="Keep streaming until a writing artifact ends"),
) -> Response:
    """Raw bytes. Honours single and suffix `Range`s; ETag is the sha256 once complete."""
    info, content = store.open_content(who, artifact_id)
    headers = dict(_INERT)
    headers["Accept-Ranges"] = "bytes"
    headers["Content-Disposition"] = f'attachment; filename="{info.id}.{_ext(info.media_type)}"'
    etag = f'"{info.sha256}"' if info.sha256 and info.complete else None
    if etag:
        headers["ETag"] = etag
        if if_none_match and etag in [t.strip() for t in if_none_match.split(",")]:
            return Response(status_code=304, headers=headers)
    metrics = request.app.state.metrics
    if follow and not info.complete:
        # From where the range starts (a tail, a range), on as the output grows.
        start, stop = _follow_range(range_header)
        release = request.app.state.followers.acquire(who.name)
        return StreamingResponse(
            _follow(store, who, artifact_id, metrics, release, start, stop),
            media_type=_content_type(info.media_type),
            headers=headers,
            # Also after the response, for a client gone before the body started
            # (a generator never started never runs its finally).
            background=BackgroundTask(release),
        )
    try:
        rng = parse_range(range_header, content.size)
    except RangeNotSatisfiable:
        return error_response(
            416,
            "range_not_satisfiable",
            f"range {range_header!r} is outside the {content.size} stored bytes",
            headers={"Content-Range": f"bytes */{content.size}"},
        )
    status = 200
    start, end = 0, content.size
    if rng is not None:
        start, end = rng
        status = 206
        # While it is written, the complete length is not known yet: "*".
        length = content.size if info.complete else "*"
        headers["Content-Range"] = f"bytes {start}-{end - 1}/{length}"
    headers["Content-Length"] = str(end - start)
    if request.method == "GET":  # (the context ledger: a download is a read-back)
        store.reader.note_download(who, info, start, end)
    # A large range or a whole download holds a worker thread per chunk for as
    # long as it streams: counted against the principal's expensive reads.
    release = _expensive(request, who) if end - start > LARGE_READ_BYTES else None
    # The segments are looked up now: a database that is down answers 503 before a
    # byte is sent, and one restarted mid-download no longer cuts the body short.
    planned = content.plan(start, end)
    return StreamingResponse(
        _counted(_coalesced(content.iter_range(start, end, planned)), metrics, release),
        status_code=status,
        media_type=_content_type(info.media_type),
        headers=headers,
        background=BackgroundTask(release) if release is not None else None,
    )


class DownloadLink(BaseModel):
    url: str = Field(..., description="Relative URL of the content, valid without a header")
    expires_at: datetime


_LINK_TTL_S = 120


@router.post("/{artifact_id}/download-link", response_model=DownloadLink)
def download_link(
    artifact_id: ARTIFACT_ID, request: Request, store: StoreDep, who: PrincipalDep
) -> DownloadLink:
    """A short-lived URL for this artifact's content that needs no Authorization
    header (for a browser download). It stops working when the token is revoked."""
    store.get(who, artifact_id)  # 404 for another owner's, exactly as for a missing id
    ticket, expires = store.tokens.ticket(
        bearer_secret(request), content_scope(artifact_id), _LINK_TTL_S
    )
    return DownloadLink(
        url=f"/v1/artifacts/{artifact_id}/content?ticket={ticket}", expires_at=expires
    )


def _ext(media_type: str) -> str:
    return "txt" if media_type.startswith("text/") else "bin"


_PIECE = 1024 * 1024
_PIECE_S = 0.05


def _coalesced(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Pieces joined up to ~1 MiB, or what 50 ms gathered (a slow grep still
    shows its rows as it finds them): the server sends each piece from its event
    loop, a hop from the thread that produces it, and stored outputs come a
    256 KiB frame at a time. Measured on 128 MiB stored compressed, a piece per
    frame against joined: ``overspill cat`` 0.43 -> 0.32 s, ``overspill grep ID
    ERROR`` (1% of lines) 0.49 -> 0.16-0.27 s."""
    held: list[bytes] = []
    size = 0
    sent = time.monotonic()
    for chunk in chunks:
        held.append(chunk)
        size += len(chunk)
        if size >= _PIECE or time.monotonic() - sent >= _PIECE_S:
            yield held[0] if len(held) == 1 else b"".join(held)
            held, size, sent = [], 0, time.monotonic()
    if held:
        yield b"".join(held)


def _counted(
    chunks: Iterator[bytes], metrics: Any, release: Callable[[], None] | None = None
) -> Iterator[bytes]:
    try:
        for chunk in chunks:
            metrics.bytes_out.inc(len(chunk))
            yield chunk
    finally:
        if release is not None:
            release()


def _follow_range(header: str | None) -> tuple[int, int | None]:
    """Where a follow starts and stops: a ``bytes=A-`` or ``bytes=A-B`` range of
    a growing output may start at or past what is stored now (it waits for it)."""
    if header and header.startswith("bytes="):
        first, _, last = header[len("bytes=") :].partition("-")
        if first.isdigit() and (not last or last.isdigit()) and "," not in header:
            return int(first), (int(last) + 1 if last else None)
    return 0, None


async def _follow(
    store: Any,
    who: Any,
    artifact_id: str,
    metrics: Any,
    release: Any,
    start: int = 0,
    stop: int | None = None,
) -> AsyncIterator[bytes]:
    """Stream a writing artifact as it grows, from ``start`` (to ``stop``). Waits
    on the event loop (a worker thread is borrowed only for each bounded read),
    so followers never park threads; ``release`` frees the follower's slot
    however the stream ends."""
    pos = start
    backoff = Backoff()
    try:
        while stop is None or pos < stop:
            try:
                info, content = await run_in_threadpool(store.open_content, who, artifact_id)
            except OverspillError:
                return
            end = content.size if stop is None else min(stop, content.size)
            if end > pos:
                chunks = content.iter_range(pos, end)
                while (chunk := await run_in_threadpool(next, chunks, None)) is not None:
                    pos += len(chunk)
                    metrics.bytes_out.inc(len(chunk))
                    yield chunk
                backoff.reset()
            elif info.complete:
                return
            else:
                await anyio.sleep(backoff.next_wait())
    finally:
        release()


@router.get("/{artifact_id}/text", response_model=TextWindow, responses={**GONE, **_LIMITED})
def read_text(
    artifact_id: ARTIFACT_ID,
    request: Request,
    store: StoreDep,
    who: PrincipalDep,
    query: TextParams,
) -> TextWindow:
    """A UTF-8-safe window: never splits a character; `next_offset` continues it."""
    if query.limit <= LARGE_READ_BYTES:
        return store.text(who, artifact_id, query)
    release = _expensive(request, who)
    try:
        return store.text(who, artifact_id, query)
    finally:
        release()


@router.get("/{artifact_id}/lines", response_model=LineWindow, responses=GONE)
def read_lines(
    artifact_id: ARTIFACT_ID, store: StoreDep, who: PrincipalDep, query: LineParams
) -> LineWindow:
    """A page of lines; `next_line` continues it."""
    return store.lines(who, artifact_id, query)


@router.get("/{artifact_id}/tail", response_model=TailWindow, responses=GONE)
def read_tail(
    artifact_id: ARTIFACT_ID, store: StoreDep, who: PrincipalDep, query: TailParams
) -> TailWindow:
    """The last lines (default 100) or bytes, bounded."""
    return store.tail(who, artifact_id, query)


@router.get("/{artifact_id}/grep", response_model=GrepResult, responses={**GONE, **_LIMITED})
def grep_artifact(
    artifact_id: ARTIFACT_ID, store: StoreDep, who: ExpensiveDep, query: GrepParams
) -> Response:
    """Search with RE2 (linear time). `next_offset` resumes a truncated scan."""
    found = store.grep(who, artifact_id, query)
    # The store built and checked the record; serialising it once (rather than
    # FastAPI validating it again against the response model) halves the cost
    # of a page with thousands of matches.
    return Response(found.model_dump_json(), media_type="application/json")


@router.get(
    "/{artifact_id}/grep/lines",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/plain": {}}, "description": "grep -n rows, then a status line"},
        **GONE,
        **_LIMITED,
    },
)
def grep_lines(
    artifact_id: ARTIFACT_ID,
    request: Request,
    store: StoreDep,
    who: PrincipalDep,
    query: GrepLinesParams,
) -> Response:
    """Every match as ``grep -n`` prints it (``N:line``, ``N-line`` for context,
    ``--`` between groups), streamed, the lines as stored; the last line is a NUL
    and a JSON status (next_offset, eof, matches, stopped). Bounded in time per
    request: past the budget the status gives the offset to resume at."""
    release = _expensive(request, who)
    try:
        _, rows = store.grep_lines(who, artifact_id, query)
        first = next(rows)  # a storage failure is a 503 before the body starts
    except BaseException:
        release()
        raise
    headers = dict(_INERT)
    return StreamingResponse(
        _counted(_coalesced(_prepend(first, rows)), request.app.state.metrics, release),
        media_type="text/plain; charset=utf-8",
        headers=headers,
        background=BackgroundTask(release),
    )


def _prepend(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest
