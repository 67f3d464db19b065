"""One JSON error shape for every failure, and the one place errors map to statuses.

``{"error": {"code": "...", "message": "...", ...extra}}``. Each store error
class carries its own status and code (``artifacts.errors``), so this module
only renders them. Bad input is always a 400 naming the problem, whichever layer
caught it (a query or body the models refuse is the same 400 as a value the
store refuses); storage trouble is a 503; nothing a client sends yields 500.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from overspill.artifacts.errors import (
    BY_CODE,
    InvalidArgument,
    MethodNotAllowed,
    NotFound,
    OverspillError,
    PermissionDenied,
    TooManyRequests,
    Unauthorized,
)

log = logging.getLogger(__name__)


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


GONE: dict[int | str, dict[str, Any]] = {
    410: {"model": ErrorBody, "description": "Expired or deleted"}
}
"""The answer a route of one artifact documents for an expired or deleted one."""


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None, **extra: Any
) -> JSONResponse:
    body = {"error": {"code": code, "message": message, **extra}}
    return JSONResponse(body, status_code=status, headers=headers)


def render(exc: OverspillError, headers: dict[str, str] | None = None) -> JSONResponse:
    """The response for a store error: its own status, code and extra fields."""
    headers = dict(headers or {})
    if isinstance(exc, TooManyRequests):
        headers.setdefault("Retry-After", str(exc.retry_after_s))
    if isinstance(exc, Unauthorized):
        headers.setdefault("WWW-Authenticate", "Bearer")
    return error_response(exc.status, exc.code, exc.message, headers, **exc.wire_extra())


def validation_message(errors: list[Any]) -> str:
    """``where: what`` of the first problem pydantic found (one line)."""
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    where = ".".join(str(p) for p in first.get("loc", []) if p not in ("body", "query")) or (
        "request"
    )
    return f"{where}: {first.get('msg')}"


# Starlette's own refusals (no route, wrong method, a dependency's refusal) as
# the store error of the same meaning, so a client gets one of our codes.
_HTTP: dict[int, type[OverspillError]] = {
    400: InvalidArgument,
    401: Unauthorized,
    403: PermissionDenied,
    404: NotFound,
    405: MethodNotAllowed,
}


_API_PREFIXES = ("/v1/", "/mcp", "/static/", "/docs", "/redoc", "/openapi")


def _from_a_browser(request: Request) -> bool:
    """A page navigation (the browser asks for HTML) outside the API's paths."""
    path = request.url.path
    return (
        request.method == "GET"
        and "text/html" in request.headers.get("accept", "")
        and not path.startswith(_API_PREFIXES)
    )


def install(app: FastAPI) -> None:
    @app.exception_handler(OverspillError)
    async def _overspill(_: Request, exc: OverspillError) -> JSONResponse:
        return render(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = list(exc.errors())
        return error_response(
            InvalidArgument.status,
            InvalidArgument.code,
            validation_message(problems),
            details=[{"loc": list(e.get("loc", [])), "msg": e.get("msg")} for e in problems[:10]],
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        page = getattr(request.app.state, "not_found_page", None)
        if exc.status_code == 404 and page is not None and _from_a_browser(request):
            # A person who typed a wrong address gets the UI saying so, not JSON.
            response: Response = page(request)
            return response
        cls = _HTTP.get(exc.status_code)
        if cls is None:
            return error_response(exc.status_code, "http_error", str(exc.detail))
        return render(cls(str(exc.detail)), dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return error_response(500, "internal_error", "internal error; see the server log")


RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Bad input (the message names the problem)"},
    401: {"model": ErrorBody, "description": "Missing or invalid bearer token"},
    404: {"model": ErrorBody, "description": "No such artifact for this principal"},
    503: {"model": ErrorBody, "description": "Database or blob store unavailable"},
}

__all__ = ["BY_CODE", "RESPONSES", "ErrorBody", "error_response", "install", "render"]
