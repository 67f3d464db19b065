"""The overspill API for Python callers: the same calls the CLI makes
(``api.client.calls`` over ``api.client.wire``), answers validated into the store's records.

Error bodies come back as the same exception classes the store raises, so a
caller (the model tools, a harness) handles a remote store exactly like a local
one. ``RemoteSink`` (``api.client.sinks``) is the executor's sink over the same client.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator
from typing import Any

from overspill.artifacts import queries as q
from overspill.artifacts import records as r
from overspill.artifacts.catalog.audit import AuditEntry
from overspill.artifacts.catalog.policies import PolicySpec, PolicyView, Preview
from overspill.artifacts.catalog.sweeper import SweepReport
from overspill.artifacts.catalog.tokens import IssuedToken, NewToken, TokenInfo
from overspill.artifacts.gc_pause import cyclic_gc_paused
from overspill.artifacts.writing.writes import NewArtifact

from ..results import SavedResult, SaveRequest
from .calls import ApiCalls
from .sinks import RemoteSink
from .wire import ClosedOnExit, Endpoint, WireClient


class OverspillClient(ClosedOnExit):
    def __init__(self, url: str, token: str | None, *, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.http = WireClient(Endpoint.parse(self.url), token=token, timeout=timeout)
        self._calls = ApiCalls(self.http)

    def close(self) -> None:
        self.http.close()

    def sink(self, *, session_id: str | None = None, max_bytes: int | None = None) -> RemoteSink:
        """The executor's sink into this server (see ``api.client.sinks.RemoteSink``)."""
        return RemoteSink(self.http, session_id=session_id, max_bytes=max_bytes)

    def put(self, chunks: Iterable[bytes], new: NewArtifact) -> r.ArtifactInfo:
        """A new artifact holding ``chunks``: created, then uploaded whole (the
        server masks secrets in it as in every write)."""
        fields = {k: v for k, v in new._asdict().items() if v is not None}
        created = self._calls.create(**fields)
        return self.upload(created["id"], chunks)

    # -- artifacts -------------------------------------------------------------------

    def create(self, **fields: Any) -> r.ArtifactInfo:
        return r.ArtifactInfo.model_validate(self._calls.create(**fields))

    def upload(
        self, artifact_id: str, chunks: Iterable[bytes], *, complete: bool = True
    ) -> r.ArtifactInfo:
        return r.ArtifactInfo.model_validate(
            self._calls.upload(artifact_id, chunks, complete=complete)
        )

    def save_result(self, chunks: Iterable[bytes], request: SaveRequest) -> SavedResult:
        """``POST /v1/results``: stream a tool's result, get its id and preview."""
        params = request.model_dump(exclude_none=True)
        return SavedResult.model_validate(self._calls.save_result(chunks, params))

    def append(self, artifact_id: str, offset: int, data: bytes) -> r.ArtifactInfo:
        return r.ArtifactInfo.model_validate(self._calls.append(artifact_id, offset, data))

    def complete(
        self,
        artifact_id: str,
        *,
        total_bytes: int | None = None,
        source: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> r.ArtifactInfo:
        body: dict[str, Any] = {"source": source or {}}
        if total_bytes is not None:
            body["total_bytes"] = total_bytes
        if error:
            body["error"] = error[:2000]
        return r.ArtifactInfo.model_validate(self._calls.complete(artifact_id, **body))

    def get(self, artifact_id: str) -> r.ArtifactInfo:
        return r.ArtifactInfo.model_validate(self._calls.get(artifact_id))

    def list(self, query: q.ListQuery) -> r.ArtifactPage:
        return r.ArtifactPage.model_validate(self._calls.list(query.params()))

    def delete(self, artifact_id: str) -> r.ArtifactInfo:
        return r.ArtifactInfo.model_validate(self._calls.delete(artifact_id))

    def pin(self, artifact_id: str, reason: str | None = None) -> r.ArtifactInfo:
        return r.ArtifactInfo.model_validate(self._calls.pin(artifact_id, reason))

    def unpin(self, artifact_id: str) -> r.ArtifactInfo:
        return r.ArtifactInfo.model_validate(self._calls.unpin(artifact_id))

    def set_retention(self, artifact_id: str, retention: int | str | None) -> r.ArtifactInfo:
        return r.ArtifactInfo.model_validate(self._calls.set_retention(artifact_id, retention))

    def iter_content(
        self, artifact_id: str, start: int = 0, end: int | None = None, *, follow: bool = False
    ) -> Iterator[bytes]:
        """Stream bytes [start, end) (end exclusive; None: to the end)."""
        return self._calls.content(artifact_id, start, end, follow=follow)

    def text(self, artifact_id: str, query: q.TextQuery | None = None) -> r.TextWindow:
        params = (query or q.TextQuery()).params()
        return r.TextWindow.model_validate(self._calls.text(artifact_id, params))

    def lines(self, artifact_id: str, query: q.LineQuery) -> r.LineWindow:
        return r.LineWindow.model_validate(self._calls.lines(artifact_id, query.params()))

    def tail(self, artifact_id: str, query: q.TailQuery) -> r.TailWindow:
        return r.TailWindow.model_validate(self._calls.tail(artifact_id, query.params()))

    def grep(self, artifact_id: str, query: q.GrepQuery) -> r.GrepResult:
        raw = self._calls.grep(artifact_id, query.params())
        # Straight from the JSON bytes (parsing to dicts first cost as much again),
        # with the cycle collector paused (see artifacts.gc_pause).
        with cyclic_gc_paused():
            return r.GrepResult.model_validate_json(raw)

    def search(self, query: q.SearchQuery) -> r.SearchResult:
        return r.SearchResult.model_validate_json(self._calls.search(query.params()))

    # -- admin -----------------------------------------------------------------------

    def usage(self) -> builtins.list[dict[str, Any]]:
        return self._calls.usage()

    def create_token(self, new: NewToken) -> IssuedToken:
        return IssuedToken.model_validate(self._calls.create_token(**new.model_dump()))

    def list_tokens(self) -> builtins.list[TokenInfo]:
        return [TokenInfo.model_validate(t) for t in self._calls.list_tokens()]

    def revoke_token(self, token_id: str) -> TokenInfo:
        return TokenInfo.model_validate(self._calls.revoke_token(token_id))

    def get_policy(self, owner: str | None = None) -> PolicyView:
        return PolicyView.model_validate(self._calls.get_policy(owner))

    def set_policy(
        self, spec: PolicySpec, owner: str | None = None, *, apply_to_existing: bool = False
    ) -> tuple[PolicyView, int]:
        body = {**spec.model_dump(exclude_unset=True), "apply_to_existing": apply_to_existing}
        out = self._calls.set_policy(owner, body)
        return PolicyView.model_validate(out["policy"]), int(out["updated_artifacts"])

    def preview_policy(self, spec: PolicySpec, owner: str | None = None) -> Preview:
        return Preview.model_validate(
            self._calls.preview_policy(owner, spec.model_dump(exclude_unset=True))
        )

    def cleanup(self, *, dry_run: bool) -> SweepReport:
        return SweepReport.model_validate(self._calls.cleanup(dry_run=dry_run))

    def audit(self, **filters: Any) -> builtins.list[AuditEntry]:
        return [AuditEntry.model_validate(e) for e in self._calls.audit(**filters)]


__all__ = ["OverspillClient", "RemoteSink"]
