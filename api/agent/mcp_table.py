"""What both MCP transports serve, on the standard library alone: the tools as
MCP lists them (title, annotations, the result-size hint), the resource
template, the server's instructions and the shape of a tool's result.

A result is one text block and nothing else. Driven for real, Claude Code 2.1
and Codex 0.171 hand the model a result's ``structuredContent`` *instead of* its
text when both are present, so the model saw ``{"start":8,"end":14,...}`` where
overspill's answer said what it shows and how to continue. The text holds every
fact (the window, what is not shown, whether the whole output is stored, the
next call), so no structured copy is sent and no ``outputSchema`` is declared.
"""

from __future__ import annotations

from typing import Any

from overspill.api.agent.harnesses import Budget
from overspill.api.agent.tools.schemas import BASH_DEFINITIONS, SAVE_DEFINITION, tool_definitions

INSTRUCTIONS = (
    "Stored outputs are artifacts (ids art_…). Read them with artifact_read, search them "
    "with artifact_grep, search all of them with artifact_search, find them again with "
    "artifact_list. Every answer ends with the exact call that continues it."
)

RESOURCE_TEMPLATE = {
    "uriTemplate": "artifact://{id}{?offset,length,start_line,line_count,tail}",
    "name": "artifact",
    "title": "A stored output",
    "description": (
        "A bounded window of a stored output, as artifact_read answers it: a byte window "
        "(offset, length), a line window (start_line, line_count) or the last lines (tail); "
        "the start of the output when none is given. The text says what it shows and ends "
        "with the call that continues it."
    ),
    "mimeType": "text/plain",
}

BASH_TOOLS = frozenset(d["name"] for d in BASH_DEFINITIONS)


def mcp_tool(definition: dict[str, Any], budget: Budget) -> dict[str, Any]:
    """One tool of the table as MCP lists it."""
    return {
        "name": definition["name"],
        "title": definition["title"],
        "description": definition["description"],
        "inputSchema": definition["input_schema"],
        "annotations": {"title": definition["title"], **definition["annotations"]},
        # Claude Code spills a result longer than this hint into a temp file of its
        # own; an answer here is already bounded and says how to continue.
        "_meta": {"anthropic/maxResultSizeChars": budget.answer_bytes},
    }


def tool_list(budget: Budget, *, bash: bool) -> list[dict[str, Any]]:
    """The tools served to a client with ``budget`` (``bash`` only over stdio: a
    server never runs commands for a remote caller)."""
    table = (BASH_DEFINITIONS if bash else []) + tool_definitions(budget.read_bytes)
    return [mcp_tool(d, budget) for d in [*table, SAVE_DEFINITION]]


# -- the two protocol eras -----------------------------------------------------------------

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The revisions whose ``initialize`` handshake is spoken (newest last)."""
MODERN_VERSIONS = ("2026-07-28",)
"""The revisions without a handshake: ``server/discover`` and, on every request,
the protocol version and the client's capabilities in ``params._meta``."""
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
CACHEABLE = frozenset(
    {
        "server/discover",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
"""Methods whose 2026-07-28 result carries caching hints (none is cached: ttlMs 0)."""

CAPABILITIES = {
    "tools": {"listChanged": False},
    "resources": {"subscribe": False, "listChanged": False},
}


def modern_envelope(params: Any) -> bool:
    """Whether a request carries the 2026-07-28 envelope (its version key)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and VERSION_KEY in meta


def discover_result(instructions: str) -> dict[str, Any]:
    """``server/discover`` (2026-07-28): the versions spoken and what is served."""
    return {
        "supportedVersions": list(MODERN_VERSIONS),
        "capabilities": CAPABILITIES,
        "instructions": instructions,
    }


def modern_result(
    method: str, result: dict[str, Any], server_info: dict[str, Any]
) -> dict[str, Any]:
    """A result as the 2026-07-28 wire wants it: ``resultType``, caching hints
    where the method's result is cacheable, the server named in ``_meta``."""
    shaped = dict(result)
    if method in CACHEABLE:
        shaped.setdefault("ttlMs", 0)
        shaped.setdefault("cacheScope", "private")
    shaped.setdefault("resultType", "complete")
    shaped["_meta"] = {**shaped.get("_meta", {}), SERVER_INFO_KEY: server_info}
    return shaped


def tool_result(text: str, is_error: bool) -> dict[str, Any]:
    """A ``tools/call`` result: the text block alone (see the module doc)."""
    return {"content": [{"type": "text", "text": text}], "isError": is_error}
