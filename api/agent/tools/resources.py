"""The ``artifact://`` resource: a URI read as the ``artifact_read`` call it names.

``artifact://{id}{?offset,length,start_line,line_count,tail}`` (the template an
MCP server advertises): a byte window, a line window or the last lines, or the
start of the output when the URI names none. Answered with ``artifact_read``'s
own text, so a harness that reads resources gets the same bounded, truthful
window and the same call to continue as one that calls the tool.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from .arguments import ToolArgumentError

SCHEME = "artifact://"

# URI parameter -> artifact_read argument.
_ARGUMENTS = {
    "offset": "offset",
    "length": "limit",
    "start_line": "start_line",
    "line_count": "line_count",
    "tail": "tail_lines",
}


def read_arguments(uri: str) -> dict[str, Any]:
    """The ``artifact_read`` arguments a resource URI stands for."""
    if not uri.lower().startswith(SCHEME):
        raise ToolArgumentError(f"not an artifact resource: {uri[:100]!r} (artifact://art_…)")
    ident, _, query = uri[len(SCHEME) :].partition("?")
    arguments: dict[str, Any] = {"id": ident}
    for key, value in parse_qsl(query, keep_blank_values=True):
        name = _ARGUMENTS.get(key)
        if name is None:
            known = ", ".join(_ARGUMENTS)
            raise ToolArgumentError(f"artifact:// has no parameter {key[:40]!r}; it takes {known}")
        if name in arguments:
            raise ToolArgumentError(f"artifact:// parameter {key!r} is given twice")
        if not value.isdigit():
            raise ToolArgumentError(f"artifact:// parameter {key!r} takes a whole number")
        arguments[name] = int(value)
    return arguments
