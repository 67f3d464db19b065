"""What the CLI and the model tools talk to: the local store, or a server.

``LocalBackend`` gives the store the same method names and shapes as
``OverspillClient``, so every verb is written once and works both ways.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from overspill.api.saved import SavedResult, SaveRequest, save_stream
from overspill.artifacts.audit import AuditEntry
from overspill.artifacts.follow import Backoff
from overspill.artifacts.policies import PolicySpec, PolicyView, Preview
from overspill.artifacts.queries import GrepQuery, LineQuery, ListQuery
from overspill.artifacts.records import (
    ArtifactInfo,
    ArtifactPage,
    GrepResult,
    LineWindow,
    Principal,
    TailWindow,
    TextWindow,
)
from overspill.artifacts.retention import GLOBAL
from overspill.artifacts.store import ArtifactStore
from overspill.artifacts.sweeper import SweepReport
from overspill.artifacts.tokens import IssuedToken, TokenInfo


class Backend(Protocol):
    def get(self, artifact_id: str) -> ArtifactInfo: ...
    def list(self, query: ListQuery) -> ArtifactPage: ...
    def delete(self, artifact_id: str) -> ArtifactInfo: ...
    def pin(self, artifact_id: str, reason: str | None = None) -> ArtifactInfo: ...
    def unpin(self, artifact_id: str) -> ArtifactInfo: ...
    def set_retention(self, artifact_id: str, retention: int | str | None) -> ArtifactInfo: ...
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
    def save_result(self, chunks: Iterable[bytes], request: SaveRequest) -> SavedResult: ...
    def usage(self) -> builtins.list[dict[str, Any]]: ...
    def create_token(
        self,
        principal: str,
        role: str,
        *,
        label: str | None = None,
        expires_in_s: int | None = None,
    ) -> IssuedToken: ...
    def list_tokens(self) -> builtins.list[TokenInfo]: ...
    def revoke_token(self, token_id: str) -> TokenInfo: ...
    def get_policy(self, owner: str | None = None) -> PolicyView: ...
    def set_policy(
        self, spec: PolicySpec, owner: str | None = None, *, apply_to_existing: bool = False
    ) -> tuple[PolicyView, int]: ...
    def preview_policy(self, spec: PolicySpec, owner: str | None = None) -> Preview: ...
    def cleanup(self, *, dry_run: bool) -> SweepReport: ...
    def audit(self, **filters: Any) -> builtins.list[AuditEntry]: ...


class LocalBackend:
    def __init__(self, store: ArtifactStore, principal: Principal) -> None:
        self.store = store
        self.principal = principal

    def get(self, artifact_id: str) -> ArtifactInfo:
        return self.store.get(self.principal, artifact_id)

    def list(self, query: ListQuery) -> ArtifactPage:
        return self.store.list(self.principal, query, with_total=True)

    def delete(self, artifact_id: str) -> ArtifactInfo:
        return self.store.delete(self.principal, artifact_id)

    def pin(self, artifact_id: str, reason: str | None = None) -> ArtifactInfo:
        return self.store.pin(self.principal, artifact_id, reason)

    def unpin(self, artifact_id: str) -> ArtifactInfo:
        return self.store.unpin(self.principal, artifact_id)

    def set_retention(self, artifact_id: str, retention: int | str | None) -> ArtifactInfo:
        return self.store.set_retention(self.principal, artifact_id, retention)  # type: ignore[arg-type]

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

    def save_result(self, chunks: Iterable[bytes], request: SaveRequest) -> SavedResult:
        return save_stream(
            lambda: request.open_writer(self.store, self.principal),
            self.get,
            chunks,
            budget=request.budget,
        )

    def usage(self) -> builtins.list[dict[str, Any]]:
        return list(self.store.usage(self.principal))

    def create_token(
        self,
        principal: str,
        role: str,
        *,
        label: str | None = None,
        expires_in_s: int | None = None,
    ) -> IssuedToken:
        return self.store.tokens.create(
            principal, role, label=label, expires_in_s=expires_in_s, created_by=self.principal.name
        )

    def list_tokens(self) -> builtins.list[TokenInfo]:
        return self.store.tokens.list()

    def revoke_token(self, token_id: str) -> TokenInfo:
        return self.store.tokens.revoke(token_id, by=self.principal.name)

    def get_policy(self, owner: str | None = None) -> PolicyView:
        return self.store.policies.get(owner or GLOBAL)

    def set_policy(
        self, spec: PolicySpec, owner: str | None = None, *, apply_to_existing: bool = False
    ) -> tuple[PolicyView, int]:
        return self.store.policies.set(
            self.principal, spec, owner or GLOBAL, apply_to_existing=apply_to_existing
        )

    def preview_policy(self, spec: PolicySpec, owner: str | None = None) -> Preview:
        return self.store.policies.preview(spec, owner or GLOBAL)

    def cleanup(self, *, dry_run: bool) -> SweepReport:
        from overspill.api.cleanup import run_cleanup

        return run_cleanup(self.store, dry_run=dry_run)

    def audit(self, **filters: Any) -> builtins.list[AuditEntry]:
        return builtins.list(self.store.audit_log(**filters))
