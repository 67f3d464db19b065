"""The artifact store: ids, metadata, blob backends, bounded reads, retention.

This package imports nothing else of overspill's; ``shell`` and ``api`` build on it.
"""

from artifacts.config import StoreSettings
from artifacts.errors import (
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
from artifacts.records import ArtifactInfo, Principal, WriteResult
from artifacts.store import ArtifactStore
from artifacts.writer import ArtifactWriter

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
