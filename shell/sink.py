"""Where a stream's full copy goes once it overflows. The executor sees only this
protocol, so an in-process store and a remote server are interchangeable."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from overspill.artifacts.errors import OverspillError
from overspill.artifacts.records import Principal
from overspill.shell.results import ArtifactRef

if TYPE_CHECKING:  # imported when the first stream overflows, not before
    from overspill.artifacts.store import ArtifactStore
    from overspill.artifacts.writer import ArtifactWriter


class SinkStream(Protocol):
    @property
    def artifact_id(self) -> str: ...

    def write(self, data: bytes | memoryview) -> None:
        """Append bytes (copy them if kept: ``data`` may be a reused buffer); raise
        OverspillError (or OSError) if they cannot be stored."""
        ...

    def close(self, source_update: dict[str, Any]) -> tuple[ArtifactRef, str | None]:
        """Finish the artifact, recording how the command ended. Never raises:
        returns the artifact as stored and the storage error, if any."""
        ...


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
        writer = self._get_store().open_writer(
            self._principal,
            kind="output",
            name=f"{source.get('tool', 'bash')} {stream}",
            session_id=self._session_id,
            source=source,
            max_bytes=self._max_bytes,
        )
        return _WriterStream(writer)


class _WriterStream:
    def __init__(self, writer: ArtifactWriter) -> None:
        self._writer = writer

    @property
    def artifact_id(self) -> str:
        return self._writer.id

    def write(self, data: bytes | memoryview) -> None:
        self._writer.write(data)

    def close(self, source_update: dict[str, Any]) -> tuple[ArtifactRef, str | None]:
        try:
            result = self._writer.close(source_update=source_update)
        except OverspillError as exc:  # close never should, but never let it escape
            return ArtifactRef(
                id=self._writer.id,
                state="failed",
                size_bytes=0,
                total_bytes=self._writer.total_bytes,
                sha256=None,
            ), exc.message
        ref = ArtifactRef(
            id=result.id,
            state=result.state,
            size_bytes=result.size_bytes,
            total_bytes=result.total_bytes,
            sha256=result.sha256,
        )
        return ref, result.error
