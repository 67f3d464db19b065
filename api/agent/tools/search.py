"""``artifact_search``'s answer: every output's matching lines under a heading
(id, time, command), cut at a line when the answer is full, and a footer that
says how much was searched, why it stopped and the one call that goes on.

Apart from ``handlers`` (which calls it) because it is the one answer that spans
outputs: its rows and its continuation are the search's, not one artifact's.
"""

from __future__ import annotations

from typing import Any

from overspill.artifacts.queries import SearchQuery
from overspill.artifacts.reading.search import resume_cursor
from overspill.shell import wording
from overspill.shell.wording import call, count, grep_row

from ...client.api import StoreClient


def search_answer(
    backend: StoreClient, a: dict[str, Any], *, session_id: str | None, max_chars: int
) -> tuple[str, dict[str, Any]]:
    """Per output a heading (id, time, command), then its lines as grep prints
    them; cut at a line when the answer is full; the footer says how much was
    searched, why it stopped and the call that goes on (one cursor)."""
    query = SearchQuery(
        pattern=a["pattern"],
        ignore_case=a.get("ignore_case", False),
        fixed=a.get("fixed", False),
        session_id=None if a.get("all_sessions") else session_id,
        tool=a.get("tool"),
        max_matches=a.get("max_matches", 30),
        cursor=a.get("cursor"),
    )
    res = backend.search(query)
    again = {k: v for k, v in a.items() if k != "cursor"}
    out: list[str] = []
    used = shown = 0
    resume: str | None = None
    for g in res.groups:
        what = g.command or g.name or g.tool or ""
        head = f"== {g.artifact_id} {g.created_at:%Y-%m-%d %H:%M:%S} UTC: {what}\n"
        for n, m in enumerate(g.matches):
            row = grep_row(g.artifact_id, m.line, ":", m.spans[0] if m.spans else None)
            text = (head if n == 0 else "") + row + "\n"
            if shown and used + len(text.encode()) > max_chars:
                resume = resume_cursor(g, m.line.offset)
                break
            out.append(text)
            used += len(text.encode())
            shown += 1
        if resume is not None:
            break
    found = count(shown, "matching line", "matching lines")
    scope = "all your sessions" if a.get("all_sessions") or not session_id else ("this session")
    searched_ = wording.outputs_searched(res.artifacts_searched, scope, res.bytes_searched)
    if resume is not None:
        foot = wording.search_full(found, call("artifact_search", **again, cursor=resume))
    elif res.next_cursor is not None:
        why = (
            "max_matches reached"
            if res.stopped == "max_matches"
            else ("the search read as much as one call may")
        )
        again_call = call("artifact_search", **again, cursor=res.next_cursor)
        where = f"{res.resume_artifact} at byte {res.resume_offset}"
        foot = wording.search_stopped(found, searched_, where, why, again_call)
    else:
        foot = wording.search_done(found, searched_)
    if not shown and res.next_cursor is None:
        foot = wording.search_done(None, searched_)
    facts = {"matches": shown, "outputs_searched": res.artifacts_searched}
    return "".join(out) + foot, facts
