"""``/v1/admin``: tokens, usage, retention policies, cleanup and the audit log. Every route needs an admin token (403 otherwise)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from overspill.artifacts.bounds import MAX_OFFSET
from overspill.artifacts.catalog.audit import AuditEntry
from overspill.artifacts.catalog.policies import PolicySpec, PolicyView, Preview
from overspill.artifacts.catalog.retention import GLOBAL
from overspill.artifacts.catalog.sweeper import SweepReport
from overspill.artifacts.catalog.tokens import IssuedToken, NewToken, TokenInfo
from overspill.artifacts.errors import InvalidArgument

from ...cleanup import run_cleanup
from ...scrub import ScrubReport, scrub_page
from ..deps import AdminDep, StoreDep
from ..errors import RESPONSES, ErrorBody

router = APIRouter(
    prefix="/v1/admin",
    tags=["admin"],
    responses={**RESPONSES, 403: {"model": ErrorBody, "description": "Not an admin token"}},
)


_OWNER_SHAPE = re.compile(r"[^\s\x00-\x1f\x7f]+")


class UsageRow(BaseModel):
    owner: str
    bytes: int
    artifacts: int
    legacy_spill_bytes: int = Field(0, description="Legacy spill files of these artifacts")
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
def create_token(body: NewToken, store: StoreDep, admin: AdminDep) -> IssuedToken:
    """Issue a token. The secret is in this response only."""
    return store.tokens.create(body, created_by=admin.name)


@router.delete("/tokens/{token_id}", response_model=TokenInfo)
def revoke_token(token_id: str, store: StoreDep, admin: AdminDep) -> TokenInfo:
    """Revoke a token; it stops working at once."""
    return store.tokens.revoke(token_id, by=admin.name)


# -- retention policies, preview, cleanup, audit -----------------------------------------


class PolicyChange(PolicySpec):
    apply_to_existing: bool = Field(False, description="Recompute expiry of existing artifacts")


class PolicyResult(BaseModel):
    policy: PolicyView
    updated_artifacts: int


class PreviewRequest(PolicySpec):
    owner: str | None = Field(None, max_length=200, description="Omit for the global policy")


class CleanupRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dry_run: bool = True


def _owner_path(owner: str) -> str:
    """An owner named in a policy route: a principal's name, never empty or blank.

    An empty owner must not fall through to the global policy — an unset ``$OWNER`` in a
    script would otherwise change every owner's retention."""
    if not owner or owner == GLOBAL or len(owner) > 200 or not _OWNER_SHAPE.fullmatch(owner):
        raise InvalidArgument(
            f"invalid owner {owner[:80]!r}: name one principal (e.g. agent:ci-bot), "
            "without spaces or control characters"
        )
    return owner


@router.get("/retention", response_model=PolicyView)
def get_global_policy(store: StoreDep, admin: AdminDep) -> PolicyView:
    """The global default, ceiling, forever switch, quota and size cap."""
    return store.policies.get(GLOBAL)


@router.put("/retention", response_model=PolicyResult)
def set_global_policy(body: PolicyChange, store: StoreDep, admin: AdminDep) -> PolicyResult:
    """Set the global policy; new artifacts use it, existing ones only with apply_to_existing."""
    spec = PolicySpec(**body.model_dump(exclude_unset=True, exclude={"apply_to_existing"}))
    view, n = store.policies.set(admin, spec, GLOBAL, apply_to_existing=body.apply_to_existing)
    return PolicyResult(policy=view, updated_artifacts=n)


@router.get("/retention/owners", response_model=list[PolicyView])
def list_owner_policies(store: StoreDep, admin: AdminDep) -> list[PolicyView]:
    """Every per-owner policy."""
    return store.policies.list_owners()


@router.get("/retention/owners/{owner:path}", response_model=PolicyView)
def get_owner_policy(owner: str, store: StoreDep, admin: AdminDep) -> PolicyView:
    """One owner's own policy (unset fields inherit the global one)."""
    return store.policies.get(_owner_path(owner))


@router.put("/retention/owners/{owner:path}", response_model=PolicyResult)
def set_owner_policy(
    owner: str, body: PolicyChange, store: StoreDep, admin: AdminDep
) -> PolicyResult:
    """Set one owner's policy."""
    spec = PolicySpec(**body.model_dump(exclude_unset=True, exclude={"apply_to_existing"}))
    view, n = store.policies.set(
        admin, spec, _owner_path(owner), apply_to_existing=body.apply_to_existing
    )
    return PolicyResult(policy=view, updated_artifacts=n)


@router.delete("/retention/owners/{owner:path}", status_code=204, response_class=Response)
def delete_owner_policy(owner: str, store: StoreDep, admin: AdminDep) -> Response:
    """Remove an owner's policy; the global one applies to it again."""
    store.policies.delete(admin, _owner_path(owner))
    return Response(status_code=204)


@router.post("/retention/preview", response_model=Preview)
def preview_policy(body: PreviewRequest, store: StoreDep, admin: AdminDep) -> Preview:
    """What would expire now, within 24 h and within 7 d, per owner, if this policy
    were set and applied to existing artifacts. Changes nothing."""
    spec = PolicySpec(**body.model_dump(exclude_unset=True, exclude={"owner"}))
    owner = GLOBAL if body.owner is None else _owner_path(body.owner)
    return store.policies.preview(spec, owner)


@router.post("/cleanup", response_model=SweepReport)
def cleanup(
    body: CleanupRequest, request: Request, store: StoreDep, admin: AdminDep
) -> SweepReport:
    """Run the sweeper once (dry run by default) and report what was (or would be)
    deleted, the bytes freed and any errors."""
    return run_cleanup(store, request.app.state.settings.shell, dry_run=body.dry_run)


class ScrubRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dry_run: bool = True
    owner: str | None = Field(None, max_length=200, description="Only this owner's outputs")
    after: str | None = Field(None, max_length=40, description="Resume after this id")
    limit: int = Field(100, ge=1, le=1000, description="Outputs read by this call")


@router.post("/scrub", response_model=ScrubReport)
def scrub(body: ScrubRequest, request: Request, store: StoreDep, admin: AdminDep) -> ScrubReport:
    """Mask what is already stored with the current rules and patterns: one page
    of outputs per call (dry run by default); each one a secret is found in is
    rewritten and its old bytes deleted, with an audit entry."""
    return scrub_page(
        store,
        request.app.state.redaction,
        owner=body.owner,
        after=body.after,
        limit=body.limit,
        dry_run=body.dry_run,
        actor=admin.name,
    )


@router.get("/audit", response_model=list[AuditEntry])
def audit_log(
    store: StoreDep,
    admin: AdminDep,
    artifact_id: str | None = Query(None, max_length=40),
    owner: str | None = Query(None, max_length=200),
    action: str | None = Query(None, max_length=50),
    before_id: int | None = Query(None, ge=0, le=MAX_OFFSET),
    limit: int = Query(100, ge=1, le=1000),
) -> list[AuditEntry]:
    """Who did what, newest first; page with `before_id`."""
    return list(
        store.audit_log(
            artifact_id=artifact_id, owner=owner, action=action, before_id=before_id, limit=limit
        )
    )
