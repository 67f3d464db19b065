"""A harness's own shell through overspill: a stream written as it comes up to a
head, and what follows it once the command has ended.

A person watching a harness's session sees a command's output as it is written,
and the model of a command that prints little must read exactly what it would
have read without overspill. So the first ``head`` bytes of a stream go out at
once (masked, as the store keeps them) and the next ``tail`` bytes wait in
memory. A stream that ends within ``head + tail`` is then written whole: not a
byte differs from the command's own. Past that, memory keeps the last ``tail``
bytes, and when the command ends ``remainder`` gives the line that says which
bytes are not shown (and the call that reads them), the last lines from a line
start, and the truncation line -- all inside the harness's own cut.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from overspill.artifacts.newlines import count_newlines

if TYPE_CHECKING:
    from .results import CollectedOutput


class LiveHead:
    """The executor's echo for one stream of a harness's shell (see the module)."""

    def __init__(self, fd: int, head: int, tail: int) -> None:
        self._fd = fd
        self._head = head
        self._tail_cap = tail
        self._written = 0  # bytes of the head written to ``fd``
        self._tail = bytearray()  # the last ``tail`` bytes past the head
        self._total = 0
        self._newlines = 0
        self._head_nl = 0  # newlines in the head
        self._ended_line = True  # whether the last byte written ended a line
        self._broken = False  # the harness stopped reading: the command goes on

    def __call__(self, chunk: bytes | memoryview) -> None:
        view = memoryview(chunk)
        self._total += len(view)
        self._newlines += count_newlines(view)
        if self._written < self._head:
            now = view[: self._head - self._written]
            self._written += len(now)
            self._head_nl += count_newlines(now)
            self._write(now)
            view = view[len(now) :]
        if view:
            self._tail += view
            if len(self._tail) > self._tail_cap:
                del self._tail[: len(self._tail) - self._tail_cap]

    def _write(self, data: memoryview) -> None:
        if self._broken or not data:
            return
        self._ended_line = data[-1] == 10
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError:
            self._broken = True

    @property
    def whole(self) -> bool:
        """Whether the stream fits the head and the tail: shown whole, unchanged."""
        return self._total <= self._head + self._tail_cap

    def remainder(self, out: CollectedOutput) -> bytes:
        """What follows the head once the stream has ended: the rest of it when it
        fits, else the gap, the tail from a line start and the truncation line."""
        if self.whole:
            return bytes(self._tail[len(self._tail) - (self._total - self._written) :])
        from overspill.artifacts.utf8 import utf8_skip_partial

        from .results import StreamView
        from .view import DEFAULT_LINE_CAP, count_lines
        from .wording import gap_line, truncation_line

        art = out.artifact
        stored = art is not None and art.state != "failed" and not out.storage_error
        artifact_id = art.id if art is not None and stored else None
        tail = bytes(self._tail)
        skip = utf8_skip_partial(tail)
        nl = tail.find(b"\n", skip, skip + DEFAULT_LINE_CAP)
        mid_line = not (0 <= nl < len(tail) - 1)
        if not mid_line:
            skip = nl + 1
        shown = tail[skip:]
        start = self._total - len(tail) + skip
        ends_nl = shown.endswith(b"\n")
        total_lines = count_lines(self._newlines, self._total, ends_nl)
        first = total_lines - count_lines(shown.count(b"\n"), len(shown), ends_nl) + 1
        cut = self._written > 0 and not self._ended_line
        view = StreamView(
            "",
            start,
            self._total,
            first,
            total_lines,
            total_lines,
            mid_line,
            self._written,
            head_lines=self._head_nl,
            head_cut_line=cut,
        )
        lead = b"" if self._ended_line else b"\n"
        gap = gap_line(self._written, start, artifact_id).encode()
        end = b"" if ends_nl else b"\n"
        marker = truncation_line(out, view, "artifact").encode()
        return lead + gap + b"\n" + shown + end + marker + b"\n"
