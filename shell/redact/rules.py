"""The detectors: one rule per kind of secret, each found from a literal trigger.

Every rule names the literal(s) a secret of its kind must contain (its
*triggers*: ``ghp_`` for a GitHub token, ``://`` for a password in a URL), and
the expression that confirms the secret around a trigger and says which part to
mask. The prefilter looks for triggers only (one pass over the stream, at
memory speed); a rule's expression runs only where its trigger is, so ordinary
output costs the prefilter and nothing else.

A rule's expression is matched *at* its trigger (a secret never starts before
it) and a secret never extends past ``max_len`` bytes after it: that bounds what
the stream redactor holds back, and bytes before a trigger never wait.
Formats are the public ones; the values in tests are generated, never real.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple


class LazyPattern:
    """An expression compiled the first time a trigger asks for it: most commands
    print no trigger at all, and compiling every rule costs ~3 ms of each run."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: bytes, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[bytes] | None = None

    @property
    def compiled(self) -> re.Pattern[bytes]:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    def match(self, data: bytes | bytearray, pos: int, end: int) -> re.Match[bytes] | None:
        return self.compiled.match(data, pos, end)

    def finditer(self, data: bytes | bytearray) -> Iterator[re.Match[bytes]]:
        return self.compiled.finditer(data)


class Rule(NamedTuple):
    name: str
    triggers: tuple[bytes, ...]
    # Matched with ``match`` at the trigger's position; the secret is ``group``
    # of the match.
    pattern: LazyPattern
    group: int = 0
    keep: int = 0  # leading bytes of the secret left readable (a public prefix)
    max_len: int = 512
    word: bool = False  # the match must not follow a letter, digit, "_" or "-"
    # For a trigger that ordinary output is full of (``://`` in every log of
    # URLs): a looser expression, starting with the trigger, that every secret of
    # the rule matches. Hyperscan looks for it instead of the bare trigger, so a
    # URL without a password costs nothing (see ``prefilter.HyperscanPrefilter``).
    candidate: bytes | None = None


# A token starts a word: checked by the redactor on the byte before a match (a
# lookbehind at the front of the expression would cost ``re`` its fast literal
# scan: 85 MB/s instead of 2,500).
WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _rule(
    name: str,
    triggers: Sequence[bytes],
    pattern: str,
    *,
    group: int = 0,
    keep: int = 0,
    max_len: int = 512,
    flags: int = 0,
    word: bool = False,
    candidate: bytes | None = None,
) -> Rule:
    return Rule(
        name,
        tuple(triggers),
        LazyPattern(pattern.encode(), flags),
        group,
        keep,
        max_len,
        word,
        candidate,
    )


def _cases(word: str) -> list[bytes]:
    """A word's triggers in the cases headers and configs spell it."""
    return sorted({w.encode() for w in (word, word.lower(), word.upper(), word.capitalize())})


BUILTIN: tuple[Rule, ...] = (
    _rule("private_key", [b"-----BEGIN "], r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
          r"(.*?)(?:-----END |\Z)", group=1, max_len=64 * 1024, flags=re.S),
    _rule("aws_access_key_id", [b"AKIA", b"ASIA", b"ABIA", b"ACCA"],
          r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])", keep=4, max_len=20, word=True),
    _rule("aws_secret_access_key", [*_cases("secret_access_key"), b"SecretAccessKey"],
          r"(?i)secret_?access_?key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
          group=1, max_len=120),
    _rule("github_token", [b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"],
          r"gh[pousr]_[A-Za-z0-9]{36,251}(?![A-Za-z0-9])", keep=4, max_len=255, word=True),
    _rule("github_pat", [b"github_pat_"], r"github_pat_[A-Za-z0-9_]{22,244}", keep=11,
          max_len=255, word=True),
    _rule("gitlab_token", [b"glpat-"], r"glpat-[A-Za-z0-9_-]{20,100}", keep=6, max_len=106, word=True),
    _rule("slack_token", [b"xoxa-", b"xoxb-", b"xoxp-", b"xoxr-", b"xoxs-", b"xoxe-"],
          r"xox[abprse]-[A-Za-z0-9-]{10,250}", keep=5, max_len=255, word=True),
    _rule("slack_webhook", [b"hooks.slack.com/services/"],
          r"hooks\.slack\.com/services/(T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+)", group=1,
          max_len=200),
    _rule("stripe_live_key", [b"sk_live_", b"rk_live_"],
          r"[sr]k_live_[A-Za-z0-9]{16,247}", keep=8, max_len=255, word=True),
    _rule("google_api_key", [b"AIza"], r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", keep=4,
          max_len=39, word=True),
    _rule("anthropic_key", [b"sk-ant-"], r"sk-ant-[A-Za-z0-9_-]{20,250}", keep=7,
          max_len=257, word=True),
    _rule("openai_key", [b"sk-"],
          r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,250}", keep=3,
          max_len=260, word=True),
    _rule("npm_token", [b"npm_"], r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", keep=4,
          max_len=40, word=True),
    _rule("pypi_token", [b"pypi-AgEIcHlwaS5vcmc"], r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
          keep=5, max_len=4096),
    _rule("huggingface_token", [b"hf_"], r"hf_[A-Za-z]{34}(?![A-Za-z0-9])", keep=3,
          max_len=37, word=True),
    _rule("jwt", [b"eyJ"],
          r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", keep=3,
          max_len=8192, word=True),
    _rule("url_password", [b"://"],
          r"://[^\s/:@'\"<>]{0,256}:([^\s/@'\"<>]{1,256})@", group=1, max_len=520,
          # The same without its bounds (Hyperscan compiles bounded repeats slowly).
          candidate=rb"://[^\s/:@'\"<>]*:[^\s/@'\"<>]*@"),
    _rule("authorization_header", _cases("authorization"),
          # The scheme word is never taken for the credential (a boundary right after
          # "Bearer " must not let "Bearer" pass as the whole secret).
          r"(?i)authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest|negotiate)"
          r"\s+|(?!bearer|basic|token|digest|negotiate))([^\s\"',;]{4,4096})", group=1,
          max_len=4200),
)  # fmt: skip


MIN_KNOWN = 8  # a known value shorter than this is too common to mask ("true", "1")
MAX_KNOWN = 1024


def known_value_rules(values: Iterable[tuple[str, str]]) -> list[Rule]:
    """Rules for values known to be secret (the credentials scrubbed from the
    child's environment), as CI masks them: the value itself, URL-encoded, and in
    base64 at each of its three alignments inside a longer encoding."""
    from urllib.parse import quote, quote_plus

    rules = []
    for name, value in values:
        raw = value.encode()
        if not MIN_KNOWN <= len(raw) <= MAX_KNOWN:
            continue
        forms = {raw, quote(value, safe="").encode(), quote_plus(value).encode()}
        forms |= _base64_forms(raw)
        forms = {f for f in forms if len(f) >= MIN_KNOWN}
        pattern = b"|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
        rules.append(
            Rule(
                f"env:{name}",
                tuple(sorted(forms)),
                LazyPattern(pattern),
                max_len=max(map(len, forms)),
            )
        )
    return rules


def _base64_forms(raw: bytes) -> set[bytes]:
    """The characters of ``raw``'s base64 that do not depend on its neighbours, for
    each of the three places it can start in a longer encoded stream."""
    import base64

    forms = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw)
        lead = (shift * 4 + 2) // 3  # characters touched by the padding bytes before it
        # The last group, when partial, ends in a character that also holds bits
        # of the byte after it (and the padding): drop both.
        end = len(encoded) - {0: 0, 1: 3, 2: 2}[(shift + len(raw)) % 3]
        core = encoded[lead:end]
        forms.add(core)
        forms.add(core.replace(b"+", b"-").replace(b"/", b"_"))  # the URL-safe alphabet
    return forms


def user_rules(patterns: Iterable[str]) -> list[Rule]:
    """An admin's own patterns: each a regular expression whose whole match (or
    first group) is masked, found by a search of every chunk (no trigger)."""
    rules = []
    for i, text in enumerate(patterns):
        compiled = re.compile(text.encode())  # a bad pattern fails here, at the boundary
        rule = Rule(
            f"custom:{i + 1}", (), LazyPattern(text.encode()), group=min(1, compiled.groups)
        )
        rules.append(rule)
    return rules
