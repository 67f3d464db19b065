"""One JSON error shape for every failure, and the one place errors map to statuses.

``{"error": {"code": "...", "message": "...", ...extra}}``. Bad input is always a
4xx naming the problem; storage trouble is a 503; nothing a client sends yields 500.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from overspill.artifacts.errors import (
    ConfigurationError,
    Conflict,
    Gone,
    InvalidArgument,
    InvalidRange,
    NotFound,
    OffsetConflict,
    OverspillError,
    PermissionDenied,
    QuotaExceeded,
    StorageUnavailable,
    TooManyRequests,
)

log = logging.getLogger(__name__)

STATUS: list[tuple[type[OverspillError], int]] = [
    (OffsetConflict, 409),
    (Conflict, 409),
    (InvalidRange, 400),
    (InvalidArgument, 400),
    (NotFound, 404),
    (Gone, 410),
    # 403, not 413: the request may be one byte; it is the owner's quota that is
    # spent. The body's code (quota_exceeded) tells it from a role refusal.
    (QuotaExceeded, 403),
    (PermissionDenied, 403),
    (StorageUnavailable, 503),
    (TooManyRequests, 429),
    (ConfigurationError, 503),
]


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None, **extra: Any
) -> JSONResponse:
    body = {"error": {"code": code, "message": message, **extra}}
    return JSONResponse(body, status_code=status, headers=headers)


def status_for(exc: OverspillError) -> int:
    for cls, status in STATUS:
        if isinstance(exc, cls):
            return status
    return 400


def _extra(exc: OverspillError) -> dict[str, Any]:
    if isinstance(exc, OffsetConflict):
        return {"current_size": exc.current_size}
    if isinstance(exc, Gone):
        return {"reason": exc.reason, "since": exc.since.isoformat() if exc.since else None}
    return {}


def install(app: FastAPI) -> None:
    @app.exception_handler(OverspillError)
    async def _overspill(_: Request, exc: OverspillError) -> JSONResponse:
        return error_response(status_for(exc), exc.code, exc.message, **_extra(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", []) if p not in ("body",)) or "request"
        return error_response(
            422,
            "invalid_request",
            f"{where}: {first.get('msg')}",
            details=[
                {"loc": list(e.get("loc", [])), "msg": e.get("msg")} for e in exc.errors()[:10]
            ],
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {
            401: "unauthorized",
            403: "forbidden",
            404: "not_found",
            405: "method_not_allowed",
        }.get(exc.status_code, "http_error")
        return error_response(
            exc.status_code, code, str(exc.detail), headers=dict(exc.headers or {})
        )

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return error_response(500, "internal_error", "internal error; see the server log")


RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Bad input (the message names the problem)"},
    401: {"model": ErrorBody, "description": "Missing or invalid bearer token"},
    404: {"model": ErrorBody, "description": "No such artifact for this principal"},
    422: {"model": ErrorBody, "description": "Malformed request parameters or body"},
    503: {"model": ErrorBody, "description": "Database or blob store unavailable"},
}
