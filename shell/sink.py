"""Where a stream's full copy goes once it overflows. The executor sees only this
protocol, so an in-process store and a remote server are interchangeable."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from overspill.artifacts.errors import OverspillError

from .results import ArtifactRef

if TYPE_CHECKING:  # imported when the first stream overflows, not before
    from overspill.artifacts.records import Principal
    from overspill.artifacts.store import ArtifactStore
    from overspill.artifacts.writing.writer import ArtifactWriter

MiB = 1024 * 1024


def failure_reason(exc: BaseException) -> str:
    """The one line a storage failure is reported as (an OverspillError's message)."""
    return getattr(exc, "message", None) or str(exc) or type(exc).__name__


class SinkStream(Protocol):
    @property
    def artifact_id(self) -> str | None:
        """The artifact's id (None only when it could not be created at all)."""
        ...

    def write(self, data: bytes | memoryview, newlines: int | None = None) -> None:
        """Append bytes (copy them if kept: ``data`` may be a reused buffer); raise
        OverspillError (or OSError) if they cannot be stored. ``newlines`` is the
        count in ``data`` when the caller has it (so it is not counted twice)."""
        ...

    def close(
        self, source_update: dict[str, Any], total_bytes: int | None = None
    ) -> tuple[ArtifactRef | None, str | None]:
        """Finish the artifact, recording how the command ended and how many bytes
        the stream had in all (``total_bytes``: more than were written means some
        never arrived, and the artifact is not called complete). Never raises:
        returns the artifact as stored (None if none was ever created) and the
        storage error, if any."""
        ...

    def progress(self) -> int:
        """A count that grows while storing makes headway (bytes handed on or
        stored); read without waiting, from any thread."""
        ...

    def known_id(self) -> str | None:
        """The artifact's id if it exists already (never waits)."""
        ...

    def would_wait(self, n: int) -> bool:
        """Whether writing ``n`` bytes now would wait for storage."""
        ...


END_QUIET_S = 2.0
"""How long a stream's storage may make no headway once its command has ended
before the result goes without it (a hung object store, a stuck server)."""

OPEN_QUIET_S = 10.0
"""The same while its storage is still opening and no artifact exists yet: the
store imported and connected in this process, or the home's local server
started, for the first overflow -- a second unloaded, several on a loaded
machine, with nothing to count as headway while a module imports."""


def close_bounded(
    stream: SinkStream,
    source_update: dict[str, Any],
    total_bytes: int | None,
    quiet_s: float = END_QUIET_S,
    open_quiet_s: float = OPEN_QUIET_S,
) -> tuple[ArtifactRef | None, str | None]:
    """``stream.close``, waited for while it makes headway and for at most
    ``quiet_s`` seconds without any (``open_quiet_s`` while no artifact exists
    yet): storage that is stuck costs the command's result that long, not the
    client library's timeouts and retries. What is
    stuck goes on in the background; the artifact it leaves ``writing`` is ended
    by the sweep when its lease runs out."""
    done: list[tuple[ArtifactRef | None, str | None]] = []
    closer = threading.Thread(
        target=lambda: done.append(stream.close(source_update, total_bytes)),
        name="sink-close",
        daemon=True,
    )
    closer.start()
    seen, quiet_since = stream.progress(), time.monotonic()
    while True:
        closer.join(0.05)
        if done:
            return done[0]
        now = stream.progress()
        limit = quiet_s if stream.known_id() is not None else max(quiet_s, open_quiet_s)
        if now != seen:
            seen, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since >= limit:
            break
    art = stream.known_id()
    stuck = f"storage made no headway for {limit:g} s after the command ended"
    if art is None:
        return None, f"{stuck}: the artifact was never made"
    return ArtifactRef(art, "failed", 0, total_bytes or 0, None), (
        f"{stuck}; the result went without it (the bytes stored so far stay readable; "
        "the sweep ends the artifact)"
    )


class OutputSink(Protocol):
    def open(self, *, stream: str, source: dict[str, Any]) -> SinkStream:
        """Create the artifact for one stream; raise OverspillError if impossible."""
        ...


class StoreSink:
    """Streams into an ArtifactStore in this process. The store is opened on the
    first overflow only, so commands that never overflow never touch storage."""

    def __init__(
        self,
        store: ArtifactStore | Callable[[], ArtifactStore],
        principal: Principal,
        *,
        session_id: str | None = None,
        max_bytes: int | None = None,
    ) -> None:
        self._store = store
        self._principal = principal
        self._session_id = session_id
        self._max_bytes = max_bytes

    def _get_store(self) -> ArtifactStore:
        if callable(self._store):
            self._store = self._store()
        return self._store

    def open(self, *, stream: str, source: dict[str, Any]) -> SinkStream:
        from overspill.artifacts.writing.db_retry import PRODUCER_RETRY_S, retrying

        store = self._get_store()
        writer = retrying(
            lambda: store.open_writer(
                self._principal,
                kind="output",
                name=f"{source.get('tool', 'bash')} {stream}",
                session_id=self._session_id,
                source=source,
                max_bytes=self._max_bytes,
            ),
            PRODUCER_RETRY_S,
        )
        writer.retry_s = PRODUCER_RETRY_S  # a command's writer rides out a restart
        return WriterStream(writer)


class WriterStream:
    """One stream's artifact over an ``ArtifactWriter``; how it is reported when
    done is ``close``'s (a remote sink asks the server, see ``api.client.sinks``)."""

    def __init__(self, writer: ArtifactWriter) -> None:
        self._writer = writer

    @property
    def artifact_id(self) -> str:
        return self._writer.id

    def write(self, data: bytes | memoryview, newlines: int | None = None) -> None:
        self._writer.write(data, newlines)

    def progress(self) -> int:
        from overspill.artifacts.headway import notes

        # (A write retried through a database that is briefly away is headway.)
        return self._writer.progress + notes()

    def known_id(self) -> str:
        return self._writer.id

    def would_wait(self, n: int) -> bool:
        return self._writer.would_wait(n)

    def close(
        self, source_update: dict[str, Any], total_bytes: int | None = None
    ) -> tuple[ArtifactRef, str | None]:
        try:
            result = self._writer.close(source_update=source_update, total=total_bytes)
        except OverspillError as exc:  # close never should, but never let it escape
            failed = ArtifactRef(self._writer.id, "failed", 0, self._writer.total_bytes, None)
            return failed, exc.message
        ref = ArtifactRef(
            result.id, result.state, result.size_bytes, result.total_bytes, result.sha256
        )
        return ref, result.error
