"""Where ``overspill run`` streams an overflowing output when the store is not in
its process: a server over HTTP (``RemoteSink``), or this machine's local server
(``LocalServerSink``). Both are the executor's ``OutputSink`` and both drive the
same ``ArtifactWriter`` as the in-process store; only the seams differ:

- remote: each segment is one offset-checked ``PATCH`` append, which the server
  makes visible itself (nothing is left to publish), and ``/complete`` ends it;
- local: the bytes go from the pump's buffer straight into the blob directory
  of the home (the same files the server reads, written exclusively, 0600),
  and only the segment rows travel over the socket, one request per publish
  batch. Where the server's blobs are not local files (S3), the local sink
  falls back to the remote sink's appends over the socket.

Standard library only (plus the writer and the local blob backend, which are):
no SQLAlchemy, pydantic or HTTP library in a verb's process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from overspill.artifacts.errors import DatabaseUnavailable, OffsetConflict, OverspillError
from overspill.artifacts.writing.db_retry import PRODUCER_RETRY_S, retrying
from overspill.artifacts.writing.segments import StagedSegment, stored_account
from overspill.artifacts.writing.writer import ArtifactWriter
from overspill.artifacts.writing.writes import Ending
from overspill.shell.results import ArtifactRef
from overspill.shell.sink import SinkStream, WriterStream

from .wire import Unreachable, WireClient


def _new_output(
    stream: str, source: dict[str, Any], session_id: str | None, max_bytes: int | None
) -> dict[str, Any]:
    """The body that makes a command's output artifact (the fields that are set)."""
    body = {
        "kind": "output",
        "name": f"{source.get('tool', 'bash')} {stream}",
        "session_id": session_id,
        "source": source,
        "max_bytes": max_bytes,
    }
    return {k: v for k, v in body.items() if v is not None}


class _ServedStream(WriterStream):
    """One stream's artifact in a server: reported as the server has it."""

    def __init__(self, client: WireClient, writer: ArtifactWriter, publisher: Any = None) -> None:
        super().__init__(writer)
        self._client = client
        self._publisher = publisher  # one that kept the artifact as its end left it

    @property
    def _final_info(self) -> dict[str, Any] | None:
        info: dict[str, Any] | None = getattr(self._publisher, "info", None)
        return info

    def close(
        self, source_update: dict[str, Any], total_bytes: int | None = None
    ) -> tuple[ArtifactRef, str | None]:
        result = self._writer.close(source_update=source_update, total=total_bytes)
        try:
            info = self._final_info or self._client.json("GET", f"/v1/artifacts/{result.id}")
        except OverspillError as exc:
            state, error = result.state, result.error or exc.message
            if isinstance(exc, Unreachable) and state != "complete":
                # The server went away mid-run: what it published stays, and the
                # artifact ends incomplete when its lease lapses. Say so as it is.
                state = "incomplete"
                error = (
                    f"the server stopped while the output was stored ({exc.message}); "
                    f"{result.size_bytes} of {result.total_bytes} bytes were stored"
                )
            ref = ArtifactRef(
                id=result.id,
                state=state,
                size_bytes=result.size_bytes,
                total_bytes=result.total_bytes,
                sha256=None,
            )
            return ref, error
        ref = ArtifactRef(
            id=info["id"],
            state=info["state"],
            size_bytes=info["size_bytes"],
            # What the command printed, where the server saw less of it arrive.
            total_bytes=max(info["total_bytes"], result.total_bytes),
            sha256=info["sha256"],
        )
        if result.disk_full is not None:
            # The server may have published part of the append it refused: its
            # row, read after the writer stopped, has the count.
            return ref, stored_account(result.disk_full, ref.size_bytes, ref.total_bytes)
        return ref, result.error or (info["error"] if info["state"] != "complete" else None)


class HttpAppends:
    """A writer's stager and publisher over HTTP: each segment an append at its
    offset (a retry after a lost answer can never duplicate or drop bytes), the
    lease renewed by an empty append, the end recorded by ``/complete``."""

    def __init__(self, client: WireClient, artifact_id: str) -> None:
        self._client = client
        self._id = artifact_id
        self.size = 0

    def stage(self, offset: int, data: memoryview) -> str | None:
        """One append, retried while the server's database is briefly away. A
        retry of an append the server stored (in part) while its answer was lost
        meets an offset conflict at the stored size: only the rest is sent."""
        body = bytes(data)

        def append() -> None:
            nonlocal offset, body
            try:
                info = self._client.json(
                    "PATCH",
                    f"/v1/artifacts/{self._id}/content",
                    params={"offset": offset},
                    body=body,
                )
            except OffsetConflict as exc:
                stored = exc.current_size - offset
                if not 0 < stored <= len(body):
                    raise
                offset, body = exc.current_size, body[stored:]
                if body:
                    raise DatabaseUnavailable("the rest of a retried append") from exc
                self.size = exc.current_size
                return
            self.size = int(info["size_bytes"])

        retrying(append, PRODUCER_RETRY_S)
        return None  # the server made them visible

    def discard(self, staged: Sequence[StagedSegment]) -> None:
        pass  # each append was stored (or refused) by the server as a whole

    def publish(self, staged: Sequence[StagedSegment]) -> tuple[int, str | None]:
        return 0, None

    def renew(self) -> None:
        self._client.json(
            "PATCH", f"/v1/artifacts/{self._id}/content", params={"offset": self.size}, body=b""
        )

    def finish(self, ending: Ending) -> None:
        # /complete's "error" marks an upload failed; a quota stop is not a failure
        # (the stored prefix stands, and the total beyond it makes it capped).
        body: dict[str, Any] = {"source": ending.source_update or {}, "total_bytes": ending.total}
        if ending.error and ending.state == "failed":
            body["error"] = ending.error[:2000]
        self._client.json("POST", f"/v1/artifacts/{self._id}/complete", json_body=body)


class RemoteSink:
    """The executor's sink over HTTP: an executor in a sandbox needs only a URL
    and a token (or, on this machine, the local server's socket)."""

    def __init__(
        self,
        client: WireClient | Any,
        *,
        session_id: str | None = None,
        max_bytes: int | None = None,
        segment_bytes: int = 4 * 1024 * 1024,
        flush_interval_s: float = 1.0,
    ) -> None:
        # A WireClient, or a typed OverspillClient (whose wire client is ``http``).
        self._client: WireClient = getattr(client, "http", client)
        self._session_id = session_id
        self._max_bytes = max_bytes
        self._segment_bytes = segment_bytes
        self._flush_interval = flush_interval_s

    def open(self, *, stream: str, source: dict[str, Any]) -> SinkStream:
        # A connection of the stream's own: stdout's and stderr's writers run at once.
        client = self._client.with_headers({})
        body = _new_output(stream, source, self._session_id, self._max_bytes)
        # (A retry after a lost answer may leave an empty artifact behind: its
        # lease runs out and the sweep ends it.)
        info = retrying(
            lambda: client.json("POST", "/v1/artifacts", json_body=body), PRODUCER_RETRY_S
        )
        appends = HttpAppends(client, info["id"])
        writer = ArtifactWriter(
            info["id"],
            appends,
            stager=appends,
            max_bytes=info["max_bytes"],
            segment_bytes=self._segment_bytes,
            flush_interval=self._flush_interval,
            lease_seconds=15.0,
            retry_s=PRODUCER_RETRY_S,
        )
        return _ServedStream(client, writer)


class SocketPublisher:
    """A writer's publisher on the local server: the segment rows (and the end)
    go over the socket; the bytes are already in the blob directory."""

    def __init__(self, client: WireClient, artifact_id: str, lease: str) -> None:
        self._client = client
        self._id = artifact_id
        self._lease = lease
        self.info: dict[str, Any] | None = None  # the artifact as the end left it

    def publish(self, staged: Sequence[StagedSegment]) -> tuple[int, str | None]:
        answer = self._client.json(
            "POST",
            f"/v1/local/writers/{self._id}/publish",
            json_body={"lease": self._lease, "segments": [_segment(s) for s in staged]},
        )
        return int(answer["published"]), answer.get("stop")

    def renew(self) -> None:
        self._client.json(
            "POST", f"/v1/local/writers/{self._id}/renew", json_body={"lease": self._lease}
        )

    def finish(self, ending: Ending) -> None:
        self.finish_with([], ending)

    def finish_with(self, last: Sequence[StagedSegment], ending: Ending) -> int:
        body = {
            "lease": self._lease,
            "segments": [_segment(s) for s in last],
            "state": ending.state,
            "total_bytes": ending.total,
            "sha256": ending.sha256,
            "error": ending.error[:2000] if ending.error else None,
            "source": ending.source_update or {},
        }
        answer = self._client.json("POST", f"/v1/local/writers/{self._id}/finish", json_body=body)
        self.info = answer["artifact"]
        return int(answer["published"])


def _segment(seg: StagedSegment) -> dict[str, Any]:
    return {
        "offset": seg.offset,
        "size": seg.size,
        "key": seg.key,
        "newlines": seg.newlines,
        "ends_with_newline": seg.ends_with_newline,
    }


class LocalServerSink:
    """The executor's sink on this machine's local server (see the module doc)."""

    def __init__(
        self,
        client: WireClient,
        *,
        session_id: str | None = None,
        max_bytes: int | None = None,
    ) -> None:
        self._client = client
        self._session_id = session_id
        self._max_bytes = max_bytes
        self._blobs: Any = None
        self._remote: RemoteSink | None = None

    def open(self, *, stream: str, source: dict[str, Any]) -> SinkStream:
        if self._remote is not None:
            return self._remote.open(stream=stream, source=source)
        client = self._client.with_headers({})  # the stream's own connection
        body = _new_output(stream, source, self._session_id, self._max_bytes)
        answer = retrying(
            lambda: client.json("POST", "/v1/local/writers", json_body=body), PRODUCER_RETRY_S
        )
        root = answer.get("blob_root")
        if root is None:  # the server's blobs are not files here: append through it
            self._remote = RemoteSink(
                self._client, session_id=self._session_id, max_bytes=self._max_bytes
            )
            client.json("DELETE", f"/v1/artifacts/{answer['artifact']['id']}")
            return self._remote.open(stream=stream, source=source)
        from overspill.artifacts.blobs.local import LocalBlobStore
        from overspill.artifacts.writing.segment_storage import BlobPlacer

        if self._blobs is None:
            self._blobs = LocalBlobStore(root)
        info = answer["artifact"]
        publisher = SocketPublisher(client, info["id"], answer["lease"])
        writer = ArtifactWriter(
            info["id"],
            publisher,
            placer=BlobPlacer(self._blobs, info["id"]),
            max_bytes=info["max_bytes"],
            segment_bytes=answer["segment_bytes"],
            flush_interval=answer["flush_interval_s"],
            lease_seconds=answer["lease_seconds"],
            stall_s=answer["stall_s"],
            retry_s=PRODUCER_RETRY_S,
        )
        return _ServedStream(client, writer, publisher)
