"""``/v1/search``: one pattern across the caller's own outputs, newest first.

Counted as an expensive read (the caller's bound on concurrent greps, ranges and
downloads applies), and bounded per call by matching lines and bytes searched;
``next_cursor`` resumes exactly where the call stopped.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from overspill.artifacts.queries import SearchQuery
from overspill.artifacts.records import SearchResult

from ..deps import StoreDep
from ..errors import RESPONSES
from .reads import _LIMITED, ExpensiveDep

router = APIRouter(prefix="/v1", tags=["reads"], responses=RESPONSES)


@router.get("/search", response_model=SearchResult, responses=_LIMITED)
def search(store: StoreDep, who: ExpensiveDep, query: Annotated[SearchQuery, Query()]) -> Response:
    """Matching lines of every output of the caller (or of one session), grouped
    by output with its command and time; expired and deleted ones never."""
    found = store.search(who, query)
    return Response(found.model_dump_json(), media_type="application/json")
