"""What overspill knows of the agent harnesses it serves: the name each gives
itself in MCP's ``initialize``, and the size past which each cuts a tool's
answer before the model sees it.

A harness that cuts keeps a head and a tail of its own choosing and spills the
rest to a temp file of its own, so overspill's answer must stay under the cut
whole: its header, its window and the call that continues it. Each figure was
read off the harness, driven headless against a stand-in model endpoint that
records what the model receives (``tests/harnesses``), at the versions the tests
pin; the margin below each cut covers the harness's own wrapping.

Standard library only: ``overspill mcp`` picks the budget while it answers the
handshake.
"""

from __future__ import annotations

from typing import NamedTuple

from overspill.artifacts.bounds import DEFAULT_ANSWER_CHARS

STREAM_RESERVE = 2_000
"""Bytes a stream's own lines may add to its tail (the truncation line, a
redaction note): the executor's markers are bounded, not the window."""
MARKERS_RESERVE = 200
"""The ``[stderr]`` heading and the status markers that end a result."""
ANSWER_RESERVE = 2_000
"""What an artifact tool's answer adds to its content (header, footer, call)."""
LINES_RESERVE = 20
"""Lines an answer adds to what it shows (headers, markers, failure quotes)."""


class Harness(NamedTuple):
    key: str  # as ``overspill install`` names it
    client_names: tuple[str, ...]  # clientInfo.name at the MCP handshake
    cut_chars: int | None  # where it cuts a tool answer; None: not below our own bound
    note: str
    cut_lines: int | None = None  # ... and past how many lines, where it counts them


HARNESSES = (
    Harness(
        "claude-code",
        ("claude-code",),
        None,
        "passes an MCP answer whole up to _meta['anthropic/maxResultSizeChars'], which "
        "overspill sets to its own bound",
    ),
    Harness(
        "codex",
        ("codex-mcp-client",),
        40_000,
        "keeps 10,000 tokens (counted as 4 bytes each) of an answer, the middle cut out, "
        "for every model of its catalog; a model outside the catalog gets 10,000 bytes "
        "(set OVERSPILL_ANSWER_BUDGET=9000 for one)",
    ),
    Harness(
        "gemini",
        ("gemini-cli-mcp-client",),
        40_000,
        "keeps the first 8,000 and last 32,000 characters of an answer over 40,000 and "
        "spills the whole to a temp file",
    ),
    Harness(
        "opencode",
        ("opencode",),
        51_200,
        "cuts any tool's answer past 2,000 lines or 51,200 bytes and keeps the whole in a "
        "file of its own (its Truncate: MAX_LINES, MAX_BYTES)",
        cut_lines=2_000,
    ),
)

DEFAULT_ANSWER_BYTES = 2 * (64_000 + STREAM_RESERVE) + MARKERS_RESERVE
"""The most an answer holds for a client with no known cut: two full 64 kB
stream tails with their lines (the executor's own bound)."""


class Windows(NamedTuple):
    stdout: int
    stderr: int


class Budget(NamedTuple):
    """How big one answer of ``overspill mcp`` may be, and what that leaves for
    each part of it."""

    answer_bytes: int
    harness: str | None = None
    answer_lines: int | None = None  # a client that also cuts by lines (opencode)

    @property
    def read_lines(self) -> int | None:
        """The lines of one artifact tool answer's content, where lines are cut."""
        return None if self.answer_lines is None else max(10, self.answer_lines - LINES_RESERVE)

    @property
    def bash_lines(self) -> int | None:
        """The lines of both stream tails of a ``bash`` answer, where lines are cut."""
        return None if self.answer_lines is None else max(10, self.answer_lines - LINES_RESERVE)

    @property
    def read_bytes(self) -> int:
        """The content of one artifact tool answer (a window, a tail, grep rows)."""
        return max(1_000, min(DEFAULT_ANSWER_CHARS, self.answer_bytes - ANSWER_RESERVE))

    def stream_windows(self, configured: int) -> Windows:
        """The tail kept of each stream of a ``bash`` answer: the configured window,
        or less so both tails, their lines and the markers fit (stdout gets two
        thirds: it is where a command's result usually is)."""
        room = self.answer_bytes - 2 * STREAM_RESERVE - MARKERS_RESERVE
        if 2 * configured <= room:
            return Windows(configured, configured)
        return Windows(
            stdout=max(1_000, min(configured, room * 2 // 3)),
            stderr=max(1_000, min(configured, room // 3)),
        )


class ShellView(NamedTuple):
    """How a harness's own shell shows a command routed through overspill
    (``overspill --shell-prefix``): the first ``head`` bytes as they come, then at
    most the last ``tail`` -- with the gap line and the truncation line, inside the
    harness's cut -- and where the harness puts its session's id."""

    head: int
    tail: int
    session_env: str


SHELL_VIEWS = {
    # Claude Code shows a Bash result of up to 30,000 characters whole; past that,
    # a 2 KB preview of its own and a temp file. Head and tail (25,000 bytes) and
    # the two lines (under 2,000) stay below it with its "Exit code N" line.
    "claude-code": ShellView(head=10_000, tail=15_000, session_env="CLAUDE_CODE_SESSION_ID"),
}


def harness_of(client_name: str | None) -> Harness | None:
    for harness in HARNESSES:
        if client_name in harness.client_names:
            return harness
    return None


def harness_by_key(key: str) -> Harness | None:
    """The harness ``overspill install`` names ``key`` (None for one whose cut is
    not known: opencode, Cursor, Goose)."""
    return next((h for h in HARNESSES if h.key == key), None)


def budget_for(client_name: str | None, configured: int | None = None) -> Budget:
    """The budget for a client: ``configured`` (written at install time) when set,
    else under the cut of the harness that named itself, else the default."""
    harness = harness_of(client_name)
    key = harness.key if harness else None
    lines = harness.cut_lines * 9 // 10 if harness and harness.cut_lines else None
    if configured is not None:
        return Budget(configured, key, lines)
    if harness is not None and harness.cut_chars is not None:
        # Bytes, not characters: a UTF-8 answer of N bytes has at most N characters.
        # 10% below the cut leaves room for the harness's own wrapping.
        return Budget(harness.cut_chars * 9 // 10, key, lines)
    return Budget(DEFAULT_ANSWER_BYTES, key, lines)
