"""Masking secrets in a stream as it passes, before any byte is kept or shown.

``StreamRedactor.feed`` takes the stream's chunks in order and gives back the
bytes that may move on, masked. A secret may be split anywhere by the chunking,
so the redactor holds back what could still be the start of one: the last few
bytes (a trigger cut in two) and, from a trigger on, at most its rule's
``max_len`` bytes -- kilobytes, never the stream. Output without a trigger near
its end moves on at once, so a live reader waits for nothing.

A mask has the secret's exact length: every byte but a newline or carriage
return becomes ``*`` (a rule may leave a public prefix readable, ``ghp_****``).
Sizes, offsets, line numbers and every continuation printed against the stored
bytes stay true. The manifest records where and by which rule, never a value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .prefilter import LARGE, Narrowing, Prefilter, StdlibPrefilter, fastest
from .rules import WORD, Rule

CUSTOM_REACH = 256  # the longest match of an admin's own pattern that is always found
MAX_SPANS = 1_000
_MATCH_EACH = 8  # up to this many triggers of a rule in a chunk: a match at each  # spans kept in a manifest; the counts by rule are always whole
_MASK = bytes(b if b in (10, 13) else 42 for b in range(256))  # all but LF and CR to "*"


class Span(NamedTuple):
    offset: int
    length: int
    rule: str


class Manifest:
    """What was redacted in one stream: counts by rule and the first spans."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.spans: list[Span] = []
        self.bytes = 0

    def add(self, offset: int, length: int, rule: str) -> None:
        self.counts[rule] = self.counts.get(rule, 0) + 1
        self.bytes += length
        if len(self.spans) < MAX_SPANS:
            self.spans.append(Span(offset, length, rule))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_json(self) -> dict[str, object]:
        """For an artifact's ``source.redactions`` (no value, only where and which)."""
        return {
            "count": self.total,
            "bytes": self.bytes,
            "rules": dict(sorted(self.counts.items())),
            "spans": [[s.offset, s.length, s.rule] for s in self.spans],
            "spans_complete": self.total <= MAX_SPANS,
        }

    def summary(self) -> str:
        """``3 secrets redacted (github_token, url_password)``, or ''."""
        if not self.total:
            return ""
        noun = "secret" if self.total == 1 else "secrets"
        return f"{self.total} {noun} redacted ({', '.join(sorted(self.counts))})"


class RuleSet:
    """Rules with their triggers gathered for one prefilter."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self.literals: list[bytes] = []
        self.owners: list[list[int]] = []  # literal index -> the rules it triggers
        index: dict[bytes, int] = {}
        for r, rule in enumerate(self.rules):
            for lit in rule.triggers:
                if lit not in index:
                    index[lit] = len(self.literals)
                    self.literals.append(lit)
                    self.owners.append([])
                self.owners[index[lit]].append(r)
        self.searched = [r for r, rule in enumerate(self.rules) if not rule.triggers]
        # A literal only token rules use is a trigger only at the start of a word.
        self.word_start = [all(self.rules[r].word for r in own) for own in self.owners]
        # A literal of one rule with a looser expression: the fast engine's form.
        self.narrow = [
            Narrowing(cand, self.rules[own[0]].max_len)
            if len(own) == 1 and (cand := self.rules[own[0]].candidate) is not None
            else None
            for own in self.owners
        ]
        self.guard = max((len(lit) for lit in self.literals), default=1) - 1
        if self.searched:  # a pattern's match cut by a chunk boundary is held whole
            self.guard = max(self.guard, CUSTOM_REACH)
        # Every proper start of a trigger: the end of a chunk is held back only as
        # far as it could be one (a live reader of "one\n" waits for nothing).
        self._small: Prefilter | None = None
        self._fast: Prefilter | None = None
        self._firsts = frozenset(lit[0] for lit in self.literals)
        self._starts = frozenset(lit[:k] for lit in self.literals for k in range(1, len(lit)))

    def fast_prefilter(self) -> Prefilter:
        """The engine a stream moves to past LARGE bytes: compiled once for the
        rule set, each stream with scratch space of its own (Hyperscan)."""
        if self._fast is None:
            self._fast = fastest(self.literals, self.word_start, self.narrow)
        sharing = getattr(self._fast, "sharing", None)
        return sharing() if sharing is not None else self._fast

    def small_prefilter(self) -> Prefilter:
        """The engine a stream starts on (no import, no compile: built once here)."""
        if self._small is None:
            self._small = StdlibPrefilter(self.literals)
        return self._small

    def held_back(self, data: bytes | bytearray | memoryview) -> int:
        """How many of the last bytes of ``data`` could begin a secret the next
        chunk completes (all ``guard`` bytes when patterns of one's own run)."""
        n = len(data)
        if self.searched:
            return min(n, self.guard)
        firsts = self._firsts
        for k in range(min(self.guard, n), 0, -1):
            if data[n - k] in firsts and bytes(data[n - k :]) in self._starts:
                return k
        return 0
        self.reach = max((rule.max_len for rule in self.rules), default=0)


class StreamRedactor:
    def __init__(self, rules: RuleSet, *, fast: bool = False) -> None:
        """``fast``: on the fastest engine from the first byte (a stream known to
        be large), not only past ``LARGE`` bytes."""
        self._rules = rules
        self._fast = fast and bool(rules.literals)
        self._pre: Prefilter = rules.fast_prefilter() if self._fast else rules.small_prefilter()
        self._held = b""
        self._waiting = False  # the held bytes start a possible secret (not only a guard)
        self._pos = 0  # stream offset of the first held byte
        self._fed = 0
        self._before = -1  # the last byte that moved on (a token must not follow a word)
        self._seen: set[tuple[int, str]] = set()  # spans recorded that are still held
        # Triggers the pass-through check found in the chunk (at their offsets in
        # held + chunk): the slow path takes them instead of searching again.
        self._found: list[tuple[int, int]] | None = None
        self.manifest = Manifest()

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes | memoryview]:
        """The pieces that may move on now (masked), in order; ``data`` may be a
        reused buffer: what is returned must be used before the next feed."""
        self._fed += len(data)
        if not self._fast and self._fed > LARGE and self._rules.literals:
            self._pre, self._fast = self._rules.fast_prefilter(), True
        return self._run(data, final=False)

    def finish(self) -> bytes:
        """Everything still held, masked: the stream has ended."""
        pieces = self._run(b"", final=True)
        return b"".join(bytes(p) for p in pieces)

    def _run(
        self, data: bytes | bytearray | memoryview, *, final: bool
    ) -> list[bytes | memoryview]:
        rules = self._rules
        held = self._held
        if not self._waiting and not final and not rules.searched:
            fast = self._pass_through(memoryview(data))
            if fast is not None:
                return fast
        buf = bytearray(held)
        buf += data
        guarded = len(buf) if final else len(buf) - rules.held_back(buf)
        emit = guarded
        spans: list[tuple[int, int, int]] = []  # (start, end, rule)
        size = len(buf)
        before = self._before
        settled: dict[int, list[int]] = {}  # rule -> triggers whose secret has all arrived
        hits, self._found = self._found, None
        for pos, lit in hits if hits is not None else self._pre.find(buf):
            for r in rules.owners[lit]:
                rule = rules.rules[r]
                if final or size - pos >= rule.max_len:
                    settled.setdefault(r, []).append(pos)
                    continue
                # It may continue past what has arrived: decide when it has (a
                # match that reaches the end of the buffer may grow).
                found = _confirm(rule, buf, pos, size, before)
                if found is None or found[1] >= size - 1:
                    emit = min(emit, pos)
                else:
                    spans.append((*found, r))
        for r, positions in settled.items():
            rule = rules.rules[r]
            if len(positions) <= _MATCH_EACH:
                for pos in positions:
                    found = _confirm(rule, buf, pos, min(size, pos + rule.max_len), before)
                    if found is not None:
                        spans.append((*found, r))
                continue
            # Many triggers (a log of URLs has hundreds of "://" a chunk): one
            # search of the buffer in C rather than a match per trigger in Python.
            last = size if final else size - rule.max_len
            for m in rule.pattern.finditer(buf):
                if m.start() > last:
                    break  # from here on, the per-trigger check above decides
                if _follows_word(rule, buf, m.start(), before):
                    continue
                start, end = m.span(rule.group)
                if end > start:
                    spans.append((start, end, r))
        for r in rules.searched:
            for m in rules.rules[r].pattern.finditer(buf):
                start, end = m.span(rules.rules[r].group)
                if end > start:
                    spans.append((start, end, r))
        self._mask(buf, spans)
        out = bytes(buf[:emit])
        if out:
            self._before = out[-1]
        self._held = bytes(buf[emit:])
        self._waiting = emit < guarded
        self._pos += emit
        self._seen = {seen for seen in self._seen if seen[0] >= self._pos}
        return [out] if out else []

    def _pass_through(self, view: memoryview) -> list[bytes | memoryview] | None:
        """The common case, without copying the chunk: no trigger in it, none where
        it meets the held guard bytes. The held bytes (never a trigger: they were
        searched as the end of the last chunk) and the chunk but its own last
        guard bytes move on. None when the slow path must run."""
        rules = self._rules
        guard = rules.guard
        held = self._held
        if len(view) < guard:  # what is held back may begin in the held bytes
            return None
        if held and self._pre.any(held + bytes(view[:guard])):
            return None
        found = list(self._pre.find(view))
        if found:  # (none starts in the held bytes or across them: checked above)
            self._found = [(pos + len(held), lit) for pos, lit in found]
            return None
        keep = rules.held_back(view)
        out: list[bytes | memoryview] = [held] if held else []
        if len(view) > keep:
            out.append(view[: len(view) - keep])
            self._before = view[len(view) - keep - 1]
        elif held:
            self._before = held[-1]
        self._pos += len(held) + len(view) - keep
        self._held = bytes(view[len(view) - keep :])
        return out

    def _mask(self, buf: bytearray, spans: list[tuple[int, int, int]]) -> None:
        done = 0  # spans overlap (a URL password that is also a known value): once each
        for start, end, r in sorted(spans):
            rule = self._rules.rules[r]
            lo = max(start + rule.keep, done)
            if end <= lo:
                continue
            buf[lo:end] = buf[lo:end].translate(_MASK)
            key = (self._pos + start, rule.name)
            if key not in self._seen:  # found again when held bytes are searched again
                self._seen.add(key)
                self.manifest.add(self._pos + start, end - start, rule.name)
            done = end


def _follows_word(rule: Rule, buf: bytearray, start: int, before: int) -> bool:
    """A token rule's match right after a letter, digit, "_" or "-" is part of a
    longer word (``task-`` is no ``sk-`` key): not a secret."""
    if not rule.word:
        return False
    prev = buf[start - 1] if start > 0 else before
    return prev in WORD


def _confirm(rule: Rule, buf: bytearray, pos: int, end: int, before: int) -> tuple[int, int] | None:
    """The span of ``rule``'s secret at the trigger at ``pos``, or None."""
    if _follows_word(rule, buf, pos, before):
        return None
    at = rule.pattern.match(buf, pos, end)
    if at is None:
        return None
    span = at.span(rule.group)
    return span if span[1] > span[0] else None


def redact_once(text: str, rules: RuleSet) -> tuple[str, Manifest]:
    """A whole string (a command line) masked in one go."""
    r = StreamRedactor(rules)
    data = text.encode()
    out = b"".join(bytes(p) for p in r.feed(data)) + r.finish()
    return out.decode("utf-8", errors="replace"), r.manifest
