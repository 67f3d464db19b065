"""FastAPI dependencies: the store (built by the app factory, never at import) and
the acting principal: from the bearer token, or, on the local server's socket
(where whoever connects is the home's owner), from the principal the request
names."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool

from overspill.artifacts.errors import InvalidArgument
from overspill.artifacts.records import ROLES, Principal
from overspill.artifacts.store import ArtifactStore
from overspill.shell.redact.policy import Redaction

from ..client.in_process import redaction_for
from ..client.local_server import PRINCIPAL_HEADER, ROLE_HEADER


async def get_store(request: Request) -> ArtifactStore:
    # async: resolved on the event loop, so /readyz never waits for a worker
    # thread just to be handed the store.
    store: ArtifactStore = request.app.state.store
    return store


StoreDep = Annotated[ArtifactStore, Depends(get_store)]


NO_TOKEN = "a bearer token is required"
BAD_TOKEN = "invalid, expired or revoked token"  # /v1 and /mcp say the same


def bearer_secret(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise HTTPException(401, NO_TOKEN, {"WWW-Authenticate": "Bearer"})
    return secret.strip()


def _socket_principal(request: Request) -> Principal:
    name = request.headers.get(PRINCIPAL_HEADER) or request.app.state.local_owner
    role = request.headers.get(ROLE_HEADER, "admin")
    if role not in ROLES:
        raise InvalidArgument(f"{ROLE_HEADER}: one of {', '.join(ROLES)}, not {role[:20]!r}")
    if not 0 < len(name) <= 200 or any(c.isspace() or c == "\x00" for c in name):
        raise InvalidArgument(f"{PRINCIPAL_HEADER}: 1-200 characters without spaces")
    return Principal(name=name, role=role)  # type: ignore[arg-type]


async def get_principal(request: Request, store: StoreDep) -> Principal:
    # async, and answered from the token store's short memory when it can: a
    # principal's flood of requests (each refused with 429) must not queue every
    # other caller's behind it in the worker pool.
    if request.app.state.local:
        trusted = _socket_principal(request)
        request.state.principal = trusted
        return trusted
    secret = bearer_secret(request)
    known, principal = store.tokens.cached(secret)
    if not known:
        principal = await run_in_threadpool(store.tokens.authenticate, secret)
    if principal is None:
        raise HTTPException(
            401,
            BAD_TOKEN,
            {"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    request.state.principal = principal
    return principal


PrincipalDep = Annotated[Principal, Depends(get_principal)]


async def get_redaction(request: Request, store: StoreDep, who: PrincipalDep) -> Redaction:
    base: Redaction = request.app.state.redaction
    if base.enabled:
        return base
    return await run_in_threadpool(redaction_for, store, base, who.name)


RedactionDep = Annotated[Redaction, Depends(get_redaction)]


def content_scope(artifact_id: str) -> str:
    return f"content:{artifact_id}"


async def get_reader(
    request: Request,
    store: StoreDep,
    artifact_id: str,
    ticket: Annotated[
        str | None,
        Query(max_length=200, description="A download ticket, instead of a bearer token"),
    ] = None,
) -> Principal:
    """The bearer token's principal or, for links a browser follows without
    headers, the principal a ticket for this very artifact acts for."""
    if ticket is None or request.headers.get("authorization"):
        return await get_principal(request, store)
    principal = await run_in_threadpool(store.tokens.redeem, ticket, content_scope(artifact_id))
    if principal is None:
        raise HTTPException(401, "invalid or expired download ticket")
    return principal


ReaderDep = Annotated[Principal, Depends(get_reader)]


async def get_admin(principal: PrincipalDep) -> Principal:
    if not principal.is_admin:
        raise HTTPException(403, "this endpoint needs an admin token")
    return principal


AdminDep = Annotated[Principal, Depends(get_admin)]
