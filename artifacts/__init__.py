"""The artifact store: ids, metadata, blob backends, bounded reads, retention.

This package imports nothing else of overspill's; ``shell`` and ``api`` build on it.

Its parts, each a package whose ``__init__`` says what it holds and what it may
import (``lint-imports`` holds the order, top to bottom):

- ``store``: ``ArtifactStore``, the one Python API over all of it;
- ``writing``: artifacts made (ingest, the writer, publishing) and rewritten
  (compaction);
- ``reading``: bounded reads of one output, and search across outputs;
- ``grep``: the grep engine and its worker processes;
- ``catalog``: metadata and lifecycle: retention, policies, quotas, usage,
  cleanup, tokens, audit;
- ``stored``: an artifact's bytes at rest (segments, frames, blob references,
  the legacy spill file); ``ledger``: what models were shown and read back;
- beneath them, the foundations every part uses: ``errors``, ``records``,
  ``queries``, ``bounds``, ``config``, ``context``, ``ids``, ``clock``, ``units``,
  and the two backends, ``db`` (SQLAlchemy) and ``blobs`` (files, S3).

Names are imported on first use: ``ArtifactStore`` pulls in SQLAlchemy and the
blob SDKs (~0.4 s) and the records pydantic (~0.1 s), which a command that never
overflows must not pay for.
"""

from __future__ import annotations

if __name__ != "overspill.artifacts":  # one identity: the folder is never a top-level package
    raise ImportError(
        f"{__name__} is overspill.artifacts: import it as overspill.artifacts (install the "
        "project: pip install -e .), not as a folder of the checkout"
    )

from typing import TYPE_CHECKING

from overspill.artifacts.lazy import lazy_names

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
    from overspill.artifacts.store import ArtifactStore
    from overspill.artifacts.writing.segments import WriteResult
    from overspill.artifacts.writing.writer import ArtifactWriter

# Everything is imported on first use: a submodule such as ``artifacts.utf8`` must
# not pull in pydantic (the records) or SQLAlchemy (the store) for a command that
# never overflows, which is most of what ``overspill run`` executes.
_LAZY = {
    "ArtifactStore": "overspill.artifacts.store",
    "ArtifactWriter": "overspill.artifacts.writing.writer",
    "StoreSettings": "overspill.artifacts.config",
    "ArtifactInfo": "overspill.artifacts.records",
    "Principal": "overspill.artifacts.records",
    "WriteResult": "overspill.artifacts.writing.segments",
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


__getattr__ = lazy_names(__name__, _LAZY)

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
