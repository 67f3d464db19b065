"""The ``/v1`` API as Python calls on a ``WireClient``, answers as decoded JSON.

One method per route, written once: the CLI uses the answers as they come (no
pydantic in a verb's process), and ``OverspillClient`` validates the same
answers into the store's records for Python callers and the model tools.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a verb builds its parser before it knows it will talk to anyone
    from .wire import WireClient

JSON = dict[str, Any]


def _art(artifact_id: str) -> str:
    from .wire import quote

    return f"/v1/artifacts/{quote(artifact_id)}"


class ApiCalls:
    def __init__(self, client: WireClient) -> None:
        self.http = client

    # -- artifacts ---------------------------------------------------------------------

    def create(self, **fields: Any) -> JSON:
        body = {k: v for k, v in fields.items() if v is not None}
        answer: JSON = self.http.json("POST", "/v1/artifacts", json_body=body)
        return answer

    def upload(self, artifact_id: str, chunks: Iterable[bytes], *, complete: bool = True) -> JSON:
        answer: JSON = self.http.json(
            "PUT", f"{_art(artifact_id)}/content", params={"complete": complete}, body=chunks
        )
        return answer

    def append(self, artifact_id: str, offset: int, data: bytes) -> JSON:
        answer: JSON = self.http.json(
            "PATCH", f"{_art(artifact_id)}/content", params={"offset": offset}, body=data
        )
        return answer

    def complete(self, artifact_id: str, **body: Any) -> JSON:
        answer: JSON = self.http.json("POST", f"{_art(artifact_id)}/complete", json_body=body)
        return answer

    def save_result(self, chunks: Iterable[bytes], params: dict[str, Any]) -> JSON:
        query = dict(params)
        if query.get("source"):
            query["source"] = json.dumps(query["source"])
        else:
            query.pop("source", None)
        answer: JSON = self.http.json("POST", "/v1/results", params=query, body=chunks)
        return answer

    def get(self, artifact_id: str) -> JSON:
        answer: JSON = self.http.json("GET", _art(artifact_id))
        return answer

    def list(self, params: dict[str, Any]) -> JSON:
        answer: JSON = self.http.json("GET", "/v1/artifacts", params=params)
        return answer

    def delete(self, artifact_id: str) -> JSON:
        answer: JSON = self.http.json("DELETE", _art(artifact_id))
        return answer

    def pin(self, artifact_id: str, reason: str | None = None) -> JSON:
        answer: JSON = self.http.json(
            "PUT", f"{_art(artifact_id)}/pin", json_body={"reason": reason}
        )
        return answer

    def unpin(self, artifact_id: str) -> JSON:
        answer: JSON = self.http.json("DELETE", f"{_art(artifact_id)}/pin")
        return answer

    def set_retention(self, artifact_id: str, retention: int | str | None) -> JSON:
        answer: JSON = self.http.json(
            "PATCH", _art(artifact_id), json_body={"retention": retention}
        )
        return answer

    def content(
        self, artifact_id: str, start: int = 0, end: int | None = None, *, follow: bool = False
    ) -> Iterator[bytes]:
        """Bytes [start, end) (end exclusive; None: to the end), streamed."""
        headers = {}
        if start or end is not None:
            headers["Range"] = f"bytes={start}-{'' if end is None else end - 1}"
        return self.http.stream(
            "GET",
            f"{_art(artifact_id)}/content",
            params={"follow": True} if follow else None,
            headers=headers,
        )

    def text(self, artifact_id: str, params: dict[str, Any]) -> JSON:
        answer: JSON = self.http.json("GET", f"{_art(artifact_id)}/text", params=params)
        return answer

    def lines(self, artifact_id: str, params: dict[str, Any]) -> JSON:
        answer: JSON = self.http.json("GET", f"{_art(artifact_id)}/lines", params=params)
        return answer

    def tail(self, artifact_id: str, params: dict[str, Any]) -> JSON:
        answer: JSON = self.http.json("GET", f"{_art(artifact_id)}/tail", params=params)
        return answer

    def grep(self, artifact_id: str, params: dict[str, Any]) -> bytes:
        """The grep page as JSON bytes (validated straight from them by the typed
        client: parsing into dicts first cost as much again)."""
        return self.http.request("GET", f"{_art(artifact_id)}/grep", params=params).read()

    def grep_lines(self, artifact_id: str, params: dict[str, Any]) -> Iterator[bytes]:
        """``grep -n`` rows streamed as stored bytes, then a NUL and the JSON status."""
        return self.http.stream("GET", f"{_art(artifact_id)}/grep/lines", params=params)

    def search(self, params: dict[str, Any]) -> bytes:
        return self.http.request("GET", "/v1/search", params=params).read()

    # -- admin -------------------------------------------------------------------------

    # -- the context ledger --------------------------------------------------------------

    def stats(self, params: dict[str, Any]) -> JSON:
        answer: JSON = self.http.json("GET", "/v1/stats", params=params)
        return answer

    def reads(self, artifact_id: str) -> builtins.list[JSON]:
        answer: builtins.list[JSON] = self.http.json("GET", f"{_art(artifact_id)}/reads")
        return answer

    def usage(self) -> builtins.list[JSON]:
        answer: builtins.list[JSON] = self.http.json("GET", "/v1/admin/usage")
        return answer

    def create_token(self, **body: Any) -> JSON:
        answer: JSON = self.http.json(
            "POST", "/v1/admin/tokens", json_body={k: v for k, v in body.items() if v is not None}
        )
        return answer

    def list_tokens(self) -> builtins.list[JSON]:
        answer: builtins.list[JSON] = self.http.json("GET", "/v1/admin/tokens")
        return answer

    def revoke_token(self, token_id: str) -> JSON:
        from .wire import quote

        answer: JSON = self.http.json("DELETE", f"/v1/admin/tokens/{quote(token_id)}")
        return answer

    def get_policy(self, owner: str | None = None) -> JSON:
        answer: JSON = self.http.json("GET", _policy_path(owner))
        return answer

    def set_policy(self, owner: str | None, body: dict[str, Any]) -> JSON:
        answer: JSON = self.http.json("PUT", _policy_path(owner), json_body=body)
        return answer

    def preview_policy(self, owner: str | None, body: dict[str, Any]) -> JSON:
        answer: JSON = self.http.json(
            "POST", "/v1/admin/retention/preview", json_body={**body, "owner": owner}
        )
        return answer

    def cleanup(self, *, dry_run: bool) -> JSON:
        answer: JSON = self.http.json("POST", "/v1/admin/cleanup", json_body={"dry_run": dry_run})
        return answer

    def scrub(self, **body: Any) -> JSON:
        answer: JSON = self.http.json("POST", "/v1/admin/scrub", json_body=body)
        return answer

    def audit(self, **filters: Any) -> builtins.list[JSON]:
        answer: builtins.list[JSON] = self.http.json("GET", "/v1/admin/audit", params=filters)
        return answer


def _policy_path(owner: str | None) -> str:
    from .wire import quote

    if owner is None:
        return "/v1/admin/retention"
    return f"/v1/admin/retention/owners/{quote(owner, b':@')}"
