"""Sizes as people write them, the same in the CLI as in the web UI (dom.js's
parseBytes): 500000, 10MB, 1.5GiB, 1e9. k/M/G are decimal, KiB/MiB/GiB binary."""

from __future__ import annotations

import re

_FACTORS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "kib": 2**10,
    "m": 10**6,
    "mb": 10**6,
    "mib": 2**20,
    "g": 10**9,
    "gb": 10**9,
    "gib": 2**30,
    "t": 10**12,
    "tb": 10**12,
    "tib": 2**40,
}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?(?:e[0-9]+)?)\s*([a-z]*)")


def parse_size(text: str, what: str = "size") -> int:
    """Bytes in ``text``; ValueError naming ``what`` and an example otherwise."""
    m = _SIZE.fullmatch(text.strip().lower())
    if m is None or m.group(2) not in _FACTORS or len(m.group(1)) > 30:
        raise ValueError(f"{what}: {text!r} is not a size (e.g. 500000, 10MB, 1.5GiB, 1e9)")
    return round(float(m.group(1)) * _FACTORS[m.group(2)])
