"""Package names imported on first use, for the packages whose ``__init__``
re-exports them: a command that never overflows must not pay for SQLAlchemy,
pydantic or the executor because it imported one small submodule.

Standard library only (``importlib``, and that only when a name is first asked for).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def lazy_names(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``where[name]`` the first time a
    name is asked of ``package`` and answers an unknown name as Python would."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        return getattr(importlib.import_module(module), name)

    return __getattr__
