"""The failure-like lines of the part of an output a model is not shown.

A truncated stream shows its tail, and an error printed early in a long build
sits in the part left out: a model sees it only if it thinks to grep. So every
byte of an overflowing stream (masked, as stored) also passes a ``FailureScan``,
which counts the lines matching the failure patterns and keeps the first few;
the view quotes those of the part not shown, within a budget taken from what it
shows, with their line numbers, the count and the exact ``artifact_grep`` call
that lists them all (``quote_block``).

The patterns are RE2 with grep's own options (``never_nl``, ``(?m)``), joined
into one alternation: the printed call finds the very lines the count counted.
Cost: one RE2 pass (~550 MB/s on log lines, see ``bench/cli.py``); each matching
line costs Python work, so the count stops at ``MAX_COUNTED`` and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from overspill.artifacts.errors import ConfigurationError
from overspill.artifacts.newlines import count_newlines
from overspill.artifacts.utf8 import utf8_safe_end, utf8_skip_partial

from .config import DEFAULT_FAILURE_PATTERNS
from .failure_literals import LiteralFinder, literal_finder
from .results import StreamView
from .view import clean_line
from .wording import call, quotes

MAX_COUNTED = 10_000  # matching lines counted before the count stops
KEEP = 16  # hits kept in stream order; a view quotes at most QUOTED of them
QUOTED = 5
EXCERPT = 160  # bytes of a quoted line (a window around the match when longer)
LONG_LINE = 64 * 1024  # a line still open past this is searched as it grows
OVERLAP = 1024  # bytes of such a line kept for a match across two chunks


class FailureHit(NamedTuple):
    line: int
    start: int  # stream offset of the line's start
    text: str  # the line, or EXCERPT bytes around the match, as shown


# What every match of the default patterns holds, in any case: a block holding
# none of them is not searched at all (``failure_literals``: Hyperscan, else
# StringZilla; both fold as RE2's (?i) does, the Kelvin sign for k included).
DEFAULT_LITERALS = (
    *("rror", "fatal", "panic", "traceback", "xception", "fail", "err!"),
    *("not found", "no such file", "permission denied", "segmentation fault", "core dumped"),
    *("undefined reference", "conflict"),
)
_SEAM = 4 * max(map(len, DEFAULT_LITERALS))  # UTF-8: a folded letter may take 3 bytes


def joined_pattern(setting: str) -> str | None:
    """The setting (one pattern per line) as the one alternation grep takes; None
    when it holds no pattern (quotes are off)."""
    patterns = [line.strip() for line in setting.splitlines() if line.strip()]
    return "|".join(f"(?:{p})" for p in patterns) or None


class FailureMatcher:
    """The patterns, compiled on first use: a command that never overflows never
    pays for RE2's import (~4 ms). ``literals``: strings one of which every match
    holds, in some case (known for the default patterns only). ``default``: these
    are the default patterns, which ``artifact_grep {"failures": true}`` names
    (the call the quotes print is then short)."""

    def __init__(
        self, pattern: str, literals: Sequence[str] = (), *, default: bool = False
    ) -> None:
        self.pattern = pattern
        self.literals = tuple(literals)
        self.default = default
        self._regex: Any = None

    @property
    def regex(self) -> Any:
        if self._regex is None:
            self._regex = _compile(self.pattern)
        return self._regex


def _compile(pattern: str) -> Any:
    import re2

    options = re2.Options()
    options.never_nl = True  # as artifact_grep compiles it: no match across lines
    options.never_capture = True
    options.log_errors = False
    try:
        return re2.compile(b"(?m)" + pattern.encode(), options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "syntax error"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", errors="replace")
        raise ConfigurationError(
            f"invalid setting OVERSPILL_FAILURE_PATTERNS: {reason} in {pattern!r}"
        ) from None


def failure_matcher(setting: str) -> FailureMatcher | None:
    """The setting (one pattern per line; empty: off), compiled now unless it is
    the default (known to compile; its literals prefilter the search)."""
    pattern = joined_pattern(setting)
    if pattern is None:
        return None
    if setting == DEFAULT_FAILURE_PATTERNS:
        return FailureMatcher(pattern, DEFAULT_LITERALS, default=True)
    matcher = FailureMatcher(pattern)
    matcher.regex  # noqa: B018 -- a bad pattern fails at load, not mid-run
    return matcher


_DEFAULT: list[FailureMatcher] = []


def default_matcher() -> FailureMatcher:
    """The default patterns' matcher, made once (saved results use these)."""
    if not _DEFAULT:
        matcher = failure_matcher(DEFAULT_FAILURE_PATTERNS)
        assert matcher is not None
        _DEFAULT.append(matcher)
    return _DEFAULT[0]


class FailureScan:
    """Counts the matching lines of a stream fed in chunks of any size and keeps
    the first ``KEEP`` of those starting at or after ``keep_from`` (a saved
    result's head is shown, so its hits need no quoting). Holds at most one open
    line, of at most ``LONG_LINE`` bytes, whatever the stream."""

    def __init__(self, matcher: FailureMatcher, *, keep_from: int = 0) -> None:
        self.matcher = matcher
        # RE2 is imported and the pattern compiled at the first block that holds a
        # literal (never, for most outputs: ~5 ms of a harness's shell call).
        self._literals: LiteralFinder | None = None
        if matcher.literals:
            import stringzilla  # (rfind on a memoryview, without copying it)

            self._literals = literal_finder(matcher.literals)
            self._rfind = stringzilla.rfind
        self._keep_from = keep_from
        self.count = 0
        self.capped = False  # MAX_COUNTED reached: the rest was not searched
        self.hits: list[FailureHit] = []
        self._open = b""  # the open line (its last OVERLAP bytes once long)
        self._open_at = 0  # stream offset of _open[0]
        self._line = 1  # number of the open line
        self._line_start = 0
        self._line_hit = False  # the open line is counted already
        # The open line holds no literal (it came in through ``_skip`` only), so
        # the pattern cannot match it: a giant line is not searched as it grows.
        self._open_clean = True

    def feed(self, chunk: bytes | bytearray | memoryview, newlines: int | None = None) -> None:
        """``newlines``: the chunk's newline count, when the caller has it."""
        if self.capped or not chunk:
            return
        if self._literals is not None and self._skip(chunk, newlines):
            return
        data = self._open + bytes(chunk) if self._open else bytes(chunk)
        base = self._open_at
        self._open_clean = False
        end = data.rfind(b"\n") + 1
        if end:
            self._scan_lines(data, base, end)
            self._open, self._open_at = data[end:], base + end
            self._line_start, self._line_hit = base + end, False
        else:
            self._open = data
        self._bound_open()

    def _skip(self, chunk: bytes | bytearray | memoryview, newlines: int | None) -> bool:
        """The fast path: where neither the chunk nor the open line with the chunk's
        start holds a literal, there is no match, and the chunk is not copied;
        only its lines are counted, and its open end kept."""
        if not self._open_clean:  # the open line may match: it is searched whole
            return False
        literals = self._literals
        assert literals is not None
        # A literal across the seam starts in the open line's last bytes (the
        # rest of it was searched as it came).
        seam = self._open[-_SEAM:] + bytes(chunk[:_SEAM])
        if literals.found(chunk) or literals.found(seam):
            return False
        end = self._rfind(chunk, b"\n") + 1
        if not end:
            self._open += bytes(chunk)
        else:
            self._line += count_newlines(chunk) if newlines is None else newlines
            self._open_at += len(self._open) + end
            self._open = bytes(chunk[end:])
            self._line_start, self._line_hit = self._open_at, False
            self._open_clean = True
        self._bound_open()
        return True

    def _bound_open(self) -> None:
        if len(self._open) > LONG_LINE and not self.capped:
            if not self._open_clean:
                self._scan_open()
            keep = self._open[-OVERLAP:]
            self._open_at += len(self._open) - len(keep)
            self._open = keep

    def finish(self) -> None:
        """The stream ended: its last line, if it has no newline, counts too."""
        if self._open and not self.capped and not self._open_clean:
            self._scan_open()
        self._open = b""

    def _scan_lines(self, data: bytes, base: int, end: int) -> None:
        """The complete lines ``data[:end]``; the first may be the rest of the open line."""
        regex = self.matcher.regex
        line, counted, pos = self._line, 0, 0
        while pos < end:
            m = regex.search(data, pos, end)
            if m is None:
                break
            at = m.start()
            ls = data.rfind(b"\n", 0, at) + 1
            le = data.find(b"\n", at, end)
            line += data.count(b"\n", counted, ls)
            counted = ls
            if ls or not self._line_hit:
                start = base + ls if ls else self._line_start
                self._hit(line, start, data, ls, le, at)
                if self.capped:
                    return
            pos = le + 1
        self._line = line + data.count(b"\n", counted, end)

    def _scan_open(self) -> None:
        if self._line_hit:
            return
        m = self.matcher.regex.search(self._open)
        if m is not None:
            self._line_hit = True
            self._hit(self._line, self._line_start, self._open, 0, len(self._open), m.start())

    def _hit(self, line: int, start: int, data: bytes, ls: int, le: int, at: int) -> None:
        self.count += 1
        if len(self.hits) < KEEP and start >= self._keep_from:
            self.hits.append(FailureHit(line, start, _excerpt(data, ls, le, at)))
        if self.count >= MAX_COUNTED:
            self.capped = True


def _excerpt(data: bytes, ls: int, le: int, at: int) -> str:
    """The line ``data[ls:le]`` as shown, or EXCERPT bytes of it around ``at``."""
    lo, hi = ls, le
    if le - ls > EXCERPT:
        lo = max(ls, at - EXCERPT // 4)
        hi = min(le, lo + EXCERPT)
        lo = max(ls, hi - EXCERPT)
        lo += utf8_skip_partial(data[lo:hi])
        hi = lo + utf8_safe_end(data[lo:hi])
    text, _ = clean_line(data[lo:hi])
    return ("…" if lo > ls else "") + text + ("…" if hi < le else "")


def count_in(matcher: FailureMatcher, pieces: Iterable[bytes]) -> int:
    """Matching lines in shown bytes (each piece whole lines, or a stream's end)."""
    total = 0
    for piece in pieces:
        scan = FailureScan(matcher)
        scan.feed(piece)
        scan.finish()
        total += scan.count
    return total


def quote_block(
    scan: FailureScan,
    quoted: Sequence[FailureHit],
    unseen: int,
    part: str,
    artifact_id: str,
) -> str:
    """The lines quoted from the part not shown (``part`` names it), each with
    its number, between a line that counts them all and one that ends them."""
    grep = grep_call(scan.matcher, artifact_id)
    rows = [(h.line, h.text) for h in quoted]
    return quotes(rows, unseen, part, grep, counted=MAX_COUNTED if scan.capped else None)


def grep_call(matcher: FailureMatcher, artifact_id: str) -> str:
    """The call that lists every line ``matcher`` counts: by name for the default
    patterns (some 900 bytes written out), else the pattern itself."""
    if matcher.default:
        return call("artifact_grep", id=artifact_id, failures=True)
    return call("artifact_grep", id=artifact_id, pattern=matcher.pattern)


def quote_budget(window: int) -> int:
    """Bytes of a view's window the quotes may take (the tail gives them up)."""
    return min(2_000, window // 4)


def with_quotes(
    view_of: Callable[[bytes], StreamView],
    tail: bytes,
    total: int,
    scan: FailureScan,
    artifact_id: str,
    budget: int,
) -> StreamView:
    """The view of a truncated stream (``view_of`` a tail of it), with the failure-
    like lines of the part not shown quoted before the tail when they fit in
    ``budget``: the tail starts that many bytes later, so the whole stays within
    the window. Counts are exact: the lines of the shown tail are counted again
    and taken off the stream's count."""
    view = view_of(tail)
    if view.binary or view.head_end or not scan.count:
        return view
    quoted = [h for h in scan.hits if h.start < view.start][:QUOTED]
    while quoted:  # numbers only grow shorter from here (fewer unseen, same digits)
        draft = quote_block(
            scan, quoted, scan.count, f"the part not shown (bytes 0-{total})", artifact_id
        )
        reserve = len(draft.encode())
        if reserve <= budget:
            break
        quoted.pop()
    if not quoted or reserve >= len(tail):
        return view
    view = view_of(tail[reserve:])
    shown = tail[len(tail) - (total - view.start) :]
    if view.mid_line:  # the cut line is part of what is not shown
        shown = shown[shown.find(b"\n") + 1 :] if b"\n" in shown else b""
    unseen = scan.count - count_in(scan.matcher, [shown])
    part = f"the part not shown (bytes 0-{view.start})"
    block = quote_block(scan, quoted, unseen, part, artifact_id)
    return view._replace(text=block + view.text, quoted=tuple(h.line for h in quoted))


def quote_omitted(
    scan: FailureScan,
    head: bytes,
    tail: bytes,
    tail_at_line: bool,
    total: int,
    artifact_id: str,
    budget: int,
) -> str:
    """For a saved result's preview (``head``, then ``tail``, of ``total`` bytes):
    the failure-like lines of the omitted middle, quoted within a quarter of the
    budget, or "". Counts exact: the shown head's and tail's lines are taken off;
    a tail that does not start a line (``tail_at_line`` False) has its first line
    counted as omitted, where it starts."""
    if not scan.count:
        return ""
    gap_end = total - len(tail)
    quoted = [h for h in scan.hits if len(head) <= h.start < gap_end][:QUOTED]
    if not quoted:
        return ""
    if not tail_at_line:
        tail = tail[tail.find(b"\n") + 1 :] if b"\n" in tail else b""
    unseen = scan.count - count_in(scan.matcher, [head, tail])
    part = f"the omitted part (bytes {len(head)}-{gap_end})"
    while quoted:
        block = quote_block(scan, quoted, unseen, part, artifact_id)
        if len(block.encode()) <= quote_budget(budget):
            return block
        quoted.pop()
    return ""
