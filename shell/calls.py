"""The one way a marker or an answer writes the call that continues it.

Every continuation a model reads is ``tool_name {JSON arguments}``: valid JSON
that repeats every argument of the call it continues, so copying it verbatim
into a tool call works. ``find_calls`` reads them back (the tests follow them).
"""

from __future__ import annotations

import json
import re
from typing import Any

_CALL = re.compile(r"\b(artifact_[a-z]+|bash_[a-z]+) (?=\{)")


def call(tool: str, **arguments: Any) -> str:
    """``tool {"arg": value, ...}``; ``None`` values are left out."""
    args = {k: v for k, v in arguments.items() if v is not None}
    return f"{tool} {json.dumps(args, ensure_ascii=False)}"


def find_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Every ``tool {json}`` call in ``text``, in order."""
    found: list[tuple[str, dict[str, Any]]] = []
    decoder = json.JSONDecoder()
    for m in _CALL.finditer(text):
        try:
            args, _ = decoder.raw_decode(text, m.end())
        except json.JSONDecodeError:
            continue
        if isinstance(args, dict):
            found.append((m.group(1), args))
    return found
