"""Liveness, readiness and metrics (unauthenticated, revealing nothing stored), and
``/v1/whoami`` for a token's holder.

Neither check waits behind the worker pool: ``/healthz`` answers on the event
loop, and ``/readyz`` checks the stores on a thread of its own with a deadline,
so a server whose workers are all busy (or whose database is locked) still
says so at once instead of hanging the load balancer's probe.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from overspill.artifacts.errors import StorageUnavailable
from overspill.artifacts.records import Principal

from ..deps import PrincipalDep, StoreDep

router = APIRouter(tags=["operations"])
_CHECKS = ThreadPoolExecutor(2, thread_name_prefix="readyz")
READY_DEADLINE_S = 3.0


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "Database or blob store unreachable"}})
async def readyz(store: StoreDep) -> Response:
    """Ready when the database and the blob store both answer (within 3 s)."""
    loop = asyncio.get_running_loop()
    try:
        await asyncio.wait_for(loop.run_in_executor(_CHECKS, store.check), READY_DEADLINE_S)
    except TimeoutError:
        reason = f"the database or blob store did not answer within {READY_DEADLINE_S:g} s"
        return JSONResponse({"status": "unavailable", "reason": reason}, status_code=503)
    except StorageUnavailable as exc:
        return JSONResponse({"status": "unavailable", "reason": exc.message}, status_code=503)
    return JSONResponse({"status": "ready"})


@router.get("/v1/whoami", response_model=Principal, tags=["session"])
def whoami(who: PrincipalDep) -> Principal:
    """The principal and role behind the bearer token (the UI's sign-in check)."""
    return who


class Redaction(BaseModel):
    owner: str
    redact: bool


@router.get("/v1/redaction", response_model=Redaction, tags=["session"])
def redaction(who: PrincipalDep, store: StoreDep) -> Redaction:
    """Whether this principal's output must be masked before it is stored: always,
    unless an admin's policy for it (or the global one) says ``redact: false``.
    An executor asked to store output unmasked checks here first."""
    return Redaction(owner=who.name, redact=store.policies.effective(who.name).redact)


class FailurePattern(BaseModel):
    pattern: str | None = Field(
        description="One RE2 pattern for grep: the server's failure-like lines "
        "(OVERSPILL_FAILURE_PATTERNS joined); null when that is switched off"
    )


@router.get("/v1/failure-pattern", response_model=FailurePattern, tags=["session"])
def failure_pattern(who: PrincipalDep, request: Request) -> FailurePattern:
    """The lines the model is quoted from the part of a truncated output it was
    not shown, as one pattern the grep routes take (the web page lists them)."""
    from overspill.shell.failures import joined_pattern

    return FailurePattern(pattern=joined_pattern(request.app.state.settings.shell.failure_patterns))


@router.get("/metrics", response_class=Response)
def metrics(request: Request) -> Response:
    """Prometheus text format."""
    metrics = request.app.state.metrics
    if not metrics.enabled:
        return Response("# no metrics on the local server\n", media_type="text/plain")
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)
