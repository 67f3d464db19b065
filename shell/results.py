"""What a run returns. ``CollectedOutput`` and the ``run --json`` shape are contract.

Plain immutable records (``NamedTuple``), neither pydantic models nor
dataclasses: ``overspill run`` builds one per command, and importing pydantic
(~100 ms) or ``dataclasses`` (which loads ``inspect``: ~9 ms, a fifth of a short
command's whole cost) is more than the command itself. ``as_json`` is their
JSON form.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class StreamView(NamedTuple):
    """What of one stream is shown, and where it sits in the whole stream (``shell.view``
    makes it; the marker in ``shell.wording`` says it)."""

    text: str
    start: int  # first shown byte of the tail (whole-stream offset)
    end: int  # end of the shown bytes
    first_line: int  # the line that holds ``start``
    last_line: int
    total_lines: int
    mid_line: bool  # ``start`` is not at a line start
    head_end: int  # bytes [0, head_end) shown before a gap (head_tail mode), else 0
    binary: bool = False
    escapes_removed: bool = False
    # (line, start, end) of the bytes left out of each clipped line (inside the
    # shown range, so not shown although between ``start`` and ``end``).
    clipped: tuple[tuple[int, int, int], ...] = ()
    # Numbers of the failure-like lines of the part not shown quoted before the tail.
    quoted: tuple[int, ...] = ()
    # The whole lines of a head (head_tail mode), and whether it ends inside the next.
    head_lines: int = 0
    head_cut_line: bool = False
    # The most lines the client keeps of an answer, where it cuts by lines: the
    # call that reads on asks for lines then, not bytes.
    max_lines: int | None = None

    @property
    def shown_bytes(self) -> int:
        return self.head_end + self.end - self.start - sum(e - s for _, s, e in self.clipped)


class ArtifactRef(NamedTuple):
    id: str
    state: str
    size_bytes: int
    total_bytes: int
    sha256: str | None


class CollectedOutput(NamedTuple):
    text: str
    truncated: bool
    total_bytes: int
    artifact: ArtifactRef | None = None
    spill_path: str | None = None
    storage_error: str | None = None
    # "2 secrets redacted (github_token, url_password)": masked, same length.
    redacted: str | None = None
    # A truncated tail that starts mid-line: the bytes before its first line
    # start. ``text`` keeps them (the legacy form shows the tail as it is); the
    # ``run --json`` text starts after them.
    skipped_bytes: int = 0


class ExecResult(NamedTuple):
    exit_code: int | None
    signal: str | None
    timed_out: bool
    aborted: bool
    timeout_ms: float | None
    stdout: CollectedOutput
    stderr: CollectedOutput
    text: str
    run_id: str
    duration_ms: float

    def contract_json(self) -> dict[str, Any]:
        """The ``overspill run --json`` object (extra fields are allowed to grow)."""
        data: dict[str, Any] = as_json(self)
        if data["timeout_ms"] is not None and float(data["timeout_ms"]).is_integer():
            data["timeout_ms"] = int(data["timeout_ms"])
        for name in ("stdout", "stderr"):
            stream = data[name]
            if stream["skipped_bytes"]:  # from the first line start on
                stream["text"] = stream["text"].split("\n", 1)[1]
        return data


def exit_status(result: ExecResult, received: list[int]) -> int:
    """The exit status of a run as a process reports it: a signal the runner
    received (128+N), a timeout (124), the command's own signal (128+N) or exit
    code."""
    if received:
        return 128 + received[0]
    if result.timed_out:
        return 124
    if result.signal:
        import signal  # (only a command that a signal ended pays for it)

        try:
            return 128 + int(signal.Signals[result.signal])
        except KeyError:
            return 128
    return result.exit_code or 0


class BackgroundRead(NamedTuple):
    """One consuming read of a background job's output."""

    text: str
    stdout: str
    stderr: str
    lossy: bool
    running: bool
    next_offsets: tuple[int, int]


def as_json(record: Any) -> Any:
    """A record (and the records inside it) as plain JSON values."""
    if isinstance(record, tuple) and hasattr(record, "_asdict"):
        return {k: as_json(v) for k, v in record._asdict().items()}
    if isinstance(record, list | tuple):
        return [as_json(v) for v in record]
    return record
