"""``/v1/admin``: tokens and usage. Every route needs an admin token (403 otherwise)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from api.deps import AdminDep, StoreDep
from api.errors import RESPONSES, ErrorBody
from artifacts.records import Role
from artifacts.tokens import IssuedToken, TokenInfo

router = APIRouter(
    prefix="/v1/admin",
    tags=["admin"],
    responses={**RESPONSES, 403: {"model": ErrorBody, "description": "Not an admin token"}},
)


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    principal: str = Field(
        ...,
        min_length=1,
        max_length=200,
        pattern=r"^\S+$",
        description="e.g. agent:ci-bot or user:alice",
    )
    role: Role = "agent"
    label: str | None = Field(None, max_length=200)
    expires_in_s: int | None = Field(None, gt=0, le=10 * 365 * 86400)


class UsageRow(BaseModel):
    owner: str
    bytes: int
    artifacts: int
    by_state: dict[str, dict[str, int]]


@router.get("/usage", response_model=list[UsageRow])
def usage(store: StoreDep, admin: AdminDep) -> list[dict[str, Any]]:
    """Bytes and artifact counts by owner and state."""
    return list(store.usage(admin))


@router.get("/tokens", response_model=list[TokenInfo])
def list_tokens(store: StoreDep, admin: AdminDep) -> list[TokenInfo]:
    """Every token (never the secret: only its hash is stored)."""
    return store.tokens.list()


@router.post("/tokens", response_model=IssuedToken, status_code=201)
def create_token(body: TokenCreate, store: StoreDep, admin: AdminDep) -> IssuedToken:
    """Issue a token. The secret is in this response only."""
    return store.tokens.create(
        body.principal,
        body.role,
        label=body.label,
        expires_in_s=body.expires_in_s,
        created_by=admin.name,
    )


@router.delete("/tokens/{token_id}", response_model=TokenInfo)
def revoke_token(token_id: str, store: StoreDep, admin: AdminDep) -> TokenInfo:
    """Revoke a token; it stops working at once."""
    return store.tokens.revoke(token_id)
