"""A stand-in model endpoint on loopback that speaks a provider's API.

A harness CLI (Claude Code, Codex, Gemini CLI) is pointed at it instead of the
real provider. It answers the harness's requests from a script -- a function
that sees what the model has received so far and decides the next tool call or
the final reply -- and records every request, so a test can assert the exact
text each tool result put in front of the model.

Three dialects: Anthropic Messages (``/v1/messages``, SSE or JSON), OpenAI
Responses (``/v1/responses``, SSE) and Gemini (``:streamGenerateContent`` /
``:generateContent``). Side requests a harness makes on its own (titles, topic
checks, token counts, next-speaker checks) get a short plain answer and are not
part of the script.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """The model calls ``tool`` (its name as overspill serves it, e.g. ``artifact_read``)."""

    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """The model ends its turn with this text."""

    text: str


Action = ToolCall | Reply


@dataclass
class Turn:
    """What the script sees: the tools the harness offered and every tool result
    the model has received in this conversation, oldest first."""

    tools: list[str]
    results: list[str]


Script = Callable[[Turn], Action]


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    main: bool


@dataclass
class StandIn:
    """The endpoint; ``url`` once started. ``received`` is every tool-result text
    of the main conversation, in the order the model received them."""

    dialect: str  # "anthropic" | "openai" | "gemini"
    script: Script
    requests: list[Recorded] = field(default_factory=list)
    received: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _search_ids: set[str] = field(default_factory=set)  # the harness's own tool search
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> StandIn:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                stand_in._answer_json(self, 404, {"error": {"message": "not here"}})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                try:
                    stand_in._handle(self, body)
                except Exception as exc:  # recorded for the test, answered as a 500
                    stand_in.errors.append(f"{self.path}: {exc!r}")
                    stand_in._answer_json(self, 500, {"error": {"message": repr(exc)}})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # -- requests --------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        path = h.path
        if self.dialect == "anthropic" and "/messages" in path:
            if path.split("?")[0].endswith("/count_tokens"):
                self._record(path, body, False)
                return self._answer_json(h, 200, {"input_tokens": 100})
            tools = [t.get("name", "") for t in body.get("tools") or []]
            main = _is_main(tools)
            results = _anthropic_results(body, self._search_ids) if main else []
            return self._anthropic(h, body, self._decide(path, body, tools, results, main))
        if self.dialect == "openai" and path.split("?")[0].endswith("/responses"):
            tools = _openai_tools(body)
            main = _is_main(tools)
            results = _openai_results(body) if main else []
            return self._openai(h, self._decide(path, body, tools, results, main))
        if self.dialect == "gemini" and ("enerateContent" in path or "countTokens" in path):
            if "countTokens" in path:
                self._record(path, body, False)
                return self._answer_json(h, 200, {"totalTokens": 100})
            decls = [
                d.get("name", "")
                for t in body.get("tools") or []
                for d in t.get("functionDeclarations") or []
            ]
            config = body.get("generationConfig") or {}
            wants_json = config.get("responseMimeType") == "application/json"
            main = _is_main(decls) and not wants_json
            results = _gemini_results(body) if main else []
            if wants_json:
                self._record(path, body, False)
                action: Action = Reply(
                    json.dumps({"reasoning": "the turn is over", "next_speaker": "user"})
                )
            else:
                action = self._decide(path, body, decls, results, main)
            return self._gemini(h, path, action)
        self._record(path, body, False)
        self._answer_json(h, 404, {"error": {"message": f"no route {path}"}})

    def _record(self, path: str, body: dict[str, Any], main: bool) -> None:
        with self._lock:
            self.requests.append(Recorded(path, body, main))

    def _decide(
        self, path: str, body: dict[str, Any], tools: list[str], results: list[str], main: bool
    ) -> Action:
        self._record(path, body, main)
        if not main:
            return Reply("ok")
        with self._lock:
            self.received = list(results)
        action = self.script(Turn(tools=tools, results=results))
        if isinstance(action, ToolCall):
            try:
                name = _served_name(tools, action.tool)
            except LookupError:
                # The harness deferred the tools behind its own search (Claude Code's
                # ToolSearch, Codex's tool_search): find them first, as a model does.
                if CLAUDE_SEARCH in tools:
                    query = f"select:mcp__overspill__{action.tool}"
                    return ToolCall(CLAUDE_SEARCH, {"query": query})
                if SEARCH_TOOL in tools:
                    return ToolCall(SEARCH_TOOL, {"query": f"overspill {action.tool}"})
                raise
            return ToolCall(name, action.arguments)
        return action

    # -- dialects --------------------------------------------------------------------

    def _anthropic(self, h: BaseHTTPRequestHandler, body: dict[str, Any], action: Action) -> None:
        n = next(self._ids)
        if isinstance(action, ToolCall) and action.tool == CLAUDE_SEARCH:
            self._search_ids.add(f"toolu_{n:024d}")
        if isinstance(action, ToolCall):
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": f"toolu_{n:024d}",
                "name": action.tool,
                "input": action.arguments,
            }
            stop = "tool_use"
        else:
            block = {"type": "text", "text": action.text}
            stop = "end_turn"
        message = {
            "id": f"msg_{n:024d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "stand-in"),
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 10},
        }
        if not body.get("stream"):
            return self._answer_json(h, 200, message)
        start = dict(message, content=[], stop_reason=None)
        if block["type"] == "tool_use":
            first = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            first = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events = [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": first},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 10},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        self._answer_sse(h, events)

    def _openai(self, h: BaseHTTPRequestHandler, action: Action) -> None:
        n = next(self._ids)
        if isinstance(action, ToolCall) and action.tool == SEARCH_TOOL:
            item: dict[str, Any] = {
                "type": "tool_search_call",
                "id": f"ts_{n}",
                "call_id": f"call_{n}",
                "execution": "client",
                "arguments": action.arguments,
                "status": "completed",
            }
        elif isinstance(action, ToolCall):
            namespace, _, name = action.tool.rpartition(NAMESPACED)
            item = {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": f"call_{n}",
                "name": name,
                "arguments": json.dumps(action.arguments),
                "status": "completed",
            }
            if namespace:
                item["namespace"] = namespace
        else:
            item = {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": action.text, "annotations": []}],
            }
        # (created_at and model: the AI SDK, opencode's client, requires them.)
        response = {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": int(time.time()),
            "model": "stand-in",
            "status": "in_progress",
            "output": [],
        }
        usage = {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110,
        }
        done = dict(response, status="completed", output=[item], usage=usage)
        events: list[tuple[str | None, Any]] = [
            ("response.created", {"type": "response.created", "response": response}),
        ]
        if item["type"] == "function_call":
            # As the provider streams one: the item opened with no arguments, then
            # the arguments (opencode's client reads them from these events only).
            events.append(
                (
                    "response.output_item.added",
                    {
                        "type": "response.output_item.added",
                        "output_index": 0,
                        "item": {**item, "arguments": "", "status": "in_progress"},
                    },
                )
            )
            for kind, field in (("delta", "delta"), ("done", "arguments")):
                name = f"response.function_call_arguments.{kind}"
                events.append(
                    (
                        name,
                        {
                            "type": name,
                            "output_index": 0,
                            "item_id": item["id"],
                            field: item["arguments"],
                        },
                    )
                )
        else:
            events.append(
                (
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": 0, "item": item},
                )
            )
        events += [
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ),
            ("response.completed", {"type": "response.completed", "response": done}),
        ]
        self._answer_sse(h, events)

    def _gemini(self, h: BaseHTTPRequestHandler, path: str, action: Action) -> None:
        if isinstance(action, ToolCall):
            part: dict[str, Any] = {"functionCall": {"name": action.tool, "args": action.arguments}}
        else:
            part = {"text": action.text}
        chunk = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [part]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 100,
                "candidatesTokenCount": 10,
                "totalTokenCount": 110,
            },
            "modelVersion": "stand-in",
        }
        if "streamGenerateContent" in path:
            return self._answer_sse(h, [(None, chunk)])
        self._answer_json(h, 200, chunk)

    # -- the wire --------------------------------------------------------------------

    @staticmethod
    def _answer_json(h: BaseHTTPRequestHandler, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def _answer_sse(h: BaseHTTPRequestHandler, events: Sequence[tuple[str | None, Any]]) -> None:
        out = []
        for name, data in events:
            if name:
                out.append(f"event: {name}\n")
            out.append(f"data: {json.dumps(data)}\n\n")
        payload = "".join(out).encode()
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("cache-control", "no-cache")
        h.send_header("content-length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)


# -- what the model received, per dialect -----------------------------------------------


SHELL_TOOLS = {"Bash", "bash", "run_shell_command", "exec_command", "shell"}
"""The harnesses' own shells: a conversation that offers one is the main one
even where overspill is not installed (a run compared with one where it is)."""


def _is_main(tools: list[str]) -> bool:
    """The conversation the script drives is the one that offers overspill's tools
    (or the search that finds them), or the harness's own shell."""
    return any("artifact_read" in t for t in tools) or bool(
        {SEARCH_TOOL, CLAUDE_SEARCH, *SHELL_TOOLS} & set(tools)
    )


def _served_name(tools: list[str], tool: str) -> str:
    """The harness's name for one of overspill's tools (``mcp__overspill__bash``...);
    ``=NAME`` is the harness's own tool of that name (opencode's own shell is
    ``bash``, as overspill's is)."""
    if tool.startswith("="):
        if tool[1:] not in tools:
            raise LookupError(f"the harness offers no {tool[1:]!r} tool: {tools}")
        return tool[1:]
    ours = [t for t in tools if t.endswith(tool) and "overspill" in t]
    if ours:
        return min(ours, key=len)
    exact = [t for t in tools if t == tool]
    if exact:
        return exact[0]
    if not ours:
        ours = [t for t in tools if t.endswith("_" + tool)]
    if not ours:
        raise LookupError(f"the harness offers no {tool!r} tool: {tools}")
    return min(ours, key=len)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(c) for c in content)
    if isinstance(content, dict):
        if "text" in content:
            return str(content["text"])
        if "content" in content:
            return _text_of(content["content"])
        return json.dumps(content)
    return "" if content is None else str(content)


CLAUDE_SEARCH = "ToolSearch"


def _anthropic_results(body: dict[str, Any], search_ids: set[str]) -> list[str]:
    out = []
    for message in body.get("messages") or []:
        if message.get("role") != "user" or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in search_ids:
                out.append(_text_of(block.get("content")))
    return out


NAMESPACED = "::"


SEARCH_TOOL = "tool_search"


def _openai_tools(body: dict[str, Any]) -> list[str]:
    """Codex offers an MCP server's tools as one ``namespace`` tool holding them;
    they are named here ``namespace::tool``. Tools it deferred behind its
    ``tool_search`` count once a search has returned them."""
    names = []
    found = [
        tool
        for item in body.get("input") or []
        if item.get("type") == "tool_search_output"
        for tool in item.get("tools") or []
    ]
    for tool in [*(body.get("tools") or []), *found]:
        if tool.get("type") == "tool_search":
            names.append(SEARCH_TOOL)
        elif tool.get("type") == "namespace":
            ns = tool.get("name", "")
            names += [f"{ns}{NAMESPACED}{t.get('name', '')}" for t in tool.get("tools") or []]
        elif tool.get("name"):
            names.append(tool["name"])
    return names


def _openai_results(body: dict[str, Any]) -> list[str]:
    out = []
    for item in body.get("input") or []:
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            out.append(_text_of(output))
    return out


def _gemini_results(body: dict[str, Any]) -> list[str]:
    out = []
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            response = part.get("functionResponse")
            if response is not None:
                # Gemini CLI answers {"output": text}: the text is what the model reads.
                body = response.get("response")
                if isinstance(body, dict) and isinstance(body.get("output"), str):
                    out.append(body["output"])
                else:
                    out.append(_text_of(body))
    return out
