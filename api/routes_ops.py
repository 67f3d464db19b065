"""Liveness, readiness and metrics (unauthenticated, revealing nothing stored), and
``/v1/whoami`` for a token's holder."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from overspill.api.deps import PrincipalDep, StoreDep
from overspill.artifacts.errors import StorageUnavailable
from overspill.artifacts.records import Principal

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


@router.get("/v1/whoami", response_model=Principal, tags=["session"])
def whoami(who: PrincipalDep) -> Principal:
    """The principal and role behind the bearer token (the UI's sign-in check)."""
    return who


@router.get("/metrics", response_class=Response)
def metrics(request: Request) -> Response:
    """Prometheus text format."""
    return Response(
        generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST
    )
