"""Bounded capture of one output stream.

Memory holds exactly the last ``window`` bytes (plus, in ``head_tail`` mode, the
first ones), whatever the chunking. On the first chunk that overflows the window,
the full-stream copies start: the artifact (through the sink) and, while the
compatibility layer is on, the legacy spill file. Both first receive everything
retained so far, which is the stream from byte 0 since nothing was dropped yet.
Storage trouble never reaches the command: it is recorded and reported.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from overspill.artifacts.newlines import count_newlines
from overspill.artifacts.utf8 import utf8_safe_end, utf8_skip_partial

from .results import ArtifactRef, CollectedOutput

# What only a stream that overflows needs (the failure scan, the view, the
# copies) is imported where it is first used: most commands never overflow,
# and a harness's shell starts one process per command (``api.agent.harness_shell``).
if TYPE_CHECKING:
    from .beside import Beside
    from .failures import FailureMatcher, FailureScan
    from .redact.stream import Manifest, StreamRedactor
    from .results import StreamView
    from .sink import SinkStream
    from .spill import SpillFile

RetentionMode = Literal["tail", "head_tail"]


# Where a stream's bytes go as they arrive, besides the tail and the copies.
Echo = Callable[[bytes | memoryview], None]


class Delta(NamedTuple):
    """A read from a whole-stream offset: ``lossy`` when bytes had left memory."""

    data: bytes
    start: int
    next_offset: int
    lossy: bool
    missing: tuple[int, int] | None


class OutputCollector:
    def __init__(
        self,
        stream: str,
        window: int,
        *,
        mode: RetentionMode = "tail",
        spill: Callable[[], SpillFile] | None = None,
        open_sink: Callable[[], SinkStream] | None = None,
        prepare: Callable[[], None] | None = None,
        redactor: StreamRedactor | None = None,
        unredacted: bool = False,
        failures: Callable[[], FailureMatcher | None] | None = None,
        echo: Echo | None = None,
        max_lines: int | None = None,
    ) -> None:
        self.stream = stream
        # A client that cuts answers by lines as well as bytes (opencode: 2,000):
        # past this many lines the stream is cut too, and the view shows no more.
        self._max_lines = max_lines
        # A person watching on a terminal (``overspill run`` on a tty) sees each
        # chunk as the command writes it, masked as the store keeps it.
        self._echo = echo
        # Every byte passes the redactor before it is kept or shown: the tail, the
        # spill file and the artifact all hold the masked stream, of the same length.
        self._redactor = redactor
        self._unredacted = unredacted  # redaction was switched off: the artifact says so
        self._window = window
        self._head_cap = window // 2 if mode == "head_tail" else 0
        self._head = bytearray()
        self._tail = bytearray()
        # Whether the byte before the tail's first one is a newline (the tail then
        # starts at a line start; the stream's start counts as one).
        self._tail_at_line = True
        self._total = 0
        self._newlines = 0  # in the whole stream: the view numbers the lines it shows
        self._lock = threading.Lock()
        self._make_spill = spill
        self._open_sink = open_sink
        # Called once when the stream passes half its window: a sink that takes
        # time to be ready (a connection, a server's start) begins then, so the
        # first overflow finds it ready more often.
        self._prepare = prepare
        self._spill: SpillFile | None = None
        self._sink: SinkStream | None = None
        self._overflowed = False
        self.storage_error: str | None = None
        self._result: CollectedOutput | None = None
        # Once the stream overflows, its failure-like lines are counted for the
        # view to quote those of the part not shown (tail mode: a head is shown).
        self._failures = failures if mode == "tail" else None
        self._scan: FailureScan | None = None
        self._beside: Beside | None = None

    @property
    def total_bytes(self) -> int:
        return self._total

    @property
    def artifact_id(self) -> str | None:
        return self._sink.artifact_id if self._sink is not None else None

    @property
    def spill_path(self) -> str | None:
        return self._spill.path if self._spill is not None else None

    def feed(self, chunk: bytes | memoryview) -> None:
        """Take one chunk. ``chunk`` may be a reused buffer: anything kept is copied."""
        if self._redactor is None:
            self._take(chunk)
            return
        for piece in self._redactor.feed(chunk):
            self._take(piece)

    def _flush_redactor(self) -> None:
        """The stream has ended: what the redactor still held moves on, masked."""
        if self._redactor is not None:
            self._take(self._redactor.finish())

    @property
    def redactions(self) -> Manifest | None:
        return self._redactor.manifest if self._redactor is not None else None

    def _take(self, chunk: bytes | memoryview) -> None:
        if not chunk:
            return
        if self._echo is not None:
            self._echo(chunk)
        newlines = count_newlines(chunk)
        with self._lock:
            if self._prepare is not None and 2 * (self._total + len(chunk)) > self._window:
                prepare, self._prepare = self._prepare, None
                prepare()
            if not self._overflowed and (
                self._total + len(chunk) > self._window
                or (self._max_lines is not None and self._newlines + newlines > self._max_lines)
            ):
                self._start_copies()
            self._total += len(chunk)
            self._newlines += newlines
            self._retain(chunk)
        if self._overflowed:
            self._copy(chunk, newlines)

    def _retain(self, chunk: bytes | memoryview) -> None:
        if len(self._head) < self._head_cap:
            take = self._head_cap - len(self._head)
            self._head += chunk[:take]
            chunk = chunk[take:]
        room = self._window - self._head_cap
        if len(chunk) >= room:
            if len(chunk) > room:
                self._tail_at_line = chunk[len(chunk) - room - 1] == 10
            elif self._tail:
                self._tail_at_line = self._tail[-1] == 10
            self._tail[:] = chunk[len(chunk) - room :]  # a chunk larger than the window
        else:
            self._tail += chunk
            excess = len(self._tail) - room
            if excess > 0:
                self._tail_at_line = self._tail[excess - 1] == 10
                del self._tail[:excess]

    def _start_copies(self) -> None:
        """First overflow: open the copies and give them the stream so far."""
        self._overflowed = True
        retained = bytes(self._head + self._tail)  # == the whole stream up to now
        matcher = self._failures() if self._failures is not None else None
        if matcher is not None:
            from .failures import FailureScan

            self._scan = FailureScan(matcher)
            self._scan.feed(retained)
        if self._make_spill is not None:
            self._spill = self._make_spill()
            self._spill.write(retained)
        if self._scan is not None or self._spill is not None:
            from .beside import Beside

            self._beside = Beside(self._scan, self._spill)
        if self._open_sink is not None:
            try:
                self._sink = self._open_sink()
                if retained:
                    self._sink.write(retained)
            except Exception as exc:  # a store failure never fails the command
                self._storage_failed(exc)

    def _copy(self, chunk: bytes | memoryview, newlines: int) -> None:
        if self._beside is not None:
            self._beside.put(chunk, newlines)
        if self._sink is not None and self.storage_error is None:
            try:
                self._sink.write(chunk, newlines)
            except Exception as exc:
                self._storage_failed(exc)

    def _storage_failed(self, exc: BaseException) -> None:
        from .sink import failure_reason

        self.storage_error = failure_reason(exc)

    def read_from(self, offset: int) -> Delta:
        """Bytes from whole-stream ``offset``; lossy if part of it left memory."""
        with self._lock:
            total = self._total
            tail_start = total - len(self._tail)
            if offset >= total:
                return Delta(b"", total, total, False, None)
            if offset >= tail_start:
                return Delta(bytes(self._tail[offset - tail_start :]), offset, total, False, None)
            if offset < len(self._head):
                # Still inside the retained head: hand out the head, then the tail.
                gap = (len(self._head), tail_start) if tail_start > len(self._head) else None
                data = bytes(self._head[offset:]) + bytes(self._tail)
                return Delta(data, offset, total, gap is not None, gap)
            return Delta(bytes(self._tail), tail_start, total, True, (offset, tail_start))

    @property
    def truncated(self) -> bool:
        return self._total > self._window or (
            self._max_lines is not None and self._newlines > self._max_lines
        )

    def shown_text(self) -> str:
        """What the model is shown of this stream (tail, or head + tail)."""
        with self._lock:
            head, tail, total = bytes(self._head), bytes(self._tail), self._total
        if not self.truncated:
            data = head + tail
            return data.decode("utf-8", errors="replace")
        tail = tail[utf8_skip_partial(tail) :]
        if not head:
            return tail.decode("utf-8", errors="replace")
        head = head[: utf8_safe_end(head)]
        omitted = total - len(head) - len(tail)
        return (
            head.decode("utf-8", errors="replace")
            + f"\n[... {omitted} bytes omitted ...]\n"
            + tail.decode("utf-8", errors="replace")
        )

    def _partial_first_line(self) -> int:
        """The bytes of the kept tail before its first line start, when it starts
        mid-line (0 when it starts at one, or holds no line start at all)."""
        with self._lock:
            if not self.truncated or self._head or self._tail_at_line:
                return 0
            cut = self._tail.find(b"\n")
            return cut + 1 if 0 <= cut < len(self._tail) - 1 else 0

    def view(self, artifact_id: str | None, line_cap: int) -> StreamView:
        """What the model is shown of this stream (artifact render mode)."""
        from .view import stream_view

        with self._lock:
            head, tail, total, newlines = (
                bytes(self._head),
                bytes(self._tail),
                self._total,
                self._newlines,
            )
        truncated = self.truncated

        def view_of(shown: bytes) -> StreamView:
            return stream_view(
                head,
                shown,
                total,
                newlines,
                truncated=truncated,
                artifact_id=artifact_id,
                line_cap=line_cap,
                max_lines=self._max_lines,
            )

        scan = self._scan
        if scan is None or artifact_id is None or not truncated:
            return view_of(tail)
        from .failures import quote_budget, with_quotes

        return with_quotes(view_of, tail, total, scan, artifact_id, quote_budget(self._window))

    def finish(self, source_update: dict[str, Any]) -> CollectedOutput:
        """Close the copies and describe the stream. Idempotent."""
        if self._result is not None:
            return self._result
        self._flush_redactor()
        if self._beside is not None:
            self._beside.close()  # the scan and the legacy file have every byte
        if self._scan is not None:
            self._scan.finish()
        manifest = self.redactions
        if manifest is not None and manifest.total:
            source_update = {**source_update, "redactions": manifest.as_json()}
        elif self._unredacted:
            source_update = {**source_update, "redactions": {"off": True}}
        spill_path = self._spill.close() if self._spill is not None else None
        artifact: ArtifactRef | None = None
        shown = self.shown_text()
        if self._sink is not None:
            # The spill file follows its artifact (deleted with it) where the store
            # is on this machine; a remote store drops the path. What the model is
            # shown of it inline goes to the context ledger.
            update = {**source_update, "shown_bytes": len(shown.encode())}
            if spill_path is not None:
                update = {**update, "spill": {"path": spill_path, "bytes": self._total}}
            from .sink import close_bounded

            artifact, error = close_bounded(self._sink, update, self._total)
            if error:  # the store's final account (how much it kept) over the first symptom
                self.storage_error = error
            if artifact is not None and self.storage_error and artifact.state == "writing":
                artifact = artifact._replace(state="failed")
        self._result = CollectedOutput(
            text=shown,
            truncated=self.truncated,
            skipped_bytes=self._partial_first_line(),
            total_bytes=self._total,
            artifact=artifact,
            spill_path=spill_path,
            storage_error=self.storage_error,
            redacted=manifest.summary() if manifest is not None and manifest.total else None,
        )
        return self._result
