"""``/v1/artifacts``: create, upload, append, complete, list, metadata, pin,
retain, delete (the reads of the bytes are in ``routes_reads``).

Every route goes through the store with the caller's principal, so another
owner's artifact is a 404 exactly like a missing one, on every route.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import ClientDisconnect

from overspill.artifacts.bounds import MAX_OFFSET
from overspill.artifacts.catalog.retention import MAX_RETENTION_S
from overspill.artifacts.errors import InvalidArgument, StorageUnavailable
from overspill.artifacts.queries import ListQuery
from overspill.artifacts.records import (
    ArtifactInfo,
    ArtifactPage,
)
from overspill.artifacts.writing.writes import Ending, NewArtifact
from overspill.shell.redact.policy import what_was_masked
from overspill.shell.redact.stream import StreamRedactor

from ..deps import PrincipalDep, RedactionDep, StoreDep
from ..errors import GONE, RESPONSES, ErrorBody

router = APIRouter(prefix="/v1/artifacts", tags=["artifacts"], responses=RESPONSES)
log = logging.getLogger(__name__)

ARTIFACT_ID = Annotated[str, Field(description="Artifact id (art_ + 26 base32 characters)")]


class CreateArtifact(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = Field("output", min_length=1, max_length=50)
    name: str | None = Field(None, max_length=500)
    media_type: str = Field("text/plain; charset=utf-8", min_length=1, max_length=200)
    session_id: str | None = Field(None, max_length=200)
    source: dict[str, Any] = Field(default_factory=dict)
    max_bytes: int | None = Field(None, gt=0, le=MAX_OFFSET)
    retention: int | Literal["forever"] | None = Field(
        None, description="Seconds from creation, or 'forever' where an admin allows it"
    )
    owner: str | None = Field(None, max_length=200, description="Admins only")
    created_at: datetime | None = Field(
        None,
        description="When the output was made, if earlier (an adopted file's time); "
        "the retention still runs from now",
    )
    id: str | None = Field(
        None,
        max_length=30,
        description="An id promised before the store could be reached (a command in a "
        "harness's sandbox); 409 if taken",
    )

    def new(self) -> NewArtifact:
        """The store's record of this request (``retention`` checked here: the one
        place a client names it)."""
        if isinstance(self.retention, int) and not 0 < self.retention <= MAX_RETENTION_S:
            raise InvalidArgument(
                f"retention must be between 1 and {MAX_RETENTION_S} seconds, or 'forever'"
            )
        return NewArtifact(**self.model_dump())


class Complete(BaseModel):
    model_config = ConfigDict(extra="forbid")

    total_bytes: int | None = Field(None, ge=0, le=MAX_OFFSET)
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
    return store.create(who, body.new())


class ClientGone(InvalidArgument, code="client_disconnected"):
    """The client disconnected before its upload's body ended."""


_GATHER = 1024 * 1024


async def _stream_into(
    request: Request,
    store: Any,
    who: Any,
    artifact_id: str,
    offset: int,
    redactor: StreamRedactor | None = None,
) -> Any:
    writer = await run_in_threadpool(store.attach_writer, who, artifact_id, offset)

    def write(chunk: bytes) -> None:
        for piece in redactor.feed(chunk) if redactor is not None else (chunk,):
            writer.write(piece)

    # The server hands the body over in pieces of 64 KiB: gathered to 1 MiB,
    # each hop to a worker thread and each pass of the redactor covers 16 of
    # them (a 1 MB upload went from 42 to 20 ms).
    gathered = bytearray()
    try:
        async for chunk in request.stream():
            gathered += chunk
            if len(gathered) >= _GATHER:
                await run_in_threadpool(write, bytes(gathered))
                request.app.state.metrics.bytes_in.inc(len(gathered))
                gathered.clear()
        if gathered:
            await run_in_threadpool(write, bytes(gathered))
            request.app.state.metrics.bytes_in.inc(len(gathered))
        if redactor is not None:
            await run_in_threadpool(writer.write, redactor.finish())
    except ClientDisconnect:
        # Not a server error: what arrived is kept, and the upload ends now.
        if gathered:
            await run_in_threadpool(write, bytes(gathered))
        await run_in_threadpool(store.end_append, writer, offset)
        stored = offset + writer.stored_bytes
        log.info("upload to %s ended: the client disconnected after %d bytes", artifact_id, stored)
        said = f"the client disconnected mid-upload; {stored} bytes were stored"
        ending = Ending("incomplete", offset + writer.total_bytes, None, said)
        await run_in_threadpool(store.publisher.finish, artifact_id, None, ending)
        raise ClientGone(said) from None
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
    artifact_id: ARTIFACT_ID,
    request: Request,
    store: StoreDep,
    who: PrincipalDep,
    redaction: RedactionDep,
    complete: bool = Query(True, description="Finish after the upload"),
) -> ArtifactInfo:
    """Stream the whole content of an empty `writing` artifact (any size, bounded
    memory). Secrets in it are masked at their own length before a byte is kept,
    as in every other write (``overspill put`` uploads here)."""
    redactor = redaction.redactor()
    writer = await _stream_into(request, store, who, artifact_id, 0, redactor)
    update = what_was_masked(redactor)
    if complete:
        result = await run_in_threadpool(lambda: writer.close(source_update=update))
        if result.error and result.state == "failed":
            raise writer.error_to_raise() if writer.error else StorageUnavailable(result.error)
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
    artifact_id: ARTIFACT_ID,
    request: Request,
    store: StoreDep,
    who: PrincipalDep,
    offset: int = Query(..., ge=0, le=MAX_OFFSET, description="Must equal the current size"),
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
    artifact_id: ARTIFACT_ID, body: Complete, request: Request, store: StoreDep, who: PrincipalDep
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
def get_artifact(artifact_id: ARTIFACT_ID, store: StoreDep, who: PrincipalDep) -> ArtifactInfo:
    """Metadata, including expiry, pin and how retention was decided."""
    return store.get(who, artifact_id)


@router.delete("/{artifact_id}", response_model=ArtifactInfo)
def delete_artifact(artifact_id: ARTIFACT_ID, store: StoreDep, who: PrincipalDep) -> ArtifactInfo:
    """Remove the bytes; a tombstone with who and when remains."""
    return store.delete(who, artifact_id)


@router.put("/{artifact_id}/pin", response_model=ArtifactInfo, responses=GONE)
def pin_artifact(
    artifact_id: ARTIFACT_ID, store: StoreDep, who: PrincipalDep, body: PinRequest | None = None
) -> ArtifactInfo:
    """Pin: never expires or gets evicted until unpinned."""
    return store.pin(who, artifact_id, reason=body.reason if body else None)


@router.delete("/{artifact_id}/pin", response_model=ArtifactInfo)
def unpin_artifact(artifact_id: ARTIFACT_ID, store: StoreDep, who: PrincipalDep) -> ArtifactInfo:
    """Unpin: the policy expiry applies again."""
    return store.unpin(who, artifact_id)


@router.patch("/{artifact_id}", response_model=ArtifactInfo, responses=GONE)
def change_retention(
    artifact_id: ARTIFACT_ID, body: RetentionChange, store: StoreDep, who: PrincipalDep
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
