"""``/mcp`` on ``overspill serve``: the artifact tools for remote agents over
MCP's streamable HTTP, on the official ``mcp`` SDK.

Each caller is authenticated by the service's bearer tokens and sees only its
own artifacts. There is no ``bash`` here: the server never runs commands for a
remote caller. The tool table, the template and the shape of a result are the
stdio server's (``api.agent.mcp_table``): one text block per result, no structured
copy. Handlers are synchronous store calls, so each runs on a worker thread.
(``overspill mcp``, the stdio transport for a local agent, is ``api.agent.mcp_stdio``.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server

from overspill.shell.wording import tool_error

from ..agent.harnesses import budget_for
from ..agent.mcp_table import INSTRUCTIONS, RESOURCE_TEMPLATE, tool_list, tool_result
from ..agent.tools import ArtifactTools, ToolResult
from ..version import VERSION

PRINCIPAL_KEY = "overspill_principal"

ToolsFor = Callable[[Any], ArtifactTools]
"""Given the request context, the tools acting for its caller."""


def build_server(tools_for: ToolsFor) -> Server[Any]:
    """The MCP server of the HTTP mount (the artifact tools, no ``bash``)."""
    budget = budget_for(None)
    listed = [types.Tool.model_validate(t) for t in tool_list(budget, bash=False)]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool, args = params.name, params.arguments or {}
        try:
            tools = tools_for(ctx)
        except PermissionError as exc:
            result = ToolResult(tool_error(str(exc)), True)
        else:
            result = await anyio.to_thread.run_sync(tools.handle, tool, args)
        return types.CallToolResult.model_validate(tool_result(result.text, result.is_error))

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        # Outputs are reached by the template (their ids), not listed one by one.
        return types.ListResourcesResult(resources=[])

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[types.ResourceTemplate.model_validate(RESOURCE_TEMPLATE)]
        )

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        from ..agent.tools.arguments import ToolArgumentError
        from ..agent.tools.resources import read_arguments

        uri = str(params.uri)
        try:
            arguments = read_arguments(uri)
        except ToolArgumentError as exc:
            text = tool_error(str(exc))
        else:
            tools = tools_for(ctx)
            answer = await anyio.to_thread.run_sync(tools.handle, "artifact_read", arguments)
            text = answer.text
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=text, mime_type="text/plain")]
        )

    return Server(
        "overspill",
        version=VERSION,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def principal_of(ctx: Any) -> Any:
    """The principal the HTTP transport authenticated for this request."""
    request = getattr(ctx, "request", None)
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    principal = state.get(PRINCIPAL_KEY)
    if principal is None:
        raise PermissionError("this request carries no authenticated caller")
    return principal


# -- streamable HTTP, inside the FastAPI app ------------------------------------------


class McpHttp:
    """``/mcp`` for ``overspill serve``: bearer-token auth in front of the SDK's
    stateless streamable-HTTP transport (JSON answers, no session state, so any
    API process behind a load balancer can answer any request)."""

    def __init__(
        self, tools_for: Callable[[Any], ArtifactTools], authenticate: Callable[[str], Any]
    ):
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings

        self._authenticate = authenticate
        server = build_server(lambda ctx: tools_for(principal_of(ctx)))
        self.manager = StreamableHTTPSessionManager(
            app=server,
            stateless=True,
            json_response=True,
            # Host and Origin are checked for the whole app (``api.server.origins``),
            # with the names an admin configured, not the SDK's fixed list.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] == "GET":
            # Stateless: no server-initiated stream to open (the transport allows
            # 405 here), and an unbounded event stream per GET held a
            # descriptor each for ever.
            await _error(send, 405, "method_not_allowed", "GET /mcp opens no stream here: POST")
            return
        headers = dict(scope.get("headers") or [])
        scheme, _, secret = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        from .deps import BAD_TOKEN, NO_TOKEN  # (the HTTP server's, loaded)

        if scheme.lower() != "bearer" or not secret.strip():
            await _error(send, 401, "unauthorized", NO_TOKEN)
            return
        principal = await anyio.to_thread.run_sync(self._authenticate, secret.strip())
        if principal is None:
            await _error(send, 401, "unauthorized", BAD_TOKEN)
            return
        scope.setdefault("state", {})[PRINCIPAL_KEY] = principal
        await self.manager.handle_request(scope, receive, send)


async def _error(send: Any, status: int, code: str, message: str) -> None:
    """The same error body as every /v1 route's."""
    import json

    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if status == 405:
        headers.append((b"allow", b"POST, DELETE"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
