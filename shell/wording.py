"""The sentences a model reads, in one place: what a window covers, whether the
whole output is stored, the call that continues, counts, and errors. The
executor's markers, the model tools' answers, the saved-result notices and the
bash tools all say these things the same way because they say them here.

Every continuation a model reads is ``tool_name {JSON arguments}``: valid JSON
that repeats every argument of the call it continues, so copying it verbatim
into a tool call works. ``find_calls`` reads them back (the tests follow them).
"""

from __future__ import annotations

import re
from typing import Any

_CALL = re.compile(r"\b(artifact_[a-z]+|bash_[a-z]+) (?=\{)")


def call(tool: str, **arguments: Any) -> str:
    """``tool {"arg": value, ...}``; ``None`` values are left out."""
    import json  # a command that fits the window never writes a call

    args = {k: v for k, v in arguments.items() if v is not None}
    return f"{tool} {json.dumps(args, ensure_ascii=False)}"


def find_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Every ``tool {json}`` call in ``text``, in order."""
    import json

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


# -- counts and spans -----------------------------------------------------------------


def count(n: int, one: str, many: str | None = None) -> str:
    """``1 match``, ``2 matches``: singulars are singular."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def lines_span(first: int, last: int) -> str:
    """``line 5`` or ``lines 5-9``."""
    return f"line {first}" if first == last else f"lines {first}-{last}"


# -- what is stored ---------------------------------------------------------------------


def coverage(state: str, size: int, total: int, error: str | None = None) -> str:
    """Whether what is stored is the whole output, and if not, what is missing."""
    total = max(total, size)
    if state == "writing":
        return f"still being written: {size} bytes stored so far, more may come"
    if state == "complete":
        return "the whole output is stored"
    if state == "capped":
        return (
            f"capped: only the first {size} of {total} bytes were stored; "
            f"bytes {size}-{total} are not stored"
        )
    if state in ("deleted", "expired"):
        return "nothing is stored any more"
    why = f" ({clean(error)})" if error else ""
    if state == "failed":
        return f"storage failed{why}: only the first {size} of {total} bytes were stored"
    return f"{state}{why}: the writer stopped; only the first {size} of {total} bytes were stored"


def end_of_stored(state: str, size: int, total: int, error: str | None, again: str) -> str:
    """The footer of a window that reached the end of what is stored."""
    if state == "writing":
        return f"[end of what is stored so far; more may come: {again}]"
    if state == "complete":
        return "[end of output: you have seen up to its last byte]"
    return f"[end of the stored bytes, not of the output: {coverage(state, size, total, error)}]"


def searched(state: str, size: int, total: int, error: str | None, again: str) -> str:
    """How much of the output a search that reached the end of the stored bytes saw."""
    if state == "writing":
        return f"searched everything stored so far; more may come: {again}"
    if state == "complete":
        return "search complete: the whole output was searched"
    return (
        f"searched everything stored, not the whole output: {coverage(state, size, total, error)}"
    )


# -- a saved tool result ----------------------------------------------------------------


def retrieval_hint(artifact_id: str, offset: int = 0) -> str:
    """How to read (from ``offset``: where the part a preview leaves out starts) and
    search a stored result."""
    read = call("artifact_read", id=artifact_id, offset=offset)
    grep = call("artifact_grep", id=artifact_id, pattern="<regex>")
    what = "Read the omitted part" if offset else "Read it"
    return (
        f"{what} with {read} (continue at the offset each answer gives), or search it with {grep}."
    )


def saved_notice(
    artifact_id: str,
    omitted: int,
    gap_start: int,
    where: str,
    legacy_path: str | None = None,
    legacy_hint: str | None = None,
) -> str:
    """The line that replaces what a saved result's preview leaves out: the
    replaced system's wording (the legacy path right after "at: "), with the
    artifact, ``where`` (its size, lines and expiry) and the calls that read it."""
    hint = retrieval_hint(artifact_id, gap_start)
    if legacy_path:
        return (
            f"(Omitted {omitted} bytes. Full formatted result stored at: {legacy_path}. "
            f"{legacy_hint} Also stored as artifact://{artifact_id} ({where}). {hint})"
        )
    return (
        f"(Omitted {omitted} bytes. Full formatted result stored at: artifact://{artifact_id} "
        f"({where}). {hint})"
    )


# -- errors and inert text -------------------------------------------------------------

MAX_ERROR_CHARS = 1_000


def clean(text: str, limit: int = 300) -> str:
    """``text`` safe inside a bracketed marker: one line, no brackets, bounded."""
    return " ".join(text.replace("[", "(").replace("]", ")").split())[:limit]


def sentence(message: str) -> str:
    message = message.strip()
    return message if message.endswith(".") else message + "."


def tool_error(message: str) -> str:
    """The one form of a tool error: ``Error: <sentence>``, bounded whatever
    the message (an argument list a client made up can be any size)."""
    text = sentence(" ".join(message.split()))
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 1] + "…"
    return f"Error: {text}"


MASKED = "each masked with * at its own length (offsets unchanged)"
"""How a masked secret is shown, in every place that says so (the marker, the
terminal's closing line, ``info`` and the answers that describe an output)."""


def redaction_summary(redactions: object) -> str | None:
    """An artifact's ``source.redactions`` in the words of a stream's own account
    (``3 secrets redacted (github_token, url_password)``), or None."""
    if not isinstance(redactions, dict) or not int(redactions.get("count") or 0):
        return None
    n = int(redactions["count"])
    noun = "secret" if n == 1 else "secrets"
    return f"{n} {noun} redacted ({', '.join(sorted(redactions.get('rules') or {}))})"


def redaction_note(redactions: object) -> str | None:
    """An artifact's ``source.redactions`` as people and models read it:
    ``3 secrets masked (github_token, url_password), 120 bytes; each * at its
    own length``, or that it was stored unmasked; None when nothing was."""
    if not isinstance(redactions, dict):
        return None
    if redactions.get("off"):
        return "off for this owner (an admin's policy): stored as printed"
    n = int(redactions.get("count") or 0)
    if not n:
        return None
    rules = ", ".join(sorted(redactions.get("rules") or {}))
    noun = "secret" if n == 1 else "secrets"
    return f"{n} {noun} masked ({rules}), {redactions.get('bytes', 0)} bytes; {MASKED}"
