"""The client interface (``api.client.api.StoreClient``) over the store in this
process: each call is the store's, as the principal this client acts for."""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable, Iterator

from overspill.artifacts import queries as q
from overspill.artifacts import records as r
from overspill.artifacts.reading.follow import Backoff
from overspill.artifacts.store import ArtifactStore
from overspill.artifacts.writing.writes import NewArtifact
from overspill.shell.redact.policy import Redaction, masked, what_was_masked
from overspill.shell.sink import OutputSink

from ..results import SavedResult, SaveRequest, save_stream


def redaction_for(store: ArtifactStore, base: Redaction, owner: str) -> Redaction:
    """``base`` (the settings' redaction) for one owner's writes: off only where
    the setting is off and an admin's policy lets this owner's output be stored
    unmasked."""
    if base.enabled:
        return base  # the common case asks the database nothing
    return base.for_owner(store.policies.effective(owner).redact is False)


class InProcessClient:
    """``redaction``: how a saved result is masked (the settings' own, resolved by
    whoever builds this backend for the principal)."""

    def __init__(
        self, store: ArtifactStore, principal: r.Principal, *, redaction: Redaction | None = None
    ) -> None:
        self.store = store
        self.principal = principal
        self.redaction = redaction if redaction is not None else Redaction()

    def get(self, artifact_id: str) -> r.ArtifactInfo:
        return self.store.get(self.principal, artifact_id)

    def list(self, query: q.ListQuery) -> r.ArtifactPage:
        return self.store.list(self.principal, query, with_total=True)

    def iter_content(
        self, artifact_id: str, start: int = 0, end: int | None = None, *, follow: bool = False
    ) -> Iterator[bytes]:
        if follow:
            return self._follow(artifact_id, start, end)
        _, content = self.store.open_content(self.principal, artifact_id)
        return content.iter_range(start, content.size if end is None else end)

    def _follow(self, artifact_id: str, start: int, end: int | None) -> Iterator[bytes]:
        """Bytes as they are stored, until the writer finishes (or ``end``)."""
        pos, backoff = start, Backoff()
        while True:
            info, content = self.store.open_content(self.principal, artifact_id)
            stop = content.size if end is None else min(end, content.size)
            if stop > pos:
                for chunk in content.iter_range(pos, stop):
                    pos += len(chunk)
                    yield chunk
                backoff.reset()
            elif info.complete or (end is not None and pos >= end):
                return
            else:
                time.sleep(backoff.next_wait())

    def text(self, artifact_id: str, query: q.TextQuery | None = None) -> r.TextWindow:
        return self.store.text(self.principal, artifact_id, query)

    def lines(self, artifact_id: str, query: q.LineQuery) -> r.LineWindow:
        return self.store.lines(self.principal, artifact_id, query)

    def tail(self, artifact_id: str, query: q.TailQuery) -> r.TailWindow:
        return self.store.tail(self.principal, artifact_id, query)

    def grep(self, artifact_id: str, query: q.GrepQuery) -> r.GrepResult:
        return self.store.grep(self.principal, artifact_id, query)

    def search(self, query: q.SearchQuery) -> r.SearchResult:
        return self.store.search(self.principal, query)

    def put(self, chunks: Iterable[bytes], new: NewArtifact) -> r.ArtifactInfo:
        redactor = self.redaction.redactor()
        writer = self.store.open_writer(self.principal, new)
        try:
            for piece in masked(chunks, redactor):
                writer.write(piece)
        except BaseException:
            writer.close(state="incomplete", error="the upload stopped before its end")
            raise
        result = writer.close(source_update=what_was_masked(redactor))
        return self.get(result.id)

    def sink(self, *, session_id: str | None = None, max_bytes: int | None = None) -> OutputSink:
        from overspill.shell.sink import StoreSink

        return StoreSink(self.store, self.principal, session_id=session_id, max_bytes=max_bytes)

    def delete(self, artifact_id: str) -> r.ArtifactInfo:
        return self.store.delete(self.principal, artifact_id)

    def pin(self, artifact_id: str, reason: str | None = None) -> r.ArtifactInfo:
        return self.store.pin(self.principal, artifact_id, reason=reason)

    def unpin(self, artifact_id: str) -> r.ArtifactInfo:
        return self.store.unpin(self.principal, artifact_id)

    def set_retention(self, artifact_id: str, retention: int | str | None) -> r.ArtifactInfo:
        return self.store.set_retention(self.principal, artifact_id, retention)  # type: ignore[arg-type]

    def save_result(self, chunks: Iterable[bytes], request: SaveRequest) -> SavedResult:
        return save_stream(
            lambda: request.open_writer(self.store, self.principal),
            self.get,
            chunks,
            budget=request.budget,
            redaction=self.redaction,
        )


__all__ = ["InProcessClient", "builtins"]
