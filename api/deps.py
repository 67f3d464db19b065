"""FastAPI dependencies: the store (built by the app factory, never at import) and
the acting principal from the bearer token."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from artifacts.records import Principal
from artifacts.store import ArtifactStore


def get_store(request: Request) -> ArtifactStore:
    store: ArtifactStore = request.app.state.store
    return store


StoreDep = Annotated[ArtifactStore, Depends(get_store)]


def get_principal(request: Request, store: StoreDep) -> Principal:
    header = request.headers.get("authorization", "")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise HTTPException(401, "a bearer token is required", {"WWW-Authenticate": "Bearer"})
    principal = store.tokens.authenticate(secret.strip())
    if principal is None:
        raise HTTPException(
            401,
            "invalid, expired or revoked token",
            {"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    request.state.principal = principal
    return principal


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def get_admin(principal: PrincipalDep) -> Principal:
    if not principal.is_admin:
        raise HTTPException(403, "this endpoint needs an admin token")
    return principal


AdminDep = Annotated[Principal, Depends(get_admin)]
