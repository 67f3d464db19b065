"""Arguments of the model-facing tools, checked against the schemas they publish.

A model copies ids out of markers and answers with whatever punctuation stood
around them, in any case, or as ``artifact://art_…``; ``parse_id`` takes all of
those. Every other argument is checked against the tool's own JSON schema (the
one the model was shown), so unknown names, wrong types and out-of-range values
are refused with a plain sentence instead of being silently ignored or clamped.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

    _Q = TypeVar("_Q", bound=BaseModel)

from overspill.artifacts.ids import normalize_artifact_id


class ToolArgumentError(ValueError):
    """A tool call whose arguments do not fit the tool's schema."""


def parse_id(value: object) -> str:
    """The canonical id from a string as a model may quote it, or from any
    record with an ``id`` (an ``ArtifactRef``, an ``ArtifactInfo``)."""
    ref = getattr(value, "id", None)
    if isinstance(ref, str):
        value = ref
    if not isinstance(value, str):
        raise ToolArgumentError(
            "'id' must be a string holding an artifact id such as art_01JF8Z3K9Q2M4V6W8X0Y2Z4A6B"
        )
    canonical = normalize_artifact_id(value)
    if canonical is None:
        raise ToolArgumentError(
            f"'id' is not an artifact id: {value[:80]!r}. Ids are art_ followed by 26 "
            "letters and digits, as printed in the output marker."
        )
    return canonical


def query_of(model: type[_Q], arguments: dict[str, Any], **worked_out: Any) -> _Q:
    """The query a tool call asks for. An argument named as one of the query's
    fields passes through as it is, so a new option of a read is its field
    (``artifacts.queries``) and its schema entry, with no line here;
    ``worked_out`` are the fields the tool sets itself (a clamp, a default of its
    own, an argument the model knows by another name)."""
    given = {k: v for k, v in arguments.items() if k in model.model_fields}
    given.update(worked_out)
    return model(**given)


def check_arguments(tool: str, schema: dict[str, Any], arguments: object) -> dict[str, Any]:
    """``arguments`` validated against ``schema`` (the subset our tools use:
    object of integer, boolean and string properties with bounds)."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolArgumentError(f"{tool} takes a JSON object of arguments")
    props: dict[str, Any] = schema.get("properties", {})
    unknown = sorted(set(arguments) - set(props))
    if unknown:
        names = ", ".join(repr(u[:60]) for u in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise ToolArgumentError(
            f"{tool} has no argument {names}{more}; it takes {', '.join(props)}."
        )
    missing = [r for r in schema.get("required", []) if r not in arguments]
    if missing:
        raise ToolArgumentError(f"{tool} needs {', '.join(repr(m) for m in missing)}.")
    out: dict[str, Any] = {}
    for name, value in arguments.items():
        out[name] = _check(name, props[name], value)
    return out


def _check(name: str, spec: dict[str, Any], value: Any) -> Any:
    if name == "id":
        return parse_id(value)
    kind = spec.get("type")
    if kind == "integer":
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolArgumentError(f"'{name}' must be a whole number, got {value!r}.")
        lo, hi = spec.get("minimum"), spec.get("maximum")
        if lo is not None and value < lo:
            raise ToolArgumentError(f"'{name}' must be at least {lo}, got {value}.")
        if hi is not None and value > hi:
            raise ToolArgumentError(f"'{name}' must be at most {hi}, got {value}.")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ToolArgumentError(f"'{name}' must be true or false, got {value!r}.")
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise ToolArgumentError(f"'{name}' must be a string, got {value!r}.")
        lo, hi = spec.get("minLength"), spec.get("maxLength")
        if lo is not None and len(value) < lo:
            raise ToolArgumentError(f"'{name}' must not be empty.")
        if hi is not None and len(value) > hi:
            raise ToolArgumentError(f"'{name}' must be at most {hi} characters long.")
        if "enum" in spec and value not in spec["enum"]:
            raise ToolArgumentError(f"'{name}' must be one of {', '.join(spec['enum'])}.")
        return value
    return value
