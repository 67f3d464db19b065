"""HTTP client for the overspill API, and the executor's remote sink.

Error bodies come back as the same exception classes the store raises, so a caller
(the CLI, the model tools) handles a remote store exactly like a local one.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

import httpx

from overspill.api.saved import SavedResult, SaveRequest
from overspill.artifacts.audit import AuditEntry
from overspill.artifacts.errors import (
    Conflict,
    Gone,
    InvalidArgument,
    InvalidRange,
    NotFound,
    OffsetConflict,
    OverspillError,
    PermissionDenied,
    QuotaExceeded,
    StorageUnavailable,
)
from overspill.artifacts.gc_pause import cyclic_gc_paused
from overspill.artifacts.policies import PolicySpec, PolicyView, Preview
from overspill.artifacts.queries import GrepQuery, LineQuery, ListQuery
from overspill.artifacts.records import (
    ArtifactInfo,
    ArtifactPage,
    GrepResult,
    LineWindow,
    TailWindow,
    TextWindow,
)
from overspill.artifacts.sweeper import SweepReport
from overspill.artifacts.tokens import IssuedToken, TokenInfo
from overspill.artifacts.writer import ArtifactWriter, StagedSegment
from overspill.shell.results import ArtifactRef

# Each store error carries its own code; the HTTP layer adds a few of its own.
_BY_CODE: dict[str, type[OverspillError]] = {
    **{
        cls.code: cls
        for cls in (
            NotFound,
            InvalidArgument,
            InvalidRange,
            Conflict,
            QuotaExceeded,
            PermissionDenied,
            StorageUnavailable,
        )
    },
    "invalid_request": InvalidArgument,
    "range_not_satisfiable": InvalidRange,
    "forbidden": PermissionDenied,
    "unauthorized": PermissionDenied,
}


class OverspillClient:
    def __init__(
        self,
        url: str,
        token: str | None,
        *,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OverspillClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- plumbing --------------------------------------------------------------------

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise StorageUnavailable(f"overspill server {self.url} unreachable: {exc}") from None
        if response.status_code >= 400:
            raise _error(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._request(method, path, **kwargs).json()

    # -- artifacts -------------------------------------------------------------------

    def create(self, **fields: Any) -> ArtifactInfo:
        body = {k: v for k, v in fields.items() if v is not None}
        return ArtifactInfo.model_validate(self._json("POST", "/v1/artifacts", json=body))

    def upload(
        self, artifact_id: str, chunks: Iterable[bytes], *, complete: bool = True
    ) -> ArtifactInfo:
        return ArtifactInfo.model_validate(
            self._json(
                "PUT",
                f"/v1/artifacts/{artifact_id}/content",
                content=_iter(chunks),
                params={"complete": str(complete).lower()},
            )
        )

    def save_result(self, chunks: Iterable[bytes], request: SaveRequest) -> SavedResult:
        """``POST /v1/results``: stream a tool's result, get its id and preview."""
        params = request.model_dump(exclude_none=True, exclude={"source"})
        if request.source:
            params["source"] = json.dumps(request.source)
        return SavedResult.model_validate(
            self._json("POST", "/v1/results", content=_iter(chunks), params=params)
        )

    def append(self, artifact_id: str, offset: int, data: bytes) -> ArtifactInfo:
        return ArtifactInfo.model_validate(
            self._json(
                "PATCH",
                f"/v1/artifacts/{artifact_id}/content",
                content=data,
                params={"offset": offset},
            )
        )

    def complete(
        self,
        artifact_id: str,
        *,
        total_bytes: int | None = None,
        source: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> ArtifactInfo:
        body: dict[str, Any] = {"source": source or {}}
        if total_bytes is not None:
            body["total_bytes"] = total_bytes
        if error:
            body["error"] = error[:2000]
        return ArtifactInfo.model_validate(
            self._json("POST", f"/v1/artifacts/{artifact_id}/complete", json=body)
        )

    def get(self, artifact_id: str) -> ArtifactInfo:
        return ArtifactInfo.model_validate(self._json("GET", f"/v1/artifacts/{artifact_id}"))

    def list(self, query: ListQuery) -> ArtifactPage:
        params = {k: _param(v) for k, v in query.params().items()}
        return ArtifactPage.model_validate(self._json("GET", "/v1/artifacts", params=params))

    def delete(self, artifact_id: str) -> ArtifactInfo:
        return ArtifactInfo.model_validate(self._json("DELETE", f"/v1/artifacts/{artifact_id}"))

    def pin(self, artifact_id: str, reason: str | None = None) -> ArtifactInfo:
        return ArtifactInfo.model_validate(
            self._json("PUT", f"/v1/artifacts/{artifact_id}/pin", json={"reason": reason})
        )

    def unpin(self, artifact_id: str) -> ArtifactInfo:
        return ArtifactInfo.model_validate(self._json("DELETE", f"/v1/artifacts/{artifact_id}/pin"))

    def set_retention(self, artifact_id: str, retention: int | str | None) -> ArtifactInfo:
        return ArtifactInfo.model_validate(
            self._json("PATCH", f"/v1/artifacts/{artifact_id}", json={"retention": retention})
        )

    def iter_content(
        self, artifact_id: str, start: int = 0, end: int | None = None, *, follow: bool = False
    ) -> Iterator[bytes]:
        """Stream bytes [start, end) (end exclusive; None: to the end)."""
        headers = {}
        if start or end is not None:
            headers["Range"] = f"bytes={start}-{'' if end is None else end - 1}"
        params = {"follow": "true"} if follow else {}
        try:
            with self._http.stream(
                "GET", f"/v1/artifacts/{artifact_id}/content", headers=headers, params=params
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _error(response)
                yield from response.iter_bytes()
        except httpx.HTTPError as exc:
            raise StorageUnavailable(f"overspill server {self.url} unreachable: {exc}") from None

    def text(self, artifact_id: str, offset: int = 0, limit: int = 65536) -> TextWindow:
        return TextWindow.model_validate(
            self._json(
                "GET",
                f"/v1/artifacts/{artifact_id}/text",
                params={"offset": offset, "limit": limit},
            )
        )

    def lines(self, artifact_id: str, query: LineQuery) -> LineWindow:
        params = {k: _param(v) for k, v in query.params().items()}
        return LineWindow.model_validate(
            self._json("GET", f"/v1/artifacts/{artifact_id}/lines", params=params)
        )

    def tail(
        self,
        artifact_id: str,
        *,
        lines: int | None = None,
        nbytes: int | None = None,
        max_bytes: int | None = None,
    ) -> TailWindow:
        params = {"lines": lines} if lines is not None else {"bytes": nbytes}
        if max_bytes is not None:
            params["max_bytes"] = max_bytes
        return TailWindow.model_validate(
            self._json("GET", f"/v1/artifacts/{artifact_id}/tail", params=params)
        )

    def grep(self, artifact_id: str, query: GrepQuery) -> GrepResult:
        params = {k: _param(v) for k, v in query.params().items()}
        response = self._request(
            "GET",
            f"/v1/artifacts/{artifact_id}/grep",
            params=params,
        )
        # Straight from the JSON bytes (parsing to dicts first cost as much again),
        # with the cycle collector paused (see artifacts.gc_pause).
        with cyclic_gc_paused():
            return GrepResult.model_validate_json(response.content)

    # -- admin -----------------------------------------------------------------------

    def usage(self) -> builtins.list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._json("GET", "/v1/admin/usage")
        return result

    def create_token(
        self,
        principal: str,
        role: str,
        *,
        label: str | None = None,
        expires_in_s: int | None = None,
    ) -> IssuedToken:
        body = {"principal": principal, "role": role, "label": label, "expires_in_s": expires_in_s}
        return IssuedToken.model_validate(
            self._json(
                "POST", "/v1/admin/tokens", json={k: v for k, v in body.items() if v is not None}
            )
        )

    def list_tokens(self) -> builtins.list[TokenInfo]:
        return [TokenInfo.model_validate(t) for t in self._json("GET", "/v1/admin/tokens")]

    def revoke_token(self, token_id: str) -> TokenInfo:
        return TokenInfo.model_validate(self._json("DELETE", f"/v1/admin/tokens/{token_id}"))

    def get_policy(self, owner: str | None = None) -> PolicyView:
        path = f"/v1/admin/retention/owners/{owner}" if owner else "/v1/admin/retention"
        return PolicyView.model_validate(self._json("GET", path))

    def set_policy(
        self, spec: PolicySpec, owner: str | None = None, *, apply_to_existing: bool = False
    ) -> tuple[PolicyView, int]:
        path = f"/v1/admin/retention/owners/{owner}" if owner else "/v1/admin/retention"
        body = {**spec.model_dump(), "apply_to_existing": apply_to_existing}
        out = self._json("PUT", path, json=body)
        return PolicyView.model_validate(out["policy"]), int(out["updated_artifacts"])

    def preview_policy(self, spec: PolicySpec, owner: str | None = None) -> Preview:
        body = {**spec.model_dump(), "owner": owner}
        return Preview.model_validate(self._json("POST", "/v1/admin/retention/preview", json=body))

    def cleanup(self, *, dry_run: bool) -> SweepReport:
        return SweepReport.model_validate(
            self._json("POST", "/v1/admin/cleanup", json={"dry_run": dry_run})
        )

    def audit(self, **filters: Any) -> builtins.list[AuditEntry]:
        params = {k: v for k, v in filters.items() if v is not None}
        return [
            AuditEntry.model_validate(e)
            for e in self._json("GET", "/v1/admin/audit", params=params)
        ]


def _iter(chunks: Iterable[bytes]) -> Iterator[bytes]:
    yield from chunks


def _param(value: Any) -> Any:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _error(response: httpx.Response) -> OverspillError:
    try:
        err = response.json()["error"]
        code, message = str(err.get("code")), str(err.get("message"))
    except (ValueError, KeyError, TypeError):
        return StorageUnavailable(
            f"HTTP {response.status_code} from the server: {response.text[:200]}"
        )
    if code == "offset_conflict":
        return OffsetConflict(message, current_size=int(err.get("current_size", 0)))
    if code == "gone":
        since = err.get("since")
        return Gone(
            message,
            reason=str(err.get("reason")),
            since=datetime.fromisoformat(since) if since else None,
        )
    return _BY_CODE.get(code, OverspillError)(message)


class RemoteSink:
    """The executor's sink over HTTP: an executor in a sandbox needs only a URL and
    a token. The same ArtifactWriter as in-process does the buffering, time-based
    flushing and lease renewal; its segments become offset-checked PATCHes."""

    def __init__(
        self,
        client: OverspillClient,
        *,
        session_id: str | None = None,
        max_bytes: int | None = None,
        segment_bytes: int = 4 * 1024 * 1024,
        flush_interval_s: float = 1.0,
    ) -> None:
        self._client = client
        self._session_id = session_id
        self._max_bytes = max_bytes
        self._segment_bytes = segment_bytes
        self._flush_interval = flush_interval_s

    def open(self, *, stream: str, source: dict[str, Any]) -> _RemoteStream:
        info = self._client.create(
            kind="output",
            name=f"{source.get('tool', 'bash')} {stream}",
            session_id=self._session_id,
            source=source,
            max_bytes=self._max_bytes,
        )
        return _RemoteStream(self._client, info, self._segment_bytes, self._flush_interval)


class _RemoteStream:
    def __init__(
        self, client: OverspillClient, info: ArtifactInfo, segment_bytes: int, flush_interval: float
    ) -> None:
        self._client = client
        self._id = info.id
        self._source_update: dict[str, Any] = {}
        self._writer = ArtifactWriter(
            info.id,
            self,
            max_bytes=info.max_bytes,
            segment_bytes=segment_bytes,
            flush_interval=flush_interval,
            lease_seconds=15.0,
        )

    @property
    def artifact_id(self) -> str:
        return self._id

    # -- the writer's SegmentTarget: each segment is one offset-checked append, which
    # the server makes visible itself, so there is never anything left to publish.

    def stage(self, offset: int, data: memoryview) -> str | None:
        self._client.append(self._id, offset, bytes(data))
        return None

    def publish(self, staged: Sequence[StagedSegment]) -> tuple[int, str | None]:
        return 0, None

    def discard(self, staged: Sequence[StagedSegment]) -> None:
        pass  # each append was stored (or refused) by the server as a whole

    def renew(self) -> None:
        # An empty append at the current size renews the server-side lease.
        writer = getattr(self, "_writer", None)
        if writer is not None:
            self._client.append(self._id, writer.stored_bytes, b"")

    def finish(
        self,
        state: str,
        size: int,
        total: int,
        sha256: str | None,
        error: str | None,
        source_update: dict[str, Any] | None,
    ) -> None:
        # /complete's "error" marks an upload failed; a quota stop is not a failure
        # (the stored prefix stands, and the total beyond it makes it capped).
        self._client.complete(
            self._id,
            total_bytes=total,
            source=source_update,
            error=error if state == "failed" else None,
        )

    def write(self, data: bytes | memoryview, newlines: int | None = None) -> None:
        self._writer.write(data)  # the server counts what it stores

    def close(self, source_update: dict[str, Any]) -> tuple[ArtifactRef, str | None]:
        result = self._writer.close(source_update=source_update)
        try:
            info = self._client.get(self._id)
            ref = ArtifactRef(
                id=info.id,
                state=info.state,
                size_bytes=info.size_bytes,
                total_bytes=info.total_bytes,
                sha256=info.sha256,
            )
        except OverspillError as exc:
            ref = ArtifactRef(
                id=self._id,
                state=result.state,
                size_bytes=result.size_bytes,
                total_bytes=result.total_bytes,
                sha256=None,
            )
            return ref, result.error or exc.message
        return ref, result.error


__all__ = ["OverspillClient", "RemoteSink"]
