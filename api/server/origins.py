"""Which names and origins a browser may reach this server by: the answer to DNS
rebinding.

A page on ``evil.example.com`` whose name the attacker points at 127.0.0.1
makes the browser send that page's requests to a server listening on this
machine, with ``Host: evil.example.com`` and ``Origin: http://evil.example.com``.
So every request's ``Host`` must be a name the server is known by (a server on
loopback: ``localhost``, ``127.0.0.1``, ``[::1]``; else the ``--host`` it
listens on, or ``OVERSPILL_ALLOWED_HOSTS``), and a request that comes from a
page (it has an ``Origin``) must come from one of the server's own origins or
from ``OVERSPILL_ALLOWED_ORIGINS``. Anything else is a 403 that says which
setting admits it. (Requests without ``Origin`` -- agents, the CLI, curl --
are not a browser's and need only a good ``Host``.)

A server that listens on every interface (``0.0.0.0``) cannot know its names:
it takes any ``Host`` unless ``OVERSPILL_ALLOWED_HOSTS`` names them.
"""

from __future__ import annotations

import json
from typing import Any

from .http_layer import HttpLayer, headers_of

LOOPBACK = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
ANY = "*"


def hosts_for(bound: str | None, configured: str) -> frozenset[str] | None:
    """The names a server answers to (None: any). ``configured`` (comma-separated)
    wins; else a loopback server answers to the loopback names, a server on one
    address to that and loopback, one on every interface (or embedded in an app
    that did not say) to any."""
    names = {n.strip().lower() for n in configured.split(",") if n.strip()}
    if names:
        return None if ANY in names else frozenset(names | LOOPBACK)
    if bound is None or bound in ("0.0.0.0", "::", ""):
        return None
    host = bound.lower()
    return frozenset(LOOPBACK | {host, f"[{host}]" if ":" in host else host})


def origins_for(configured: str) -> frozenset[str]:
    return frozenset(o.strip().rstrip("/").lower() for o in configured.split(",") if o.strip())


class OriginGuard(HttpLayer):
    """ASGI layer: a request by a name or from an origin not ours gets 403."""

    def __init__(self, app: Any, hosts: frozenset[str] | None, origins: frozenset[str]) -> None:
        super().__init__(app)
        self._hosts = hosts
        self._origins = origins

    async def http(self, scope: Any, receive: Any, send: Any) -> None:
        headers = headers_of(scope)
        host = headers.get(b"host", b"").decode("latin-1").strip().lower()
        name = _name(host)
        if self._hosts is not None and name not in self._hosts:
            await _forbidden(
                send,
                "forbidden_host",
                f"this server is not served as {name or 'an empty Host'!r} (a name it answers "
                f"to: {', '.join(sorted(self._hosts))}; more: OVERSPILL_ALLOWED_HOSTS)",
            )
            return
        origin = headers.get(b"origin", b"").decode("latin-1").strip().lower().rstrip("/")
        if origin and origin not in self._origins and not _same_origin(origin, host, scope):
            await _forbidden(
                send,
                "forbidden_origin",
                f"requests from pages at {origin} are not accepted (the server's own pages "
                "are; more: OVERSPILL_ALLOWED_ORIGINS)",
            )
            return
        await self._app(scope, receive, send)


def _name(host: str) -> str:
    """The name of a ``Host`` value, without its port."""
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _same_origin(origin: str, host: str, scope: Any) -> bool:
    """A page this server served (its origin is the request's own scheme and Host)."""
    scheme = scope.get("scheme") or "http"
    return bool(host) and origin == f"{scheme}://{host}"


async def _forbidden(send: Any, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 403, "headers": headers})
    await send({"type": "http.response.body", "body": body})
