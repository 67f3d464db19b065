"""overspill over the Model Context Protocol, on the official ``mcp`` SDK.

One server definition, two transports:

- ``overspill mcp`` (stdio) for a local agent: the artifact tools, ``artifact_save``
  and ``bash`` / ``bash_output`` / ``bash_kill``, as the configured owner and
  session (or everything through a server when ``OVERSPILL_URL`` is set);
- ``/mcp`` on ``overspill serve`` (streamable HTTP) for remote agents: the same
  artifact tools, each caller authenticated by the service's bearer tokens and
  seeing only its own artifacts. There is no ``bash`` there: the server never
  runs commands for a remote caller.

Every result carries a plain text block with the id, the window shown, the total
and the exact follow-up call (clients that ignore structured content or resource
links still get everything); ``structuredContent`` has the same facts as data.
Handlers are synchronous store calls, so each runs on a worker thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server

from overspill.api.tools import MAX_CHARS, ArtifactTools, ToolResult
from overspill.api.tools.arguments import ToolArgumentError, parse_id
from overspill.shell.wording import tool_error

# Clients that spill large tool results to files of their own read this hint; an
# answer here is already bounded and says how to continue, so it must reach the
# model whole.
MAX_RESULT_META = {"anthropic/maxResultSizeChars": MAX_CHARS * 2}
PRINCIPAL_KEY = "overspill_principal"

ToolsFor = Callable[[Any], ArtifactTools]
"""Given the request context, the tools acting for its caller."""


def build_server(
    tools_for: ToolsFor,
    *,
    bash: Any = None,
    name: str = "overspill",
    version: str = "0.1.0",
) -> Server[Any]:
    """The MCP server; ``bash`` (a ``BashTools``) adds the command tools."""

    def definitions(ctx: Any) -> list[dict[str, Any]]:
        from overspill.api.bash_tools import BASH_DEFINITIONS

        return (BASH_DEFINITIONS if bash is not None else []) + tools_for(ctx).definitions()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = await anyio.to_thread.run_sync(definitions, ctx)
        return types.ListToolsResult(
            tools=[
                types.Tool.model_validate(
                    {
                        "name": d["name"],
                        "description": d["description"],
                        "inputSchema": d["input_schema"],
                        "_meta": MAX_RESULT_META,
                    }
                )
                for d in tools
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool, args = params.name, params.arguments or {}
        if bash is not None and tool in ("bash", "bash_output", "bash_kill"):
            result = await _run_bash(bash, tool, args)
        else:
            try:
                tools = tools_for(ctx)
            except PermissionError as exc:
                result = ToolResult(tool_error(str(exc)), True)
            else:
                result = await anyio.to_thread.run_sync(tools.handle, tool, args)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text)],
            structured_content=result.data or None,
            is_error=result.is_error,
        )

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template="artifact://{id}",
                    name="artifact",
                    description="The start of a stored output (a bounded window; the text "
                    "ends with the artifact_read call that continues it).",
                    mime_type="text/plain",
                )
            ]
        )

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            art = parse_id(uri)
        except ToolArgumentError as exc:
            text = tool_error(str(exc))
        else:
            tools = tools_for(ctx)
            text = (await anyio.to_thread.run_sync(tools.handle, "artifact_read", {"id": art})).text
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=text, mime_type="text/plain")]
        )

    return Server(
        name,
        version=version,
        instructions=(
            "Stored outputs are artifacts (ids art_…). Read them with artifact_read, search "
            "them with artifact_grep, search all of them with artifact_search, find them again "
            "with artifact_list. Every answer ends "
            "with the exact call that continues it."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


async def _run_bash(bash: Any, tool: str, args: dict[str, Any]) -> ToolResult:
    """Run a bash tool on a thread; a cancelled request aborts the command."""
    abort = threading.Event()
    try:
        result: ToolResult = await anyio.to_thread.run_sync(
            lambda: bash.handle(tool, args, abort=abort), abandon_on_cancel=True
        )
        return result
    except anyio.get_cancelled_exc_class():
        abort.set()
        raise


def principal_of(ctx: Any) -> Any:
    """The principal the HTTP transport authenticated for this request."""
    request = getattr(ctx, "request", None)
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    principal = state.get(PRINCIPAL_KEY)
    if principal is None:
        raise PermissionError("this request carries no authenticated caller")
    return principal


# -- stdio ---------------------------------------------------------------------------


def serve_stdio(tools: ArtifactTools, bash: Any) -> None:
    """Serve one agent over stdin/stdout until it disconnects."""
    from mcp.server.stdio import stdio_server

    server = build_server(lambda ctx: tools, bash=bash)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        bash.close()


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
            # Requests carry a bearer token, never cookies, so a rebound DNS name
            # gains a page nothing: the Host check would only break proxies.
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
        from overspill.api.deps import BAD_TOKEN, NO_TOKEN  # (the HTTP server's, loaded)

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
