"""The base of the server's own ASGI layers (``OriginGuard``, ``ReadingFromHeaders``,
the request tracker): each acts on HTTP requests only, and everything else
(lifespan, a websocket) passes through it untouched."""

from __future__ import annotations

from typing import Any


class HttpLayer:
    """An ASGI layer over ``app`` whose ``http`` sees each HTTP request."""

    def __init__(self, app: Any) -> None:
        self._app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Any, receive: Any, send: Any) -> None:
        """One HTTP request: answer it, or hand it on to ``self._app``."""
        raise NotImplementedError


def headers_of(scope: Any) -> dict[bytes, bytes]:
    """A request's headers by their lower-case names (ASGI gives them so)."""
    return dict(scope.get("headers") or [])
