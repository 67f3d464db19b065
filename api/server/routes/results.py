"""``POST /v1/results``: save any tool's oversized result, get an id and a preview.

The body is the content, streamed (any size, bounded memory); what is known of
it beforehand rides in the query (``SaveRequest``'s fields, ``source`` as a JSON
object). The answer carries the head/tail preview a model should see in place
of the content, and the exact calls that read or search the rest.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool

from overspill.artifacts.errors import InvalidArgument
from overspill.artifacts.inputs import MAX_SOURCE_BYTES, check_source

from ...results import DEFAULT_BUDGET, ResultSave, SavedResult, SaveRequest
from ..deps import PrincipalDep, RedactionDep, StoreDep
from ..errors import RESPONSES

router = APIRouter(prefix="/v1/results", tags=["results"], responses=RESPONSES)


def _source(raw: str | None) -> dict[str, Any]:
    """The ``source`` query value as an object. Its bounds (depth, size, no NUL)
    are the one check every artifact's source gets (``artifacts.inputs``); the
    length guard only keeps json.loads from parsing more than that allows."""
    if not raw:
        return {}
    if len(raw) > MAX_SOURCE_BYTES:
        raise InvalidArgument(f"source is more than {MAX_SOURCE_BYTES} bytes as JSON")
    try:
        source = json.loads(raw)
    except ValueError:
        raise InvalidArgument("source must be a JSON object") from None
    return check_source(source)


@router.post("", status_code=201, response_model=SavedResult)
async def save_result(
    request: Request,
    store: StoreDep,
    who: PrincipalDep,
    redaction: RedactionDep,
    tool: str = Query("result", description="The tool that produced it"),
    name: str | None = Query(None, description="A suggested name"),
    session_id: str | None = Query(None),
    media_type: str = Query("text/plain; charset=utf-8"),
    source: str | None = Query(None, description="More about the source, as a JSON object"),
    budget: int = Query(DEFAULT_BUDGET, description="Bytes of preview to return"),
) -> SavedResult:
    """Store the body as an artifact (kind `result`) and answer with its preview."""
    req = SaveRequest.checked(
        tool=tool,
        name=name,
        session_id=session_id,
        media_type=media_type,
        source=_source(source),
        budget=budget,
    )
    # The artifact is made with the first byte (in a worker, by ``feed``): an
    # empty body is refused at the end and leaves nothing behind.
    save = ResultSave(
        lambda: req.open_writer(store, who),
        lambda art: store.get(who, art),
        budget=req.budget,
        redaction=redaction,
    )
    async for chunk in request.stream():
        if chunk:
            await run_in_threadpool(save.feed, chunk)
            request.app.state.metrics.bytes_in.inc(len(chunk))
    return await run_in_threadpool(save.finish)
