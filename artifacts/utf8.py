"""Cutting byte windows on UTF-8 character boundaries.

Shared by the store's text windows and the executor's tails; kept apart from
``artifacts.reading.reads`` so the executor can use it without loading the store.
"""

from __future__ import annotations


def _is_continuation(byte: int) -> bool:
    return 0x80 <= byte <= 0xBF


def utf8_char_len(lead: int) -> int:
    """Bytes in the character whose first byte is ``lead`` (1 for a stray byte)."""
    if lead >= 0xF0:
        return 4
    if lead >= 0xE0:
        return 3
    if lead >= 0xC0:
        return 2
    return 1


def utf8_skip_partial(data: bytes) -> int:
    """Leading bytes to drop so ``data`` does not start inside a UTF-8 character."""
    skip = 0
    while skip < min(3, len(data)) and _is_continuation(data[skip]):
        skip += 1
    return skip


def utf8_safe_end(data: bytes) -> int:
    """Length of the longest prefix of ``data`` that does not end mid-character."""
    n = len(data)
    i = n - 1
    # Walk back over at most 3 continuation bytes to the lead byte of the last char.
    while i >= 0 and n - i <= 4 and _is_continuation(data[i]):
        i -= 1
    if i < 0 or n - i > 4:
        return n
    lead = data[i]
    if lead < 0xC0:
        return n  # ASCII or a stray continuation run: nothing to hold back
    return n if i + utf8_char_len(lead) <= n else i
