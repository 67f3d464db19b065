"""Checks on values that reach the database from outside, made where rows are
written (so every entry point, HTTP, Python or a saved result, gets them).

PostgreSQL refuses a NUL character in text and JSON, and a deeply nested
``source`` stored once broke every later listing of its owner; both are refused
here with a message naming the field, never left to become a server error.
"""

from __future__ import annotations

import json
from typing import Any

from overspill.artifacts.errors import InvalidArgument

MAX_SOURCE_DEPTH = 16
MAX_SOURCE_BYTES = 64 * 1024


def check_text(field: str, value: str | None) -> str | None:
    if value is not None and "\x00" in value:
        raise InvalidArgument(f"{field} must not contain a NUL character")
    return value


def check_source(source: dict[str, Any] | None, field: str = "source") -> dict[str, Any]:
    """A copy of ``source`` if it is a JSON object within the bounds."""
    if source is None:
        return {}
    if not isinstance(source, dict):
        raise InvalidArgument(f"{field} must be a JSON object")
    _walk(source, field, 1)
    try:
        size = len(json.dumps(source, ensure_ascii=False).encode())
    except (TypeError, ValueError):
        raise InvalidArgument(f"{field} must hold only JSON values") from None
    if size > MAX_SOURCE_BYTES:
        raise InvalidArgument(f"{field} is {size} bytes as JSON; at most {MAX_SOURCE_BYTES}")
    return dict(source)


def _walk(value: Any, field: str, depth: int) -> None:
    if depth > MAX_SOURCE_DEPTH:
        raise InvalidArgument(f"{field} is nested more than {MAX_SOURCE_DEPTH} levels deep")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidArgument(f"{field} keys must be strings")
            check_text(f"{field} key", key)
            _walk(item, field, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _walk(item, field, depth + 1)
    elif isinstance(value, str):
        check_text(field, value)
