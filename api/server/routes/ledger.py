"""The context ledger over HTTP: ``GET /v1/stats`` (what outputs kept out of
models' contexts and what was read back, for a period, an owner, a harness or a
conversation) and ``GET /v1/artifacts/{id}/reads`` (one output's read-backs).
Owner-scoped as everything else: an agent or a user sees its own figures, an
admin any owner's (``owner``) or all of them."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, Query

from overspill.artifacts.errors import InvalidArgument
from overspill.artifacts.ledger.ledger import ReadCount
from overspill.artifacts.ledger.ledger_stats import Stats, since_for

from ..deps import PrincipalDep, StoreDep
from .artifacts import ARTIFACT_ID

router = APIRouter(prefix="/v1", tags=["ledger"])

MAX_PERIOD_S = 10 * 365 * 86400


@router.get("/stats", response_model=Stats)
def stats(
    store: StoreDep,
    who: PrincipalDep,
    since_s: float | None = Query(
        None, gt=0, le=MAX_PERIOD_S, description="The period: outputs made in the last N seconds"
    ),
    owner: str | None = Query(None, max_length=200, description="An owner (admins only)"),
    session_id: str | None = Query(None, max_length=200, description="One conversation"),
    harness: str | None = Query(None, max_length=50, description="One harness (claude-code, ...)"),
    limit: int = Query(10, ge=1, le=100, description="Rows of the ranked lists"),
) -> Stats:
    """Outputs, bytes produced, bytes shown to models and kept out of their
    context (with a token estimate, bytes/4), read-backs, the outputs read back
    most, the commands that overflow most, and hints where a larger inline
    budget would have served; with ``session_id``, that conversation's outputs
    in order."""
    if owner is not None and not owner.strip():
        raise InvalidArgument("owner must not be empty")
    return store.stats(
        who,
        since=since_for(store.ctx.clock.now(), since_s),
        owner=owner,
        session_id=session_id,
        harness=harness,
        limit=limit,
    )


@router.get("/artifacts/{artifact_id}/reads", response_model=list[ReadCount])
def reads(artifact_id: ARTIFACT_ID, store: StoreDep, who: PrincipalDep) -> Sequence[ReadCount]:
    """What was read back of this output: per reader, conversation and tool."""
    return store.reads_of(who, artifact_id)
