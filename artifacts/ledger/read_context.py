"""Who is reading an output, and why: the tool and the conversation a read comes
from, carried with the call (a context variable) rather than through every
signature, so the store's ledger can count it (``artifacts.ledger.ledger``).

Set at each edge: an MCP tool call (its name and the server's session), a CLI
verb (``X-Overspill-Tool``/``X-Overspill-Session`` on its requests, read back
by the server), the web pages ("ui"), and the view a harness hook builds from a
stored output's tail (``shown``: what the model is shown is no read-back).
Standard library only: the CLI imports it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

TOOL_HEADER = "X-Overspill-Tool"
SESSION_HEADER = "X-Overspill-Session"
SHOWN = "shown"
"""The tool name of a read that builds what a model is shown (counted as shown)."""


class Reading(NamedTuple):
    tool: str  # the MCP tool, the CLI verb, "ui", "http" (an API call that said nothing)
    session_id: str | None = None


_current: ContextVar[Reading | None] = ContextVar("overspill_reading", default=None)


def current() -> Reading | None:
    return _current.get()


@contextmanager
def reading_as(tool: str, session_id: str | None = None) -> Iterator[None]:
    """Reads inside this block count as ``tool``'s, in ``session_id``."""
    token = _current.set(Reading(tool[:40], session_id[:200] if session_id else None))
    try:
        yield
    finally:
        _current.reset(token)


def headers() -> dict[str, str]:
    """The current reading as request headers (empty when none is set)."""
    r = _current.get()
    if r is None:
        return {}
    out = {TOOL_HEADER: r.tool}
    if r.session_id and r.session_id.isascii() and r.session_id.isprintable():
        out[SESSION_HEADER] = r.session_id  # (a header is ASCII: others go unsaid)
    return out
