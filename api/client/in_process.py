"""What the model tools and the result saver talk to: the store in this process
(``LocalBackend``), or a server (``api.client.OverspillClient``), through one
Protocol, so every tool is written once and works both ways."""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable, Iterator
from typing import Protocol

from overspill.api.results import SavedResult, SaveRequest, save_stream
from overspill.artifacts.follow import Backoff
from overspill.artifacts.queries import GrepQuery, LineQuery, ListQuery, SearchQuery
from overspill.artifacts.records import (
    ArtifactInfo,
    ArtifactPage,
    GrepResult,
    LineWindow,
    Principal,
    SearchResult,
    TailWindow,
    TextWindow,
)
from overspill.artifacts.store import ArtifactStore
from overspill.shell.redact.policy import Redaction


def redaction_for(store: ArtifactStore, base: Redaction, owner: str) -> Redaction:
    """``base`` (the settings' redaction) for one owner's writes: off only where
    the setting is off and an admin's policy lets this owner's output be stored
    unmasked."""
    if base.enabled:
        return base  # the common case asks the database nothing
    return base.for_owner(store.policies.effective(owner).redact is False)


class Backend(Protocol):
    def get(self, artifact_id: str) -> ArtifactInfo: ...
    def list(self, query: ListQuery) -> ArtifactPage: ...
    def iter_content(
        self, artifact_id: str, start: int = 0, end: int | None = None, *, follow: bool = False
    ) -> Iterator[bytes]: ...
    def text(self, artifact_id: str, offset: int = 0, limit: int = 65536) -> TextWindow: ...
    def lines(self, artifact_id: str, query: LineQuery) -> LineWindow: ...
    def tail(
        self,
        artifact_id: str,
        *,
        lines: int | None = None,
        nbytes: int | None = None,
        max_bytes: int | None = None,
    ) -> TailWindow: ...
    def grep(self, artifact_id: str, query: GrepQuery) -> GrepResult: ...
    def search(self, query: SearchQuery) -> SearchResult: ...
    def save_result(self, chunks: Iterable[bytes], request: SaveRequest) -> SavedResult: ...


class LocalBackend:
    """``redaction``: how a saved result is masked (the settings' own, resolved by
    whoever builds this backend for the principal)."""

    def __init__(
        self, store: ArtifactStore, principal: Principal, *, redaction: Redaction | None = None
    ) -> None:
        self.store = store
        self.principal = principal
        self.redaction = redaction if redaction is not None else Redaction()

    def get(self, artifact_id: str) -> ArtifactInfo:
        return self.store.get(self.principal, artifact_id)

    def list(self, query: ListQuery) -> ArtifactPage:
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

    def text(self, artifact_id: str, offset: int = 0, limit: int = 65536) -> TextWindow:
        return self.store.text(self.principal, artifact_id, offset, limit)

    def lines(self, artifact_id: str, query: LineQuery) -> LineWindow:
        return self.store.lines(self.principal, artifact_id, query)

    def tail(
        self,
        artifact_id: str,
        *,
        lines: int | None = None,
        nbytes: int | None = None,
        max_bytes: int | None = None,
    ) -> TailWindow:
        return self.store.tail(
            self.principal, artifact_id, lines=lines, nbytes=nbytes, max_bytes=max_bytes
        )

    def grep(self, artifact_id: str, query: GrepQuery) -> GrepResult:
        return self.store.grep(self.principal, artifact_id, query)

    def search(self, query: SearchQuery) -> SearchResult:
        return self.store.search(self.principal, query)

    def save_result(self, chunks: Iterable[bytes], request: SaveRequest) -> SavedResult:
        return save_stream(
            lambda: request.open_writer(self.store, self.principal),
            self.get,
            chunks,
            budget=request.budget,
            redaction=self.redaction,
        )


__all__ = ["Backend", "LocalBackend", "builtins"]
