"""The FastAPI application factory. The store is handed in (or built from settings
in the lifespan), never created at import time.

Two shapes of one app: the service (``overspill serve``: the API, the web UI,
``/docs`` and ``/mcp``, bearer tokens) and the local server (``local=True``: the
API and ``/v1/local`` on the home's Unix socket, where the socket's owner names
the principal; no UI, docs or MCP, so it starts in well under a second).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, Response
from starlette.routing import Route

from overspill.artifacts.records import Principal
from overspill.artifacts.store import ArtifactStore
from overspill.shell.redact.policy import Redaction

from ..settings import Settings
from ..version import VERSION
from . import errors
from .http_layer import HttpLayer
from .limits import PrincipalLimit
from .metrics import Metrics
from .routes import admin as routes_admin
from .routes import artifacts as routes_artifacts
from .routes import ledger as routes_ledger
from .routes import ops as routes_ops
from .routes import reads as routes_reads
from .routes import results as routes_results
from .routes import search as routes_search


class Activity:
    """Requests in flight and when the last one ended: the local server exits
    after an idle period, never while it answers."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.last = time.monotonic()

    def idle_for(self) -> float:
        return 0.0 if self.in_flight else time.monotonic() - self.last


def create_app(
    store: ArtifactStore | None = None,
    settings: Settings | None = None,
    *,
    local: bool = False,
    bound_host: str | None = None,
) -> FastAPI:
    """The app. ``bound_host``: the address ``overspill serve`` listens on, which
    decides the names a browser may reach it by (``api.server.origins``)."""
    settings = settings or Settings.load()
    owns_store = store is None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if app.state.store is None:
            app.state.store = ArtifactStore.open(settings.store)
        if mcp is None:
            yield
        else:
            async with mcp.manager.run():
                yield
        if owns_store and app.state.store is not None:
            app.state.store.close()

    app = FastAPI(
        title="overspill",
        version=VERSION,
        description="Artifacts for the oversized output of agent tools. Authenticate with "
        "`Authorization: Bearer <token>`; another owner's artifact answers 404.",
        lifespan=lifespan,
        docs_url=None,  # served below from assets on disk, not a CDN
        redoc_url=None,
        openapi_url=None if local else "/openapi.json",
    )
    app.state.store = store
    app.state.settings = settings
    app.state.local = local
    app.state.local_owner = settings.client.owner
    # Every write through this server masks with it (``shell.redact.policy``).
    app.state.redaction = Redaction.from_settings(settings.shell)
    # No redirect for a trailing slash: it was built from the Host header, so any
    # Host a client sent came back as the place to go.
    app.router.redirect_slashes = False
    app.state.metrics = Metrics(enabled=not local)
    server = settings.server
    app.state.followers = PrincipalLimit(server.max_followers, "followers (follow=true)")
    app.state.expensive = PrincipalLimit(
        server.max_expensive_reads, "expensive reads (grep, large ranges, downloads)"
    )
    app.state.activity = Activity()
    errors.install(app)
    app.include_router(routes_artifacts.router)
    app.include_router(routes_reads.router)
    app.include_router(routes_search.router)
    app.include_router(routes_results.router)
    app.include_router(routes_admin.router)
    app.include_router(routes_ops.router)
    app.include_router(routes_ledger.router)
    mcp = None
    if local:
        from .routes import local as routes_local

        app.include_router(routes_local.router)
    else:
        from .routes import ui as routes_ui

        _offline_docs(app)
        app.include_router(routes_ui.make_router())
        app.state.not_found_page = routes_ui.not_found_page
        mcp = _mcp(app)
        app.router.routes.append(Route("/mcp", endpoint=mcp, methods=["GET", "POST", "DELETE"]))

    @app.middleware("http")
    async def _measure(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        try:
            response = await call_next(request)
        except Exception:
            # An unhandled error becomes a 500 outside this middleware: count it
            # here, or /metrics would never show the errors that matter most.
            route = request.scope.get("route")
            path = getattr(route, "path", "unmatched")
            request.app.state.metrics.requests.labels(request.method, path, "500").inc()
            raise
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        m: Metrics = request.app.state.metrics
        m.requests.labels(request.method, path, str(response.status_code)).inc()
        m.latency.labels(path).observe(time.perf_counter() - started)
        if response.status_code == 503:
            m.storage_errors.inc()
        return response

    if not local:  # (a Unix socket: no browser reaches it)
        from .origins import OriginGuard, hosts_for, origins_for

        app.add_middleware(
            OriginGuard,
            hosts=hosts_for(bound_host, server.allowed_hosts),
            origins=origins_for(server.allowed_origins),
        )
    from .read_headers import ReadingFromHeaders

    app.add_middleware(ReadingFromHeaders)
    app.add_middleware(_Tracked, activity=app.state.activity)  # added last: outermost
    return app


class _Tracked(HttpLayer):
    """Outermost ASGI layer: counts requests in flight until their last byte is
    sent (a streaming download or a follower counts as busy)."""

    def __init__(self, app: Any, activity: Activity) -> None:
        super().__init__(app)
        self._activity = activity

    async def http(self, scope: Any, receive: Any, send: Any) -> None:
        activity = self._activity
        activity.in_flight += 1
        try:
            await self._app(scope, receive, send)
        finally:
            activity.in_flight -= 1
            activity.last = time.monotonic()


def _offline_docs(app: FastAPI) -> None:
    """/docs (Swagger UI) and /redoc with their files from the pinned
    fastapi-offline package, so the API browser works on a machine without
    internet (FastAPI's defaults load them from a CDN: a blank page offline)."""
    from importlib.resources import files

    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
    from fastapi.responses import HTMLResponse
    from fastapi.staticfiles import StaticFiles

    assets = str(files("fastapi_offline").joinpath("static"))
    app.mount("/docs-assets", StaticFiles(directory=assets), name="docs-assets")

    page: dict[str, Any] = {"openapi_url": "/openapi.json", "title": "overspill API"}
    at = "/docs-assets/"

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            **page,
            swagger_js_url=f"{at}swagger-ui-bundle.js",
            swagger_css_url=f"{at}swagger-ui.css",
            swagger_favicon_url=f"{at}favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            **page,
            redoc_js_url=f"{at}redoc.standalone.js",
            redoc_favicon_url=f"{at}favicon.png",
            with_google_fonts=False,
        )


def _mcp(app: FastAPI) -> Any:
    """The MCP endpoint: the artifact tools (no bash) for each token's principal."""
    from ..agent.result_saver import saver_for
    from ..agent.tools import ArtifactTools
    from ..client.in_process import InProcessClient, redaction_for
    from .mcp_http import McpHttp

    shell = app.state.settings.shell  # read once, here, not per call

    def tools_for(principal: Principal) -> ArtifactTools:
        redaction = redaction_for(app.state.store, app.state.redaction, principal.name)
        backend = InProcessClient(app.state.store, principal, redaction=redaction)
        # No legacy files on a server: a remote caller cannot open a path here.
        saver = saver_for(backend, shell, legacy=False, redaction=redaction)
        return ArtifactTools(backend, saver=saver, failure_patterns=shell.failure_patterns)

    return McpHttp(tools_for, lambda secret: app.state.store.tokens.authenticate(secret))
