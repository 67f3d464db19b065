"""Reads: bounded windows over what an artifact stores (text, lines, tail, grep),
each stamped with the artifact's state so an answer can say whether the reader
has seen the end of the output. Expired and deleted artifacts answer Gone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, TypeVar

from overspill.artifacts.catalog.catalog import Catalog
from overspill.artifacts.context import Part, StoreContext
from overspill.artifacts.errors import (
    Gone,
    InvalidArgument,
    InvalidRange,
    NotFound,
    StorageUnavailable,
)
from overspill.artifacts.queries import GrepLinesQuery, GrepQuery, LineQuery, TailQuery, TextQuery
from overspill.artifacts.reading import reads
from overspill.artifacts.records import (
    GONE_STATES,
    ArtifactInfo,
    GrepResult,
    LineWindow,
    Principal,
    TailWindow,
    TextWindow,
    Window,
)
from overspill.artifacts.stored.content import Content, segments_of

if TYPE_CHECKING:
    from overspill.artifacts.grep.search_pool import Lookahead, SearchPool
    from overspill.artifacts.ledger.ledger import Ledger


class Reader(Part):
    """Every read a principal makes is counted in the ledger (what of an output
    was read back, by which tool, in which conversation; never its content)."""

    def __init__(self, ctx: StoreContext, catalog: Catalog, ledger: Ledger) -> None:
        super().__init__(ctx)
        self._catalog = catalog
        self._ledger = ledger
        self._pool: SearchPool | None = None

    @property
    def search_pool(self) -> SearchPool | None:
        """The search workers, once a search started them."""
        return self._pool

    def close(self) -> None:
        """Stop the search workers, if any started."""
        if self._pool is not None:
            self._pool.close()

    def _readable(self, principal: Principal, artifact_id: str) -> tuple[ArtifactInfo, Content]:
        info = self._catalog.get(principal, artifact_id)
        if info.state in GONE_STATES:
            when = info.deleted_at if info.state == "deleted" else info.expires_at
            why = info.delete_reason or info.state
            # "is deleted (deleted)" said nothing twice: the reason only when it adds.
            detail = f" ({why})" if why != info.state else ""
            at = f" since {when:%Y-%m-%d %H:%M} UTC" if when else ""
            raise Gone(
                f"artifact {artifact_id} is {info.state}{at}{detail}", reason=why, since=when
            )
        return info, self.content(info)

    def content(self, info: ArtifactInfo) -> Content:
        def missing() -> Exception:
            try:
                self._readable(Principal(name=info.owner, role="admin"), info.id)
            except (Gone, NotFound) as exc:
                return exc
            return StorageUnavailable(f"artifact {info.id}: a stored segment is missing")

        # What the row says of the bytes: a rewrite that changes them is a new
        # version, so no read shares rows another version left (``ROWS``).
        version = (info.updated_at, info.stored_bytes, info.compressed)
        return Content(
            self._ctx.db, self.blobs, info.id, info.size_bytes, info.line_count, missing, version
        )

    def open_content(self, principal: Principal, artifact_id: str) -> tuple[ArtifactInfo, Content]:
        """Metadata and a stable byte view of what is stored now (streaming downloads)."""
        return self._readable(principal, artifact_id)

    def read_bytes(self, principal: Principal, artifact_id: str, start: int, end: int) -> bytes:
        """Bytes [start, end), at most ``read_max_bytes``; end clipped to the stored size."""
        if start < 0 or end < start:
            raise InvalidRange(f"invalid byte range {start}-{end}: need 0 <= start <= end")
        if end - start > self.settings.read_max_bytes:
            raise InvalidRange(
                f"range of {end - start} bytes exceeds the read limit of "
                f"{self.settings.read_max_bytes} bytes"
            )
        _, content = self._readable(principal, artifact_id)
        data = content.read(start, end)
        self._ledger.note(principal, artifact_id, len(data), data.count(b"\n"))
        return data

    def text(
        self, principal: Principal, artifact_id: str, query: TextQuery | None = None
    ) -> TextWindow:
        """A UTF-8-safe window (``query``; none: the first ``DEFAULT_TEXT_LIMIT``
        bytes), at most the store's ``read_max_bytes``."""
        query = query or TextQuery()
        info, content = self._readable(principal, artifact_id)
        offset, limit = query.offset, self._bound(query.limit)
        window = reads.text_window(content, offset, limit, complete=info.complete)
        lines = window.last_line - window.first_line + 1 if window.next_offset > offset else 0
        self._ledger.note(principal, artifact_id, window.next_offset - offset, lines)
        return _stated(window, info)

    def lines(self, principal: Principal, artifact_id: str, query: LineQuery) -> LineWindow:
        info, content = self._readable(principal, artifact_id)
        window = reads.line_window(
            content,
            query.start,
            query.count,
            max_bytes=self._bound(query.max_bytes),
            complete=info.complete,
        )
        shown = sum(len(line.text.encode()) + 1 for line in window.lines)
        self._ledger.note(principal, artifact_id, shown, len(window.lines))
        return _stated(window, info)

    def tail(self, principal: Principal, artifact_id: str, query: TailQuery) -> TailWindow:
        lines, nbytes = query.chosen()
        info, content = self._readable(principal, artifact_id)
        window = reads.tail(
            content,
            lines=lines,
            nbytes=nbytes,
            max_bytes=self._bound(query.max_bytes),
            complete=info.complete,
        )
        lines = window.last_line - window.line + 1 if window.text else 0
        self._ledger.note(principal, artifact_id, content.size - window.offset, lines)
        return _stated(window, info)

    def note_download(self, principal: Principal, info: ArtifactInfo, start: int, end: int) -> None:
        """A download of bytes [start, end) (its lines are known for a whole one)."""
        lines = info.line_count if start == 0 and end >= info.size_bytes else 0
        self._ledger.note(principal, info.id, max(0, end - start), lines)

    def listed_contents(self, infos: list[ArtifactInfo]) -> dict[str, Content]:
        """The contents of rows a listing of the principal just returned (so no
        row is read again), their segments fetched in one query: a search across
        thousands of small outputs otherwise spends two queries on each."""
        known = segments_of(self._ctx.db, {i.id: i.size_bytes for i in infos})
        contents = {}
        for info in infos:
            content = contents[info.id] = self.content(info)
            segments = known.get(info.id)
            if segments is not None:
                content.know_segments(segments)
        return contents

    def grep_content(
        self,
        info: ArtifactInfo,
        content: Content,
        query: GrepQuery,
        *,
        scan_bytes: int,
        max_bytes: int | None = None,
    ) -> GrepResult:
        """``grep`` of a content already open (``listed_contents``: an output
        deleted since it was listed answers Gone from its read)."""
        from overspill.artifacts.grep import grep

        found = grep.grep(
            content,
            query,
            max_bytes=self._bound(max_bytes),
            scan_bytes=scan_bytes,
            complete=info.complete,
        )
        return _stated(found, info)

    def lookahead(
        self, items: list[ArtifactInfo], contents: dict[str, Content], query: GrepQuery, offset: int
    ) -> Lookahead | None:
        """Workers grepping a search's listing page ahead of it (``search_pool``),
        when the page is big enough and the workers are up; else None."""
        from overspill.artifacts.grep.search_pool import Lookahead, SearchPool, cores, worthwhile

        if not worthwhile(items, offset) or not self.settings.resolved_blob_url.startswith("file:"):
            # (Workers read local blobs; S3 reads are paced by the network, and
            # a worker's own client is not what the serving process was given.)
            return None
        if self._pool is None:
            count = self.settings.search_workers or cores()
            if count <= 1:
                return None
            self._pool = SearchPool(self.settings.resolved_blob_url, count)
        lent = self._pool.checkout()
        if not lent:
            return None
        return Lookahead(
            self._pool,
            lent,
            items,
            contents,
            query,
            first_offset=offset,
            max_bytes=self._bound(None),
        )

    def grep(
        self,
        principal: Principal,
        artifact_id: str,
        query: GrepQuery,
        *,
        max_bytes: int | None = None,
        scan_bytes: int = 256 * 1024 * 1024,
    ) -> GrepResult:
        from overspill.artifacts.grep import grep_patterns  # RE2 loads with the first search

        grep_patterns.finder_for(query.pattern, ignore_case=query.ignore_case, fixed=query.fixed)
        info, content = self._readable(principal, artifact_id)  # after: fail fast on a bad regex
        found = self.grep_content(info, content, query, scan_bytes=scan_bytes, max_bytes=max_bytes)
        shown = sum(len(m.line.text.encode()) + 1 for m in found.matches)
        self._ledger.note(principal, artifact_id, shown, len(found.matches))
        return found

    def grep_lines(
        self, principal: Principal, artifact_id: str, query: GrepLinesQuery
    ) -> tuple[ArtifactInfo, Iterator[bytes]]:
        """The artifact and its ``grep -n`` rows as a byte stream (see
        ``grep_text``); a bad pattern and a missing artifact fail before it starts."""
        from overspill.artifacts.grep import grep_patterns, grep_text

        if query.invert and (query.context or query.before or query.after):
            raise InvalidArgument("context lines (-A, -B, -C) do not go with invert (-v)")
        grep_patterns.finder_for(query.pattern, ignore_case=query.ignore_case, fixed=query.fixed)
        info, content = self._readable(principal, artifact_id)
        about = {
            "state": info.state,
            "size_bytes": content.size,
            "total_bytes": max(info.total_bytes, content.size),
            "error": info.error,
        }
        native = self.settings.native_grep
        rows = grep_text.grep_lines(content, query, about=about, native_engine=native)
        return info, self._counted(principal, artifact_id, rows)

    def _counted(
        self, principal: Principal, artifact_id: str, rows: Iterator[bytes]
    ) -> Iterator[bytes]:
        """``rows`` as they go out, counted in the ledger when the stream ends."""
        nbytes = nlines = 0
        try:
            for row in rows:
                nbytes += len(row)
                nlines += row.count(b"\n")
                yield row
        finally:
            self._ledger.note(principal, artifact_id, nbytes, nlines)

    def _bound(self, value: int | None) -> int:
        cap = self.settings.read_max_bytes
        if value is None:
            return cap
        if value <= 0:
            raise InvalidRange(f"limit must be positive, got {value}")
        return min(value, cap)


_W = TypeVar("_W", bound=Window)


def _stated(window: _W, info: ArtifactInfo) -> _W:
    """Stamp a read with the artifact's state as of the read (sizes from the view)."""
    size = getattr(window, "size_bytes", 0) or info.size_bytes
    return window.model_copy(
        update={
            "state": info.state,
            "size_bytes": size,
            "total_bytes": max(info.total_bytes, size),
            "error": info.error,
        }
    )
