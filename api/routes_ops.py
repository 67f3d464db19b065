"""Liveness, readiness and metrics: unauthenticated, and revealing nothing stored."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from api.deps import StoreDep
from artifacts.errors import StorageUnavailable

router = APIRouter(tags=["operations"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "Database or blob store unreachable"}})
def readyz(store: StoreDep) -> Response:
    """Ready when the database and the blob store both answer."""
    try:
        store.check()
    except StorageUnavailable as exc:
        return JSONResponse({"status": "unavailable", "reason": exc.message}, status_code=503)
    return JSONResponse({"status": "ready"})


@router.get("/metrics", response_class=Response)
def metrics(request: Request) -> Response:
    """Prometheus text format."""
    return Response(
        generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST
    )
