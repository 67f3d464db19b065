"""Search across a principal's outputs: which of them printed a pattern, and where.

An agent that lost an id to compaction asks "where did I see ECONNREFUSED?"; the
answer is every matching line, grouped by output (its command, its time), newest
output first. It is one grep per output, in the order the listing gives them,
so everything grep guarantees (RE2's linear time, lines clipped, byte offsets)
holds here too, and everything the listing guarantees: only the principal's own
outputs (an admin searches its own, not every owner's), never an expired or
deleted one.

Each call is bounded by matching lines and by bytes searched; the cursor it
returns names the output and the byte offset to resume at (and the listing page
it sits in), so a walk of cursors meets every match exactly once.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING

from overspill.artifacts.errors import Gone, InvalidArgument, NotFound
from overspill.artifacts.queries import GrepQuery, ListQuery, SearchQuery
from overspill.artifacts.records import (
    ArtifactInfo,
    GrepMatch,
    Principal,
    SearchGroup,
    SearchResult,
)

if TYPE_CHECKING:
    from overspill.artifacts.catalog.catalog import Catalog
    from overspill.artifacts.reading.reading import Reader

_PAGE = 200  # outputs listed per page while searching
_MIN_PAGE = 20


def _cursor(page: str | None, artifact_id: str, offset: int) -> str:
    raw = json.dumps({"p": page, "a": artifact_id, "o": offset}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def resume_cursor(group: SearchGroup, offset: int) -> str:
    """The cursor that resumes a search at ``offset`` of ``group``'s output (an
    answer cut short before all of a call's lines were shown)."""
    return _cursor(group.cursor_page, group.artifact_id, offset)


def _read_cursor(cursor: str) -> tuple[str | None, str, int]:
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        page, artifact_id, offset = data["p"], data["a"], data["o"]
        if not isinstance(artifact_id, str) or not isinstance(offset, int) or offset < 0:
            raise ValueError
        if page is not None and not isinstance(page, str):
            raise ValueError
    except (ValueError, KeyError, TypeError):
        raise InvalidArgument("cursor: not one a search returned") from None
    return page, artifact_id, offset


def _wanted(info: ArtifactInfo, q: SearchQuery) -> bool:
    if q.tool is not None and info.source.get("tool") != q.tool:
        return False
    return q.name is None or (info.name is not None and q.name in info.name)


def search(catalog: Catalog, reader: Reader, principal: Principal, q: SearchQuery) -> SearchResult:
    from overspill.artifacts.grep.grep_patterns import finder_for  # a bad pattern fails at once

    finder_for(q.pattern, ignore_case=q.ignore_case, fixed=q.fixed)
    page, resume_id, offset = _read_cursor(q.cursor) if q.cursor else (None, None, 0)
    listing = ListQuery(
        owner=principal.name,
        session_id=q.session_id,
        state=q.state,
        created_after=q.created_after,
        created_before=q.created_before,
        sort="created",
        order="desc",
        limit=_PAGE,
    )
    groups: list[SearchGroup] = []
    matches = searched = scanned = 0
    # Checked once; each output's page is the same with its own offset and count.
    grep_all = GrepQuery(
        pattern=q.pattern, ignore_case=q.ignore_case, fixed=q.fixed, max_matches=q.max_matches
    )
    listed_rows = 0
    while True:
        listed = catalog.list(
            principal,
            listing.model_copy(update={"cursor": page, "limit": _limit(q, scanned, listed_rows)}),
        )
        items = listed.items
        listed_rows += len(items)
        if resume_id is not None:  # the output the last call stopped in, and on
            at = next((i for i, info in enumerate(items) if info.id == resume_id), None)
            if at is None:  # it is gone since: the next one is searched from its start
                offset = 0
            items = items[at:] if at is not None else items
            resume_id = None
        items = [info for info in items if _wanted(info, q)]
        contents = reader.listed_contents(items)
        # Workers grep the page ahead when it is big (the answers are the same).
        ahead = reader.lookahead(items, contents, grep_all, offset)
        try:
            for i, info in enumerate(items):
                if matches >= q.max_matches or scanned >= q.max_scan_bytes:
                    stopped = "max_matches" if matches >= q.max_matches else "max_scan_bytes"
                    here = _listed_from(catalog, items, i, page)
                    return _result(
                        q, groups, matches, searched, scanned, here, info.id, offset, stopped
                    )
                scan_left = max(1, q.max_scan_bytes - scanned)
                # (A worker's answer is not stamped with the output's state, as
                # grep_content's is: nothing here reads it.)
                res = ahead.take(q.max_matches - matches, scan_left) if ahead else None
                if res is None:
                    grep = GrepQuery.model_construct(  # its fields are grep_all's, checked
                        **{
                            **grep_all.__dict__,
                            "max_matches": q.max_matches - matches,
                            "offset": offset,
                        }
                    )
                    try:
                        res = reader.grep_content(
                            info, contents[info.id], grep, scan_bytes=scan_left
                        )
                    except (Gone, NotFound):  # expired or deleted since it was listed
                        offset = 0
                        continue
                searched += 1
                scanned += res.next_offset - res.scanned_from
                found = [
                    GrepMatch(line=m.line, before=[], after=[], spans=m.spans) for m in res.matches
                ]
                if found:
                    matches += len(found)
                    groups.append(
                        SearchGroup(
                            artifact_id=info.id,
                            created_at=info.created_at,
                            command=info.source.get("command"),
                            name=info.name,
                            tool=info.source.get("tool"),
                            matches=found,
                            cursor_page=_listed_from(catalog, items, i, page),
                        )
                    )
                if not res.eof:  # this output is not searched to its end yet
                    stopped = "max_matches" if matches >= q.max_matches else "max_scan_bytes"
                    return _result(
                        q,
                        groups,
                        matches,
                        searched,
                        scanned,
                        _listed_from(catalog, items, i, page),
                        info.id,
                        res.next_offset,
                        stopped,
                    )
                offset = 0
        finally:
            if ahead is not None:
                ahead.stop()
        if listed.next_cursor is None:
            return _result(q, groups, matches, searched, scanned, None, None, 0, None)
        page = listed.next_cursor


def _limit(q: SearchQuery, scanned: int, listed_rows: int) -> int:
    """Rows to list next: a page, or about what the call's bytes left will search
    at the bytes per row seen so far (a call that stops a third into its second
    page had listed the whole page: 2,564 rows for a 2,000-output walk)."""
    if not listed_rows or not scanned:
        return _PAGE
    left = max(0, q.max_scan_bytes - scanned)
    return min(_PAGE, max(_MIN_PAGE, left * listed_rows // scanned + 2))


def _listed_from(
    catalog: Catalog, items: list[ArtifactInfo], i: int, page: str | None
) -> str | None:
    """Where a next call lists from to resume in ``items[i]``: right after the
    output before it (or this page's start)."""
    return catalog.cursor_after(items[i - 1]) if i else page


def _result(
    q: SearchQuery,
    groups: list[SearchGroup],
    matches: int,
    searched: int,
    scanned: int,
    page: str | None,
    artifact_id: str | None,
    offset: int,
    stopped: str | None,
) -> SearchResult:
    return SearchResult(
        pattern=q.pattern,
        groups=groups,
        matches=matches,
        artifacts_searched=searched,
        bytes_searched=scanned,
        next_cursor=_cursor(page, artifact_id, offset) if artifact_id is not None else None,
        resume_artifact=artifact_id,
        resume_offset=offset if artifact_id is not None else None,
        stopped=stopped,
    )
