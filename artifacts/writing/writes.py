"""What a write is made of, as records: the fields of a new artifact, and how
its writer ended. Passed whole through the write path (the store, ingest, the
publisher, the sinks of another process) instead of the same keyword list
repeated at every layer; the standard library only, so a client process can
send them without loading the store.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NamedTuple


class NewArtifact(NamedTuple):
    """An artifact about to be made. ``owner``: an admin making one for another
    principal (HTTP uploads only); ``max_bytes``: below the owner's cap, never
    above; ``retention``: seconds, ``FOREVER`` or the policy's default (None)."""

    kind: str = "output"
    name: str | None = None
    media_type: str = "text/plain; charset=utf-8"
    session_id: str | None = None
    source: dict[str, Any] | None = None
    max_bytes: int | None = None
    owner: str | None = None
    retention: int | Literal["forever"] | None = None
    # When the output was made, if before now (a file taken in by ``overspill
    # adopt``); the retention still runs from now.
    created_at: datetime | None = None
    # An id promised before the store could be reached (a command confined by a
    # harness's sandbox names its output in the model's view, and the harness's
    # hook stores it under that id); None: a new one.
    id: str | None = None


class Ending(NamedTuple):
    """How a writer ended. ``total``: every byte the producer offered, past a cap
    or a failure too (the store never calls an artifact that holds fewer
    complete); ``source_update``: what was only known at the end (an exit code,
    what was masked)."""

    state: str
    total: int
    sha256: str | None = None
    error: str | None = None
    source_update: dict[str, Any] | None = None
