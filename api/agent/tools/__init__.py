"""Model-facing tools: the table of their names, schemas and annotations
(``schemas``, standard library only, so a server can list them before loading
anything else), handlers (``handlers``: argument rules, the read, the answer)
and the search answer (``search``); every sentence of their answers is in
``shell.wording``. They work over any ``StoreClient``: the store in-process,
or a server through the HTTP client.

The handlers load on first use: importing this package for the table costs
nothing of pydantic or the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .schemas import (
    BASH_DEFINITIONS,
    DEFAULT_CHARS,
    MAX_CHARS,
    SAVE_DEFINITION,
    TOOL_DEFINITIONS,
    tool_definitions,
)

if TYPE_CHECKING:
    from .handlers import ArtifactTools, ToolResult

__all__ = [
    "BASH_DEFINITIONS",
    "DEFAULT_CHARS",
    "MAX_CHARS",
    "SAVE_DEFINITION",
    "TOOL_DEFINITIONS",
    "ArtifactTools",
    "ToolResult",
    "tool_definitions",
]


def __getattr__(name: str) -> Any:
    if name in ("ArtifactTools", "ToolResult"):
        from . import handlers

        return getattr(handlers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
