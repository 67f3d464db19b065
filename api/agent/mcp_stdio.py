"""``overspill mcp``: the tools for one local agent, over MCP's stdio transport.

Newline-delimited JSON-RPC 2.0 on stdin and stdout, written here on the
standard library instead of on the SDK, because a harness starts its MCP
servers in parallel with its first model call and leaves out the tools of a
server that has not answered ``tools/list`` by then (Codex did in 6 of 8 runs
when the handshake took 1.4 s). The SDK, pydantic and the store cost ~0.7 s of
imports before the first byte; this loop answers ``initialize`` and
``tools/list`` from the static table (``api.tools.schemas``) within a few tens
of milliseconds, then loads the store on a thread while the harness is still
busy with its model. The HTTP transport (``/mcp`` on ``overspill serve``) stays
on the SDK (``api.mcp_server``); the tests drive this one with the SDK's client.

A result is the answer's text block alone (``api.mcp_table`` says why).

Each answer is kept under the harness's own cut (``api.harnesses``): Gemini CLI
replaces a result over 40,000 characters by a head and a tail of its own and
spills the rest to a temp file, which is what overspill exists to replace.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from ..version import VERSION
from .harnesses import Budget, budget_for
from .mcp_table import (
    BASH_TOOLS,
    INSTRUCTIONS,
    RESOURCE_TEMPLATE,
    tool_list,
    tool_result,
)

if TYPE_CHECKING:
    from ..settings import Settings
    from .tools.handlers import ToolResult

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The revisions whose initialize handshake this server speaks (newest last)."""


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


class Runtime:
    """What a tool call needs (settings, the store or a server, the executor),
    built once, on a thread, after the handshake."""

    def __init__(self, settings: Settings, budget: Budget) -> None:
        from overspill.shell import Executor
        from overspill.shell.redact.policy import Redaction
        from overspill.shell.sink import OutputSink

        from .bash_tools import BashTools
        from .result_saver import saver_for
        from .tools.handlers import ArtifactTools

        client, shell = settings.client, settings.shell
        redaction = Redaction.from_settings(shell)
        # A harness starts one server per conversation: where it names none, the
        # conversation is this process (artifact_list shows its outputs first).
        session = client.session_id or process_session()
        backend: Any
        sink: OutputSink
        if client.url:
            from ..client.http import OverspillClient

            remote = OverspillClient(client.url, client.token)
            backend = remote
            sink = remote.sink(session_id=session, max_bytes=shell.stream_max_bytes)
        else:
            from overspill.artifacts.records import Principal
            from overspill.artifacts.store import ArtifactStore
            from overspill.shell import StoreSink

            from ..cleanup import BackgroundCompactor, PeriodicSweeper
            from ..client.in_process import InProcessClient, redaction_for

            # The store lives in this process for the whole session, for the reads
            # and for what ``bash`` stores: no local server is started, so nothing
            # outlives the agent's session. An agent sees its own artifacts only.
            store = ArtifactStore.open(settings.store)
            redaction = redaction_for(store, redaction, client.owner)
            if settings.server.sweep_interval_s > 0:
                PeriodicSweeper(store, shell, settings.server.sweep_interval_s).start()
            BackgroundCompactor(store).start()
            agent = Principal(name=client.owner, role="agent")
            backend = InProcessClient(store, agent, redaction=redaction)
            sink = StoreSink(store, agent, session_id=session, max_bytes=shell.stream_max_bytes)
        saver = saver_for(backend, shell, session_id=session, redaction=redaction)
        self.tools = ArtifactTools(
            backend, max_chars=budget.read_bytes, session_id=session, saver=saver
        )
        windows = budget.stream_windows(shell.max_output_bytes)
        shell = shell.replace(max_output_bytes=windows.stderr, redact=redaction.enabled)
        self.bash = BashTools(
            Executor(shell, sink),
            stdout_window=windows.stdout,
        )

    def call(self, name: str, arguments: object, abort: threading.Event) -> ToolResult:
        if name in BASH_TOOLS:
            return self.bash.handle(name, arguments, abort=abort)
        return self.tools.handle(name, arguments)

    def read_resource(self, uri: str) -> str:
        from overspill.shell.wording import tool_error

        from .tools.arguments import ToolArgumentError
        from .tools.resources import read_arguments

        try:
            arguments = read_arguments(uri)
        except ToolArgumentError as exc:
            return tool_error(str(exc))
        return self.tools.handle("artifact_read", arguments).text

    def close(self) -> None:
        self.bash.close()


def process_session() -> str:
    """A session id for this server process: its start time and pid."""
    import os
    import time

    return f"mcp-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}"


class StdioServer:
    """The JSON-RPC loop. Requests other than tool calls and resource reads are
    answered on the reading thread from static data; each call runs on a thread
    of its own, so a long ``bash`` never delays a ``ping`` or a cancellation."""

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
        handler: Callable[[dict[str, Any]], dict[str, Any]] | None = {
            "initialize": self._initialize,
            "ping": lambda p: {},
            "tools/list": lambda p: {"tools": tool_list(self._budget, bash=True)},
            "resources/list": lambda p: {"resources": []},
            "resources/templates/list": lambda p: {"resourceTemplates": [RESOURCE_TEMPLATE]},
        }.get(method)
        if handler is not None:
            self._send_result(ident, handler(params))
            if method == "tools/list":
                self._warm_up()
        elif method in ("tools/call", "resources/read"):
            self._start_call(ident, method, params)
        else:
            self._send_error(ident, METHOD_NOT_FOUND, f"this server has no method {method!r}")

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        client = params.get("clientInfo") or {}
        name = client.get("name") if isinstance(client, dict) else None
        self._budget = budget_for(name if isinstance(name, str) else None, self._configured)
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
        return {
            "protocolVersion": version,
            "capabilities": {
                "tools": {"listChanged": False},
                "resources": {"subscribe": False, "listChanged": False},
            },
            "serverInfo": {"name": "overspill", "title": "overspill", "version": VERSION},
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
                self._send_result(ident, answer)
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

    def _send_result(self, ident: Any, result: dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "id": ident, "result": result})

    def _send_error(self, ident: Any, code: int, message: str) -> None:
        self._send({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})

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
    server = StdioServer(
        lambda budget: Runtime(settings, budget),
        out,
        configured_budget=settings.client.answer_budget,
    )
    server.serve(sys.stdin.buffer)
