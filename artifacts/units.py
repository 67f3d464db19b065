"""Sizes and durations as people write them, one grammar everywhere: CLI flags,
settings (environment and TOML), HTTP query parameters and the web UI (dom.js's
``parseBytes`` and ``parseDuration`` accept the same forms).

Sizes: ``500000``, ``10k``, ``10MB``, ``1.5GiB``, ``1e9`` (k/M/G/T decimal,
KiB/MiB/GiB/TiB binary). Durations: ``3600`` (seconds), ``90m``, ``12h``, ``7d``,
``2w``, ``1y``. Both are positive whole numbers once parsed; the error says the
accepted forms once.
"""

from __future__ import annotations

_SIZE_FACTORS = {
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
_DURATIONS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
SIZE_FORMS = "e.g. 500000, 10MB, 1.5GiB, 1e9"
DURATION_FORMS = "e.g. 3600, 90m, 12h, 7d, 2w"


def _split(text: str) -> tuple[float, str] | None:
    """The number and the unit of ``text`` (None if it is neither)."""
    s = text.strip().lower()
    i = 0
    while i < len(s) and (s[i].isdigit() or s[i] in ".e"):
        if s[i] == "e" and (i == 0 or i + 1 >= len(s) or not s[i + 1].isdigit()):
            break
        i += 1
    number, unit = s[:i], s[i:].strip()
    if not number or len(number) > 30 or not number[0].isdigit():
        return None
    try:
        value = float(number)
    except ValueError:
        return None
    return value, unit


def parse_size(text: str | int, what: str = "size") -> int:
    """Bytes; ValueError naming ``what`` and the accepted forms otherwise."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    parsed = _split(str(text))
    if parsed is None or parsed[1] not in _SIZE_FACTORS:
        raise ValueError(f"{what}: {str(text)!r} is not a size ({SIZE_FORMS})")
    value = parsed[0] * _SIZE_FACTORS[parsed[1]]
    if parsed[1] in ("", "b") and not value.is_integer():
        raise ValueError(f"{what}: {str(text)!r} is not a whole number of bytes ({SIZE_FORMS})")
    return round(value)


def parse_duration(text: str | int, what: str = "duration") -> int:
    """Seconds (> 0); ValueError naming ``what`` and the accepted forms otherwise."""
    if isinstance(text, int) and not isinstance(text, bool):
        seconds = text
    else:
        parsed = _split(str(text))
        if parsed is None or parsed[1] not in _DURATIONS:
            raise ValueError(f"{what}: {str(text)!r} is not a duration ({DURATION_FORMS})")
        seconds = round(parsed[0] * _DURATIONS[parsed[1]])
    if seconds <= 0:
        raise ValueError(f"{what}: {str(text)!r} is not a positive duration ({DURATION_FORMS})")
    return seconds


def format_duration(seconds: int) -> str:
    """The shortest exact form: 604800 -> 7d, 90 -> 90s."""
    for unit, size in (("y", 31536000), ("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def format_bytes(n: int) -> str:
    """Binary units for people: 1536 -> 1.5 KiB."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
