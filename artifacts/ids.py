"""Artifact ids: ``art_`` + 26 Crockford base32 characters (128 bits).

The first 48 bits are the creation time in milliseconds so ids sort roughly by age
(handy in listings and object-store prefixes); the remaining 80 bits come from the
OS CSPRNG, so an id cannot be guessed from a neighbour.
"""

from __future__ import annotations

import os
import re
import time

from overspill.artifacts.errors import InvalidArgument

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
PREFIX = "art_"
_ID_RE = re.compile(r"^art_[0-7][0-9A-HJKMNP-TV-Z]{25}$")


def new_artifact_id(now_ms: int | None = None) -> str:
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    # os.urandom is the CSPRNG secrets.randbits reads; importing secrets (hmac,
    # hashlib, random) cost 5 ms of every verb that names an id.
    value = ((ms & (2**48 - 1)) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return PREFIX + "".join(reversed(chars))


_QUOTED = re.compile(r"(?i)(?:artifact://)?art_([0-9a-z]{26})")
_PUNCTUATION = " \t\r\n[](){}<>;:,.'\"`"


def normalize_artifact_id(text: str) -> str | None:
    """The canonical id in ``text`` as a model or a person quotes it: any case,
    ``artifact://art_…``, with the punctuation that stood around it in a marker;
    None when it is not an id."""
    m = _QUOTED.fullmatch(text.strip(_PUNCTUATION))
    if m is None:
        return None
    canonical = PREFIX + m.group(1).upper()
    return canonical if _ID_RE.match(canonical) else None


def check_artifact_id(value: str) -> str:
    """Return ``value`` if it is a well-formed id; raise InvalidArgument otherwise."""
    if not isinstance(value, str) or not _ID_RE.match(value):
        raise InvalidArgument(f"invalid artifact id {value!r}: expected art_ + 26 base32 chars")
    return value
