"""``overspill mcp``: the tools for one local agent, over MCP's stdio transport.

Newline-delimited JSON-RPC 2.0 on stdin and stdout, written here on the
standard library instead of on the SDK, because a harness starts its MCP
servers in parallel with its first model call and leaves out the tools of a
server that has not answered ``tools/list`` by then (Codex did in 6 of 8 runs
when the handshake took 1.4 s). The SDK, pydantic and the store cost ~0.7 s of
imports before the first byte; this loop answers ``initialize`` and
``tools/list`` from the static table (``api.agent.tools.schemas``) within a few
tens of milliseconds, then loads the store (``api.agent.mcp_runtime``) on a
thread while the harness is still busy with its model. The HTTP transport
(``/mcp`` on ``overspill serve``) stays on the SDK (``api.server.mcp_http``);
the tests drive this one with the SDK's clients, Python's and TypeScript's.

A result is the answer's text block alone (``api.agent.mcp_table`` says why).

Each answer is kept under the harness's own cut (``api.agent.harnesses``): Gemini CLI
replaces a result over 40,000 characters by a head and a tail of its own and
spills the rest to a temp file, which is what overspill exists to replace.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from overspill.api.agent.harnesses import Budget, budget_for
from overspill.api.agent.mcp_table import (
    CAPABILITIES,
    CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    HANDSHAKE_VERSIONS,
    INSTRUCTIONS,
    MODERN_VERSIONS,
    RESOURCE_TEMPLATE,
    VERSION_KEY,
    discover_result,
    modern_envelope,
    modern_result,
    tool_list,
    tool_result,
)
from overspill.api.version import VERSION

if TYPE_CHECKING:
    from overspill.api.agent.mcp_runtime import Runtime
    from overspill.api.settings import Settings


def initialize_request(client: str, version: str = "1") -> dict[str, Any]:
    """The request an MCP client opens with (``overspill install``'s check, the
    benchmark and the tests speak to this server as a harness does)."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": client, "version": version},
        },
    }


# JSON-RPC error codes (the specification's, and MCP's for a missing resource).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
UNSUPPORTED_PROTOCOL_VERSION = -32022  # (2026-07-28)
SERVER_INFO = {"name": "overspill", "title": "overspill", "version": VERSION}


class StdioServer:
    """The JSON-RPC loop. Requests other than tool calls and resource reads are
    answered on the reading thread from static data; each call runs on a thread
    of its own, so a long ``bash`` never delays a ``ping`` or a cancellation.

    Both eras of the protocol are spoken, as the SDK's servers speak them: the
    client's first request decides the connection's, once. ``initialize`` opens
    the handshake era (2025-11-25 and earlier); a request whose ``params._meta``
    carries the protocol version opens the 2026-07-28 one, where every request
    brings its version and the client's capabilities (checked on each), there is
    no handshake (``server/discover`` says what is served) and every result has
    its ``resultType``. A request of the other era is refused with the reason."""

    def __init__(
        self,
        make_runtime: Callable[[Budget], Runtime],
        out: IO[bytes],
        *,
        configured_budget: int | None = None,
    ) -> None:
        self._make_runtime = make_runtime
        self._out = out
        self._write_lock = threading.Lock()
        self._configured = configured_budget
        self._budget = budget_for(None, configured_budget)
        self._runtime: Runtime | None = None
        self._runtime_error: BaseException | None = None
        self._runtime_ready = threading.Event()
        self._runtime_started = False
        self._start_lock = threading.Lock()
        self._calls: dict[Any, threading.Event] = {}
        self._cancelled: set[Any] = set()
        self._calls_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._modern: bool | None = None  # the connection's era, once a request decided it

    # -- the loop ----------------------------------------------------------------------

    def serve(self, stream: IO[bytes]) -> None:
        try:
            for raw in stream:
                line = raw.strip()
                if line:
                    self._receive(line)
        finally:
            self._shutdown()

    def _receive(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError as exc:
            self._send_error(None, PARSE_ERROR, f"not JSON: {exc}")
            return
        for one in message if isinstance(message, list) else [message]:
            self._dispatch(one)

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._send_error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
            return
        method = message.get("method")
        has_id = "id" in message
        ident = message.get("id")
        params = message.get("params") or {}
        if method is None:
            return  # a response to a request of ours: this server sends none
        if not isinstance(params, dict):
            if has_id:
                self._send_error(ident, INVALID_PARAMS, "params must be an object")
            return
        if not has_id:
            self._notification(method, params)
            return
        if self._modern is None:
            self._modern = method != "initialize" and modern_envelope(params)
        if self._modern:
            refused = self._refused_modern(method, params)
            if refused is not None:
                self._send_error(ident, *refused)
                return
            self._budget_from(params["_meta"].get(CLIENT_INFO_KEY))
        elif modern_envelope(params) and method != "initialize":
            self._send_error(
                ident,
                INVALID_REQUEST,
                "this connection opened with the initialize handshake; requests carrying "
                "the 2026-07-28 envelope are not accepted on it",
            )
            return
        handler: Callable[[dict[str, Any]], dict[str, Any]] | None = {
            "initialize": self._initialize,
            "server/discover": lambda p: discover_result(INSTRUCTIONS),
            "ping": lambda p: {},
            "tools/list": lambda p: {"tools": tool_list(self._budget, bash=True)},
            "resources/list": lambda p: {"resources": []},
            "resources/templates/list": lambda p: {"resourceTemplates": [RESOURCE_TEMPLATE]},
        }.get(method)
        if method == "server/discover" and not self._modern:
            handler = None  # a 2026-07-28 method: not part of the handshake era
        if handler is not None:
            self._send_result(ident, handler(params), method)
            if method == "tools/list":
                self._warm_up()
        elif method in ("tools/call", "resources/read"):
            self._start_call(ident, method, params)
        else:
            self._send_error(ident, METHOD_NOT_FOUND, f"this server has no method {method!r}")

    def _refused_modern(self, method: str, params: dict[str, Any]) -> tuple[int, str, Any] | None:
        """Why a request on a 2026-07-28 connection is refused (None: it is not)."""
        if method == "initialize":
            asked = params.get("protocolVersion")
            data = {"supported": list(MODERN_VERSIONS), "requested": asked}
            return (
                UNSUPPORTED_PROTOCOL_VERSION,
                "this connection serves the 2026-07-28 protocol: no initialize handshake",
                data,
            )
        meta = params.get("_meta")
        if not isinstance(meta, dict):
            return (INVALID_PARAMS, f"params._meta must carry {VERSION_KEY!r}", None)
        missing = [k for k in (VERSION_KEY, CAPABILITIES_KEY) if k not in meta]
        if missing:
            return (INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}", None)
        version = meta[VERSION_KEY]
        if not isinstance(version, str):
            return (INVALID_PARAMS, f"{VERSION_KEY} must be a string", None)
        if version not in MODERN_VERSIONS:
            data = {"supported": list(MODERN_VERSIONS), "requested": version}
            return (UNSUPPORTED_PROTOCOL_VERSION, f"protocol version {version} is not served", data)
        return None

    def _budget_from(self, client: object) -> None:
        """The answer budget for the client a request names (2026-07-28: each may)."""
        name = client.get("name") if isinstance(client, dict) else None
        if isinstance(name, str):
            self._budget = budget_for(name, self._configured)

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        client = params.get("clientInfo") or {}
        name = client.get("name") if isinstance(client, dict) else None
        self._budget = budget_for(name if isinstance(name, str) else None, self._configured)
        asked = params.get("protocolVersion")
        version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
        return {
            "protocolVersion": version,
            "capabilities": CAPABILITIES,
            "serverInfo": SERVER_INFO,
            "instructions": INSTRUCTIONS,
        }

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/cancelled":
            with self._calls_lock:
                abort = self._calls.get(params.get("requestId"))
                if abort is not None:
                    self._cancelled.add(params.get("requestId"))
            if abort is not None:
                abort.set()

    # -- calls -------------------------------------------------------------------------

    def _warm_up(self) -> None:
        """Build the runtime now, on a thread, so the first call finds it ready."""
        with self._start_lock:
            if self._runtime_started:
                return
            self._runtime_started = True
        threading.Thread(target=self._build_runtime, name="mcp-runtime", daemon=True).start()

    def _build_runtime(self) -> None:
        try:
            self._runtime = self._make_runtime(self._budget)
        except BaseException as exc:  # reported to every call, not raised on a thread
            self._runtime_error = exc
        finally:
            self._runtime_ready.set()

    def _start_call(self, ident: Any, method: str, params: dict[str, Any]) -> None:
        abort = threading.Event()
        with self._calls_lock:
            self._calls[ident] = abort
        thread = threading.Thread(
            target=self._run_call, args=(ident, method, params, abort), daemon=True
        )
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _run_call(
        self, ident: Any, method: str, params: dict[str, Any], abort: threading.Event
    ) -> None:
        try:
            self._warm_up()
            self._runtime_ready.wait()
            if self._runtime is None:
                raise RuntimeError(f"overspill could not start: {self._runtime_error}")
            if method == "resources/read":
                uri = params.get("uri")
                if not isinstance(uri, str):
                    self._send_error(ident, INVALID_PARAMS, "resources/read needs a 'uri' string")
                    return
                text = self._runtime.read_resource(uri)
                answer: dict[str, Any] = {
                    "contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]
                }
            else:
                name = params.get("name")
                if not isinstance(name, str):
                    self._send_error(ident, INVALID_PARAMS, "tools/call needs a 'name' string")
                    return
                result = self._runtime.call(name, params.get("arguments"), abort)
                answer = tool_result(result.text, result.is_error)
            with self._calls_lock:
                cancelled = ident in self._cancelled
            if not cancelled:  # a cancelled request gets no answer (the spec's rule)
                self._send_result(ident, answer, method)
        except Exception as exc:
            self._send_error(ident, INTERNAL_ERROR, str(exc) or type(exc).__name__)
        finally:
            with self._calls_lock:
                self._calls.pop(ident, None)
                self._cancelled.discard(ident)

    def _shutdown(self) -> None:
        """stdin ended: stop every command still running (its answer still goes
        out, saying how it ended, if anyone reads), let the reads finish."""
        with self._calls_lock:
            for abort in self._calls.values():
                abort.set()
        if self._runtime_started:
            self._runtime_ready.wait(timeout=30)
        if self._runtime is not None:
            self._runtime.close()
        for thread in self._threads:
            thread.join(timeout=10)

    # -- the wire ----------------------------------------------------------------------

    def _send_result(self, ident: Any, result: dict[str, Any], method: str = "") -> None:
        if self._modern:
            result = modern_result(method, result, SERVER_INFO)
        self._send({"jsonrpc": "2.0", "id": ident, "result": result})

    def _send_error(self, ident: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send({"jsonrpc": "2.0", "id": ident, "error": error})

    def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        with self._write_lock:
            try:
                self._out.write(data)
                self._out.flush()
            except (BrokenPipeError, ValueError):
                pass  # the agent is gone; the loop ends at its EOF


def serve(settings: Settings) -> None:
    """Serve one agent on this process's stdin and stdout until it disconnects.

    The protocol owns the real stdout: anything else that prints (a library's
    warning) goes to stderr, where a harness logs it."""
    out = sys.stdout.buffer
    sys.stdout = sys.stderr
    from overspill.api.agent.mcp_runtime import Runtime

    server = StdioServer(
        lambda budget: Runtime(settings, budget),
        out,
        configured_budget=settings.client.answer_budget,
    )
    server.serve(sys.stdin.buffer)
