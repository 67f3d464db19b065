"""Redaction: secrets masked in a stream before any byte is kept or shown.

``rules.py`` holds the detectors, ``prefilter.py`` the one pass that finds their
triggers, ``stream.py`` the redactor that masks across chunk boundaries and the
manifest it keeps. ``ruleset_for`` builds the rules a run uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from overspill.artifacts.errors import ConfigurationError

from .rules import BUILTIN, known_value_rules, user_rules
from .stream import Manifest, RuleSet, StreamRedactor, redact_once

RULE_NAMES = tuple(r.name for r in BUILTIN)
_BUILTIN_SETS: dict[frozenset[str], RuleSet] = {}
_KNOWN_SETS: dict[tuple[object, ...], RuleSet] = {}  # a server runs many commands
_KNOWN_CACHE = 64


def ruleset_for(
    known: Iterable[tuple[str, str]] = (),
    *,
    disabled: Iterable[str] = (),
    patterns: Iterable[str] = (),
) -> RuleSet:
    """The built-in rules (less those ``disabled``), one per known secret value,
    and an admin's own ``patterns``."""
    off = frozenset(disabled)
    unknown = sorted(off - set(RULE_NAMES))
    if unknown:
        raise ConfigurationError(
            f"invalid setting OVERSPILL_REDACT_DISABLE: no rule {unknown[0]!r} "
            f"(rules: {', '.join(RULE_NAMES)})"
        )
    known = tuple(known)
    patterns = tuple(patterns)
    builtin = [r for r in BUILTIN if r.name not in off]
    if not known and not patterns:
        cached = _BUILTIN_SETS.get(off)
        if cached is None:
            cached = _BUILTIN_SETS[off] = RuleSet(builtin)
        return cached
    key = (off, known, patterns)
    found = _KNOWN_SETS.get(key)
    if found is not None:
        return found
    try:
        custom = user_rules(patterns)
    except re.error as exc:
        raise ConfigurationError(
            f"invalid setting OVERSPILL_REDACT_PATTERNS: {exc} in {exc.pattern!r}"
        ) from None
    rules = RuleSet([*builtin, *known_value_rules(known), *custom])
    if len(_KNOWN_SETS) >= _KNOWN_CACHE:
        _KNOWN_SETS.clear()
    _KNOWN_SETS[key] = rules
    return rules


from .policy import OFF, Redaction  # noqa: E402  (uses ruleset_for)

__all__ = [
    "OFF",
    "RULE_NAMES",
    "Manifest",
    "Redaction",
    "RuleSet",
    "StreamRedactor",
    "redact_once",
    "ruleset_for",
]
