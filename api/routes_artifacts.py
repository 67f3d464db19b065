"""``/v1/artifacts``: create, upload, append, complete, list, read, pin, retain, delete.

Every route goes through the store with the caller's principal, so another
owner's artifact is a 404 exactly like a missing one, on every route.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from overspill.api.deps import PrincipalDep, ReaderDep, StoreDep, bearer_secret, content_scope
from overspill.api.errors import RESPONSES, ErrorBody, error_response
from overspill.api.ranges import RangeNotSatisfiable, parse_range
from overspill.artifacts.errors import InvalidArgument, OverspillError, StorageUnavailable
from overspill.artifacts.follow import Backoff
from overspill.artifacts.queries import GrepQuery, LineQuery, ListQuery
from overspill.artifacts.records import (
    ArtifactInfo,
    ArtifactPage,
    GrepResult,
    LineWindow,
    TailWindow,
    TextWindow,
)
from overspill.artifacts.retention import MAX_RETENTION_S

router = APIRouter(prefix="/v1/artifacts", tags=["artifacts"], responses=RESPONSES)

_ARTIFACT_ID = Annotated[str, Field(description="Artifact id (art_ + 26 base32 characters)")]


class CreateArtifact(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = Field("output", min_length=1, max_length=50)
    name: str | None = Field(None, max_length=500)
    media_type: str = Field("text/plain; charset=utf-8", min_length=1, max_length=200)
    session_id: str | None = Field(None, max_length=200)
    source: dict[str, Any] = Field(default_factory=dict)
    max_bytes: int | None = Field(None, gt=0, le=2**62)
    retention: int | Literal["forever"] | None = Field(
        None, description="Seconds from creation, or 'forever' where an admin allows it"
    )
    owner: str | None = Field(None, max_length=200, description="Admins only")


class Complete(BaseModel):
    model_config = ConfigDict(extra="forbid")

    total_bytes: int | None = Field(None, ge=0, le=2**62)
    source: dict[str, Any] = Field(default_factory=dict, description="Merged into source")
    error: str | None = Field(None, max_length=2000, description="Mark the upload failed")


class PinRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(None, max_length=2000)


class RetentionChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    retention: int | Literal["forever"] | None = Field(
        ..., description="Seconds from creation, 'forever', or null for the policy default"
    )


@router.post(
    "",
    status_code=201,
    response_model=ArtifactInfo,
    responses={403: {"model": ErrorBody, "description": "Owner over quota (quota_exceeded)"}},
)
def create_artifact(body: CreateArtifact, store: StoreDep, who: PrincipalDep) -> ArtifactInfo:
    """Create an empty artifact in state `writing`; upload with PUT or PATCH content."""
    if isinstance(body.retention, int) and (
        body.retention <= 0 or body.retention > MAX_RETENTION_S
    ):
        raise InvalidArgument(
            f"retention must be between 1 and {MAX_RETENTION_S} seconds, or 'forever'"
        )
    return store.create(
        who,
        kind=body.kind,
        name=body.name,
        media_type=body.media_type,
        session_id=body.session_id,
        source=body.source,
        max_bytes=body.max_bytes,
        owner=body.owner,
        retention=body.retention,
    )


async def _stream_into(
    request: Request, store: Any, who: Any, artifact_id: str, offset: int
) -> Any:
    writer = await run_in_threadpool(store.attach_writer, who, artifact_id, offset)
    try:
        async for chunk in request.stream():
            if chunk:
                await run_in_threadpool(writer.write, chunk)
                request.app.state.metrics.bytes_in.inc(len(chunk))
    except BaseException:
        await run_in_threadpool(store.end_append, writer, offset)
        raise
    return writer


@router.put(
    "/{artifact_id}/content",
    response_model=ArtifactInfo,
    responses={409: {"model": ErrorBody, "description": "Not empty or not writing"}},
)
async def upload_content(
    artifact_id: _ARTIFACT_ID,
    request: Request,
    store: StoreDep,
    who: PrincipalDep,
    complete: bool = Query(True, description="Finish after the upload"),
) -> ArtifactInfo:
    """Stream the whole content of an empty `writing` artifact (any size, bounded memory)."""
    writer = await _stream_into(request, store, who, artifact_id, 0)
    if complete:
        result = await run_in_threadpool(writer.close)
        if result.error and result.state == "failed":
            raise StorageUnavailable(result.error)
        request.app.state.metrics.artifacts_written.inc()
    else:
        await run_in_threadpool(store.end_append, writer, 0)
    return await run_in_threadpool(store.get, who, artifact_id)


@router.patch(
    "/{artifact_id}/content",
    response_model=ArtifactInfo,
    responses={
        409: {"model": ErrorBody, "description": "Offset is not the current size (body has it)"}
    },
)
async def append_content(
    artifact_id: _ARTIFACT_ID,
    request: Request,
    store: StoreDep,
    who: PrincipalDep,
    offset: int = Query(..., ge=0, le=2**62, description="Must equal the current size"),
) -> ArtifactInfo:
    """Append the body at `offset`. An empty body only renews the upload's lease."""
    writer = await _stream_into(request, store, who, artifact_id, offset)
    await run_in_threadpool(store.end_append, writer, offset)
    return await run_in_threadpool(store.get, who, artifact_id)


@router.post(
    "/{artifact_id}/complete",
    response_model=ArtifactInfo,
    responses={409: {"model": ErrorBody, "description": "Already finished"}},
)
def complete_artifact(
    artifact_id: _ARTIFACT_ID, body: Complete, request: Request, store: StoreDep, who: PrincipalDep
) -> ArtifactInfo:
    """Finish an upload: sha256 computed server-side; `total_bytes` > stored -> capped."""
    info = store.complete(
        who,
        artifact_id,
        total_bytes=body.total_bytes,
        source_update=body.source or None,
        error=body.error,
    )
    request.app.state.metrics.artifacts_written.inc()
    return info


@router.get("", response_model=ArtifactPage)
def list_artifacts(
    store: StoreDep, who: PrincipalDep, query: Annotated[ListQuery, Query()]
) -> ArtifactPage:
    """List artifacts, newest or largest first, with cursor pagination."""
    return store.list(who, query, with_total=True)


@router.get("/{artifact_id}", response_model=ArtifactInfo)
def get_artifact(artifact_id: _ARTIFACT_ID, store: StoreDep, who: PrincipalDep) -> ArtifactInfo:
    """Metadata, including expiry, pin and how retention was decided."""
    return store.get(who, artifact_id)


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
        410: {"model": ErrorBody, "description": "Expired or deleted"},
        416: {"model": ErrorBody, "description": "Range not satisfiable"},
    },
)
def download_content(
    artifact_id: _ARTIFACT_ID,
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
        release = request.app.state.followers.acquire(who.name)
        return StreamingResponse(
            _follow(store, who, artifact_id, metrics, release),
            media_type=_content_type(info.media_type),
            headers=headers,
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
    return StreamingResponse(
        _counted(content.iter_range(start, end), metrics),
        status_code=status,
        media_type=_content_type(info.media_type),
        headers=headers,
    )


class DownloadLink(BaseModel):
    url: str = Field(..., description="Relative URL of the content, valid without a header")
    expires_at: datetime


_LINK_TTL_S = 120


@router.post("/{artifact_id}/download-link", response_model=DownloadLink)
def download_link(
    artifact_id: _ARTIFACT_ID, request: Request, store: StoreDep, who: PrincipalDep
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


def _counted(chunks: Iterator[bytes], metrics: Any) -> Iterator[bytes]:
    for chunk in chunks:
        metrics.bytes_out.inc(len(chunk))
        yield chunk


async def _follow(
    store: Any, who: Any, artifact_id: str, metrics: Any, release: Any
) -> AsyncIterator[bytes]:
    """Stream a writing artifact as it grows. Waits on the event loop (a worker
    thread is borrowed only for each bounded read), so followers never park
    threads; ``release`` frees the follower's slot however the stream ends."""
    pos = 0
    backoff = Backoff()
    try:
        while True:
            try:
                info, content = await run_in_threadpool(store.open_content, who, artifact_id)
            except OverspillError:
                return
            if content.size > pos:
                chunks = content.iter_range(pos, content.size)
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


@router.get(
    "/{artifact_id}/text",
    response_model=TextWindow,
    responses={410: {"model": ErrorBody, "description": "Expired or deleted"}},
)
def read_text(
    artifact_id: _ARTIFACT_ID,
    store: StoreDep,
    who: PrincipalDep,
    offset: int = Query(0, ge=0, le=2**62),
    limit: int = Query(65536, ge=1, le=16 * 1024 * 1024),
) -> TextWindow:
    """A UTF-8-safe window: never splits a character; `next_offset` continues it."""
    return store.text(who, artifact_id, offset=offset, limit=limit)


@router.get(
    "/{artifact_id}/lines",
    response_model=LineWindow,
    responses={410: {"model": ErrorBody, "description": "Expired or deleted"}},
)
def read_lines(
    artifact_id: _ARTIFACT_ID,
    store: StoreDep,
    who: PrincipalDep,
    query: Annotated[LineQuery, Query()],
) -> LineWindow:
    """A page of lines; `next_line` continues it."""
    return store.lines(who, artifact_id, query)


@router.get(
    "/{artifact_id}/tail",
    response_model=TailWindow,
    responses={410: {"model": ErrorBody, "description": "Expired or deleted"}},
)
def read_tail(
    artifact_id: _ARTIFACT_ID,
    store: StoreDep,
    who: PrincipalDep,
    lines: int | None = Query(None, ge=1, le=100000),
    bytes_: int | None = Query(None, ge=1, le=2**62, alias="bytes"),
    max_bytes: int | None = Query(None, ge=1, le=16 * 1024 * 1024),
) -> TailWindow:
    """The last lines (default 100) or bytes, bounded."""
    if lines is None and bytes_ is None:
        lines = 100
    if lines is not None and bytes_ is not None:
        raise InvalidArgument("give lines or bytes for a tail, not both")
    return store.tail(who, artifact_id, lines=lines, nbytes=bytes_, max_bytes=max_bytes)


@router.get(
    "/{artifact_id}/grep",
    response_model=GrepResult,
    responses={410: {"model": ErrorBody, "description": "Expired or deleted"}},
)
def grep_artifact(
    artifact_id: _ARTIFACT_ID,
    store: StoreDep,
    who: PrincipalDep,
    query: Annotated[GrepQuery, Query()],
) -> Response:
    """Search with RE2 (linear time). `next_offset` resumes a truncated scan."""
    found = store.grep(who, artifact_id, query)
    # The store built and checked the record; serialising it once (rather than
    # FastAPI validating it again against the response model) halves the cost
    # of a page with thousands of matches.
    return Response(found.model_dump_json(), media_type="application/json")


@router.delete("/{artifact_id}", response_model=ArtifactInfo)
def delete_artifact(artifact_id: _ARTIFACT_ID, store: StoreDep, who: PrincipalDep) -> ArtifactInfo:
    """Remove the bytes; a tombstone with who and when remains."""
    return store.delete(who, artifact_id)


@router.put(
    "/{artifact_id}/pin",
    response_model=ArtifactInfo,
    responses={410: {"model": ErrorBody, "description": "Expired or deleted"}},
)
def pin_artifact(
    artifact_id: _ARTIFACT_ID, store: StoreDep, who: PrincipalDep, body: PinRequest | None = None
) -> ArtifactInfo:
    """Pin: never expires or gets evicted until unpinned."""
    return store.pin(who, artifact_id, reason=body.reason if body else None)


@router.delete("/{artifact_id}/pin", response_model=ArtifactInfo)
def unpin_artifact(artifact_id: _ARTIFACT_ID, store: StoreDep, who: PrincipalDep) -> ArtifactInfo:
    """Unpin: the policy expiry applies again."""
    return store.unpin(who, artifact_id)


@router.patch(
    "/{artifact_id}",
    response_model=ArtifactInfo,
    responses={410: {"model": ErrorBody, "description": "Expired or deleted"}},
)
def change_retention(
    artifact_id: _ARTIFACT_ID, body: RetentionChange, store: StoreDep, who: PrincipalDep
) -> ArtifactInfo:
    """Ask for a retention; the answer says what applied (`retention_source`) and
    whether it was clamped (`retention_clamped`)."""
    if isinstance(body.retention, int) and (
        body.retention <= 0 or body.retention > MAX_RETENTION_S
    ):
        raise InvalidArgument(
            f"retention must be between 1 and {MAX_RETENTION_S} seconds, or 'forever'"
        )
    return store.set_retention(who, artifact_id, body.retention)
