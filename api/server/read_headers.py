"""A request's ``X-Overspill-Tool`` and ``X-Overspill-Session`` headers as its read
context (``artifacts.ledger.read_context``): the CLI verb, the web pages ("ui"), the
MCP tool a remote agent called, and the conversation, for the context ledger.

A header that is not a short word is ignored (the ledger's tool names are its
own; a made-up one cannot grow a row per request)."""

from __future__ import annotations

import re
from typing import Any

from overspill.artifacts.ledger.read_context import reading_as

from .http_layer import HttpLayer, headers_of

_TOOL = re.compile(r"[a-z][a-z0-9_.-]{0,39}")


class ReadingFromHeaders(HttpLayer):
    async def http(self, scope: Any, receive: Any, send: Any) -> None:
        headers = headers_of(scope)
        tool = headers.get(b"x-overspill-tool", b"").decode("latin-1").strip().lower()
        if not _TOOL.fullmatch(tool):
            await self._app(scope, receive, send)
            return
        session = headers.get(b"x-overspill-session", b"").decode("utf-8", "replace").strip()
        with reading_as(tool, session[:200] or None):
            await self._app(scope, receive, send)
