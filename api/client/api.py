"""The typed client interface: every operation on the store, as one principal,
one method each. The table of contents of the client side.

Two implementations, and only two: ``InProcessClient`` (``in_process``: the
store in this process) and ``OverspillClient`` (``http``: a server over
``/v1``). The model tools, the MCP servers, the result saver and a harness
embedding overspill are written against this Protocol, so each works both
ways; a new read option is one field on a query model (``artifacts.queries``),
one store method, and its rendering.

The CLI's verbs speak the same ``/v1`` calls one layer down (``calls``: the
answers as decoded JSON), because a verb's process must not pay ~110 ms for
pydantic and the records on every command; ``OverspillClient`` is those same
calls with the answers validated into records.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from overspill.artifacts import queries as q
    from overspill.artifacts import records as r
    from overspill.artifacts.writing.writes import NewArtifact
    from overspill.shell.sink import OutputSink

    from ..results import SavedResult, SaveRequest


class StoreClient(Protocol):
    # -- one artifact: what it is, its bytes, its windows --------------------------------
    def get(self, artifact_id: str) -> r.ArtifactInfo:
        """Its metadata (another owner's is NotFound, exactly like a missing one)."""
        ...

    def iter_content(
        self, artifact_id: str, start: int = 0, end: int | None = None, *, follow: bool = False
    ) -> Iterator[bytes]:
        """Bytes [start, end) as stored; ``follow``: on until the writer ends."""
        ...

    def text(self, artifact_id: str, query: q.TextQuery | None = None) -> r.TextWindow:
        """A UTF-8-safe byte window and where the next one starts."""
        ...

    def lines(self, artifact_id: str, query: q.LineQuery) -> r.LineWindow: ...

    def tail(self, artifact_id: str, query: q.TailQuery) -> r.TailWindow:
        """The last lines or bytes (``query.chosen()``), bounded."""
        ...

    def grep(self, artifact_id: str, query: q.GrepQuery) -> r.GrepResult:
        """One bounded page of matches and the offset that resumes the scan."""
        ...

    # -- many artifacts ------------------------------------------------------------------
    def list(self, query: q.ListQuery) -> r.ArtifactPage: ...

    def search(self, query: q.SearchQuery) -> r.SearchResult:
        """One pattern across the principal's own outputs, newest first, paged."""
        ...

    # -- writing and the lifecycle -------------------------------------------------------
    def put(self, chunks: Iterable[bytes], new: NewArtifact) -> r.ArtifactInfo:
        """A new artifact holding ``chunks`` (streamed; masked like every write)."""
        ...

    def save_result(self, chunks: Iterable[bytes], request: SaveRequest) -> SavedResult:
        """A tool's oversized result behind an id, with the model's preview."""
        ...

    def sink(self, *, session_id: str | None = None, max_bytes: int | None = None) -> OutputSink:
        """Where the executor streams an overflowing output (``run`` is an
        ``Executor`` over this sink)."""
        ...

    def delete(self, artifact_id: str) -> r.ArtifactInfo: ...
    def pin(self, artifact_id: str, reason: str | None = None) -> r.ArtifactInfo: ...
    def unpin(self, artifact_id: str) -> r.ArtifactInfo: ...
    def set_retention(self, artifact_id: str, retention: int | str | None) -> r.ArtifactInfo: ...
