"""The web UI: one HTML shell and a few plain ES modules, served by the API app.

There is no build step and no server-side session. The browser keeps the
bearer token (sessionStorage, or localStorage if the user asks to stay signed
in) and sends it in the Authorization header, which another site can never make
a browser attach: no cookie, so no cross-site request can change anything.
Every page carries a strict Content-Security-Policy (scripts and styles from
this origin only, no inline code, no framing), and the scripts put artifact
content into the page only as text nodes, so stored bytes can never run.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from importlib import resources

from fastapi import APIRouter, Request, Response

from ..errors import error_response

_CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
_SECURITY_HEADERS = {
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-cache",
}
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
_ASSET_NAME = re.compile(r"^[a-z0-9_-]+\.(?:js|css|svg)$")


@dataclass(frozen=True)
class _Asset:
    body: bytes
    media_type: str
    etag: str


@functools.cache
def _load_assets() -> dict[str, _Asset]:
    """Every file shipped in api/server/static, read once; nothing else is ever served."""
    assets: dict[str, _Asset] = {}
    for entry in resources.files("overspill.api.server").joinpath("static").iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if entry.is_file() and suffix in _TYPES:
            body = entry.read_bytes()
            etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
            assets[entry.name] = _Asset(body, _TYPES[suffix], etag)
    return assets


def _serve(request: Request, asset: _Asset) -> Response:
    headers = {**_SECURITY_HEADERS, "ETag": asset.etag}
    if request.headers.get("if-none-match") == asset.etag:
        return Response(status_code=304, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)


def not_found_page(request: Request) -> Response:
    """The UI's shell as a 404, for a browser at an address that is no page: the
    script says there is no such page (the API's own paths keep their JSON)."""
    response = _serve(request, _load_assets()["index.html"])
    if response.status_code == 200:
        response.status_code = 404
    return response


def make_router() -> APIRouter:
    assets = _load_assets()
    shell = assets["index.html"]
    router = APIRouter(include_in_schema=False)

    # The pages are one shell; the script renders what the path names.
    @router.get("/")
    @router.get("/sign-in")
    @router.get("/admin")
    def page(request: Request) -> Response:
        return _serve(request, shell)

    @router.get("/artifacts/{artifact_id}")
    def artifact_page(artifact_id: str, request: Request) -> Response:
        return _serve(request, shell)

    @router.get("/sessions/{session_id}")
    def session_page(session_id: str, request: Request) -> Response:
        return _serve(request, shell)

    @router.get("/static/{name}")
    def static(name: str, request: Request) -> Response:
        asset = assets.get(name) if _ASSET_NAME.match(name) else None
        if asset is None:
            return error_response(404, "not_found", f"no UI asset named {name!r}")
        return _serve(request, asset)

    return router
