"""The artifact store: ids, metadata, blob backends, bounded reads, retention.

This package imports nothing else of overspill's; ``shell`` and ``api`` build on it.

Names are imported on first use: ``ArtifactStore`` pulls in SQLAlchemy and the
blob SDKs (~0.4 s) and the records pydantic (~0.1 s), which a command that never
overflows must not pay for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from overspill.artifacts.records import ArtifactInfo, Principal
    from overspill.artifacts.segments import WriteResult
    from overspill.artifacts.store import ArtifactStore
    from overspill.artifacts.writer import ArtifactWriter

# Everything is imported on first use: a submodule such as ``artifacts.utf8`` must
# not pull in pydantic (the records) or SQLAlchemy (the store) for a command that
# never overflows, which is most of what ``overspill run`` executes.
_LAZY = {
    "ArtifactStore": "overspill.artifacts.store",
    "ArtifactWriter": "overspill.artifacts.writer",
    "StoreSettings": "overspill.artifacts.config",
    "ArtifactInfo": "overspill.artifacts.records",
    "Principal": "overspill.artifacts.records",
    "WriteResult": "overspill.artifacts.segments",
    **{
        name: "overspill.artifacts.errors"
        for name in (
            "Conflict",
            "Gone",
            "InvalidArgument",
            "InvalidRange",
            "NotFound",
            "OffsetConflict",
            "OverspillError",
            "QuotaExceeded",
            "StorageUnavailable",
        )
    },
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
