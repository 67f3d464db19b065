"""Where a command's overflowing output goes from a process that is not the
server (``overspill run``, a harness's shell through ``overspill-shell``),
decided once: a server's appends (``OVERSPILL_URL``), this home's local server
(the default: bytes straight into the home's blob directory, rows over the
socket), or the store opened in this process (``OVERSPILL_LOCAL_SERVER=off``,
or a local server that cannot start). Whichever it is, it is built on a
background thread at the first overflow (``DeferredSink``), so neither a
connection nor a server's start ever holds the command's pipe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from overspill.shell.deferred import DeferredSink
from overspill.shell.sink import OutputSink

if TYPE_CHECKING:
    from ..settings import Settings


def output_sink(settings: Settings, warn: Callable[[str], None]) -> DeferredSink:
    """The sink for this process's settings; ``warn`` says why a choice fell back."""
    c = settings.client
    max_bytes = settings.shell.stream_max_bytes

    def build() -> OutputSink:
        from overspill.artifacts.writing.db_retry import PRODUCER_RETRY_S, retrying

        starting = False  # a local server is starting, and sweeps once it is up

        if c.url:
            from .sinks import RemoteSink
            from .wire import Endpoint, WireClient

            client = WireClient(Endpoint.parse(c.url), token=c.token, timeout=300)
            return RemoteSink(client, session_id=c.session_id, max_bytes=max_bytes)
        if c.local_server:
            from .local_server import LocalServer, LocalServerUnavailable, ServerStarting
            from .sinks import LocalServerSink

            try:
                # A server that is not up is started for the commands that follow;
                # this one stores from its own process meanwhile. (One that could
                # not be reached because the database was away for a moment -- a
                # restart -- is tried again.)
                served = retrying(
                    lambda: LocalServer(settings).client(c.owner, "admin", wait=False),
                    PRODUCER_RETRY_S,
                )
            except ServerStarting:
                starting = True
            except LocalServerUnavailable as exc:
                warn(f"{exc.message}; storing from this process instead")
            else:
                return LocalServerSink(served, session_id=c.session_id, max_bytes=max_bytes)
        from overspill.artifacts.records import Principal
        from overspill.artifacts.store import ArtifactStore
        from overspill.shell import StoreSink

        from ..cleanup import sweep_soon

        store = retrying(lambda: ArtifactStore.open(settings.store), PRODUCER_RETRY_S)
        if not starting:
            sweep_soon(store, settings.shell, settings.server.sweep_interval_s)
        return StoreSink(
            store,
            Principal(name=c.owner, role="agent"),
            session_id=c.session_id,
            max_bytes=max_bytes,
        )

    return DeferredSink(build)
