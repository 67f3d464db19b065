"""The artifact store: ids, metadata, blob backends, bounded reads, retention.

This package imports nothing else of overspill's; ``shell`` and ``api`` build on it.

``ArtifactStore`` and ``ArtifactWriter`` are imported on first use: they pull in
SQLAlchemy and the blob SDKs (~0.4 s), which a command that never overflows —
most of what ``overspill run`` executes — must not pay for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from overspill.artifacts.config import StoreSettings
from overspill.artifacts.errors import (
    Conflict,
    Gone,
    InvalidArgument,
    InvalidRange,
    NotFound,
    OffsetConflict,
    OverspillError,
    QuotaExceeded,
    StorageUnavailable,
)
from overspill.artifacts.records import ArtifactInfo, Principal, WriteResult

if TYPE_CHECKING:
    from overspill.artifacts.store import ArtifactStore
    from overspill.artifacts.writer import ArtifactWriter

_LAZY = {
    "ArtifactStore": "overspill.artifacts.store",
    "ArtifactWriter": "overspill.artifacts.writer",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'artifacts' has no attribute {name!r}")


__all__ = [
    "ArtifactInfo",
    "ArtifactStore",
    "ArtifactWriter",
    "Conflict",
    "Gone",
    "InvalidArgument",
    "InvalidRange",
    "NotFound",
    "OffsetConflict",
    "OverspillError",
    "Principal",
    "QuotaExceeded",
    "StorageUnavailable",
    "StoreSettings",
    "WriteResult",
]
