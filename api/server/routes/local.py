"""``/v1/local``: what only the local server's own socket offers.

The local server listens on a Unix socket inside the home (0600 in a 0700
directory), so whoever connects is the home's owner. On it, and only on it:

- ``GET /hello``: the handshake (version, home, storage settings, pid), and
  ``POST /stop``;
- the **writers** of clients that place bytes into the home's blob directory
  themselves (``overspill run``'s sink): ``POST /writers`` creates an artifact
  with a lease, ``.../publish`` adds the rows of segments the client stored,
  ``.../renew`` and ``.../finish``. A segment may only name a blob of its own
  artifact, and every step is checked against the lease, as in-process.

None of this exists on a TCP server: a remote caller can never name a blob.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from overspill.artifacts.blobs.base import AppendableBlobStore
from overspill.artifacts.bounds import MAX_OFFSET
from overspill.artifacts.inputs import check_source, check_text
from overspill.artifacts.writing.segments import StagedSegment
from overspill.artifacts.writing.writes import Ending

from ..deps import PrincipalDep, StoreDep
from .artifacts import CreateArtifact

router = APIRouter(prefix="/v1/local", include_in_schema=False)


@router.get("/hello")
def hello(request: Request) -> dict[str, Any]:
    identity: dict[str, Any] = request.app.state.local_identity
    return identity


@router.post("/stop")
def stop(request: Request) -> dict[str, bool]:
    request.app.state.stop_server()
    return {"stopping": True}


class Lease(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lease: str = Field(..., min_length=1, max_length=64)


class SegmentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    offset: int = Field(..., ge=0, le=MAX_OFFSET)
    size: int = Field(..., gt=0, le=2**40)
    key: str = Field(..., min_length=1, max_length=200)
    newlines: int = Field(..., ge=0, le=MAX_OFFSET)
    ends_with_newline: bool


class Publish(Lease):
    segments: list[SegmentIn] = Field(..., min_length=1, max_length=1000)


class Finish(Lease):
    segments: list[SegmentIn] = Field(default_factory=list, max_length=1000)
    state: Literal["complete", "capped", "failed", "incomplete"]
    total_bytes: int = Field(..., ge=0, le=MAX_OFFSET)
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    error: str | None = Field(None, max_length=2000)
    source: dict[str, Any] = Field(default_factory=dict)


@router.post("/writers", status_code=201)
def open_writer(body: CreateArtifact, store: StoreDep, who: PrincipalDep) -> dict[str, Any]:
    """An artifact with a lease, for a writer that stores its own blobs."""
    info, token = store.ingest.open_lease(who, body.new())
    blobs = store.blobs
    s = store.settings
    root = getattr(blobs, "root", None) if isinstance(blobs, AppendableBlobStore) else None
    return {
        "artifact": info.model_dump(mode="json"),
        "lease": token,
        "blob_root": str(root) if root is not None else None,
        "segment_bytes": s.segment_bytes or blobs.segment_bytes,
        "flush_interval_s": s.flush_interval_s,
        "lease_seconds": s.lease_seconds,
        "stall_s": s.storage_stall_s,
    }


@router.post("/writers/{artifact_id}/publish")
def publish(artifact_id: str, body: Publish, store: StoreDep, who: PrincipalDep) -> dict[str, Any]:
    store.get(who, artifact_id)  # another owner's is as missing as a missing one
    staged = [StagedSegment(**seg.model_dump()) for seg in body.segments]
    published, stop = store.publisher.publish(artifact_id, body.lease, staged)
    return {"published": published, "stop": stop}


@router.post("/writers/{artifact_id}/renew")
def renew(artifact_id: str, body: Lease, store: StoreDep, who: PrincipalDep) -> dict[str, bool]:
    store.get(who, artifact_id)
    store.publisher.renew(artifact_id, body.lease)
    return {"renewed": True}


@router.post("/writers/{artifact_id}/finish")
def finish(artifact_id: str, body: Finish, store: StoreDep, who: PrincipalDep) -> dict[str, Any]:
    """Publish the writer's last segments (if any) and record its end: one round
    trip where a publish and a finish were two."""
    store.get(who, artifact_id)
    source = check_source(body.source) if body.source else None
    state, sha, error = body.state, body.sha256, check_text("error", body.error)
    published = 0
    if body.segments:
        staged = [StagedSegment(**seg.model_dump()) for seg in body.segments]
        published, stop = store.publisher.publish(artifact_id, body.lease, staged)
        if stop:  # the owner's quota: the prefix stands, the rest is not stored
            state, sha, error = "capped", None, stop
    ending = Ending(state, body.total_bytes, sha, error, source)
    # The socket's owner is on this machine: its legacy spill file may be recorded.
    store.publisher.finish(artifact_id, body.lease, ending, local_writer=True)
    return {"artifact": store.get(who, artifact_id).model_dump(mode="json"), "published": published}
