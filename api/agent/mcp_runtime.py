"""What a tool call of ``overspill mcp`` needs (settings, the store or a server,
the executor), built once per process, on a thread, after the handshake: the
store, pydantic and the executor cost ~0.7 s of imports that the handshake must
not wait for (``api.agent.mcp_stdio``)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from overspill.api.agent.harnesses import Budget
from overspill.api.agent.mcp_table import BASH_TOOLS

if TYPE_CHECKING:
    from overspill.api.agent.tools.handlers import ToolResult
    from overspill.api.settings import Settings


class Runtime:
    """What a tool call needs (settings, the store or a server, the executor),
    built once, on a thread, after the handshake."""

    def __init__(self, settings: Settings, budget: Budget) -> None:
        from overspill.api.agent.bash_tools import BashTools
        from overspill.api.agent.result_saver import saver_for
        from overspill.api.agent.tools.handlers import ArtifactTools
        from overspill.shell import Executor
        from overspill.shell.redact.policy import Redaction
        from overspill.shell.sink import OutputSink

        client, shell = settings.client, settings.shell
        redaction = Redaction.from_settings(shell)
        # A harness starts one server per conversation: where it names none, the
        # conversation is this process (artifact_list shows its outputs first).
        session = client.session_id or process_session()
        backend: Any
        sink: OutputSink
        if client.url:
            from overspill.api.client.http import OverspillClient

            remote = OverspillClient(client.url, client.token)
            backend = remote
            sink = remote.sink(session_id=session, max_bytes=shell.stream_max_bytes)
        else:
            from overspill.api.cleanup import BackgroundCompactor, PeriodicSweeper
            from overspill.api.client.in_process import InProcessClient, redaction_for
            from overspill.artifacts.records import Principal
            from overspill.artifacts.store import ArtifactStore
            from overspill.shell import StoreSink

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
        from overspill.shell import DeferredSink

        # Behind a spool: storage that is slow or stuck never holds a command's pipe.
        direct = sink
        sink = DeferredSink(lambda: direct)
        saver = saver_for(backend, shell, session_id=session, redaction=redaction)
        self.tools = ArtifactTools(
            backend,
            max_chars=budget.read_bytes,
            max_lines=budget.read_lines,
            session_id=session,
            saver=saver,
            failure_patterns=shell.failure_patterns,
        )
        windows = budget.stream_windows(shell.max_output_bytes)
        shell = shell.replace(max_output_bytes=windows.stderr, redact=redaction.enabled)
        self.bash = BashTools(
            Executor(shell, sink),
            stdout_window=windows.stdout,
            max_lines=budget.bash_lines,
        )

    def call(self, name: str, arguments: object, abort: threading.Event) -> ToolResult:
        if name in BASH_TOOLS:
            return self.bash.handle(name, arguments, abort=abort)
        return self.tools.handle(name, arguments)

    def read_resource(self, uri: str) -> str:
        from overspill.api.agent.tools.arguments import ToolArgumentError
        from overspill.api.agent.tools.resources import read_arguments
        from overspill.shell.wording import tool_error

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
