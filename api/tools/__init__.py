"""Model-facing tools: JSON-schema definitions (``schemas``, made from the typed
queries), handlers (``handlers``: argument rules, the read, the answer) and the
tools' own answer parts (``answers``); the sentences every surface shares are
in ``shell.wording``. They work over any ``Backend``: the store in-process, or a
server through the HTTP client.
"""

from overspill.api.tools.handlers import ArtifactTools, ToolResult
from overspill.api.tools.schemas import (
    DEFAULT_CHARS,
    MAX_CHARS,
    SAVE_DEFINITION,
    TOOL_DEFINITIONS,
    tool_definitions,
)

__all__ = [
    "DEFAULT_CHARS",
    "MAX_CHARS",
    "SAVE_DEFINITION",
    "TOOL_DEFINITIONS",
    "ArtifactTools",
    "ToolResult",
    "tool_definitions",
]
