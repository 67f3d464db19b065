"""Store configuration, read once at the boundary (env ``OVERSPILL_*`` or a TOML file).

Every other module receives a resolved :class:`StoreSettings`; nothing below this
reads the environment. ``OVERSPILL_CONFIG`` names an optional TOML file whose keys
are the setting names without the prefix; environment variables win over it.
"""

from __future__ import annotations

import os

from .settings_base import SettingsBase, setting

MiB = 1024 * 1024


def default_home() -> str:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local/share")
    return os.path.join(base, "overspill")


class StoreSettings(SettingsBase):
    # A path (a string: pathlib costs a verb ~10 ms to import).
    home: str = setting(default_factory=default_home)
    database_url: str | None = None
    blob_url: str | None = None
    s3_endpoint_url: str | None = None
    # Writers store a segment when this much is buffered or flush_interval_s passed;
    # unset, the blob backend's own size (local 8 MiB, S3 4 MiB).
    segment_bytes: int | None = setting(None, gt=0, unit="size")
    flush_interval_s: float = setting(1.0, gt=0)
    lease_seconds: float = setting(30.0, gt=0)
    # How long storage may hold a writer's producer (a command's pipe) before the
    # artifact is failed and the producer goes on without it.
    storage_stall_s: float = setting(10.0, gt=0)
    # zstd level of the frames an ended artifact is compacted into (0: stored as
    # written). 3 by measurement: see artifacts/frames.py.
    compression_level: int = setting(3, ge=0, le=22)
    # The hot tier: an ended artifact stays as written (read at file speed) until
    # it has gone this long without a write or a read, then it is compacted. An
    # agent reads an output within minutes of making it, almost never later; see
    # artifacts/compaction.py for the measurement behind 15 minutes.
    hot_s: float = setting(900, ge=0, finite=True)
    # The store's cap on any one artifact, however it is made.
    max_artifact_bytes: int = setting(4096 * MiB, gt=0, unit="size")
    default_retention_s: int = setting(7 * 24 * 3600, gt=0, unit="duration")
    # Processes a search across outputs greps in, ahead of its walk (0: one per
    # core; 1: the search greps alone). See artifacts/search_pool.py.
    search_workers: int = setting(0, ge=0, le=64)
    # Upper bound on what one JSON read window returns.
    read_max_bytes: int = setting(1 * MiB, gt=0, unit="size")
    # PostgreSQL: how long a query may run and wait for a lock, and how long a
    # request waits for a connection, before it answers 503 "database busy".
    db_statement_timeout_s: float = setting(30, gt=0)
    db_lock_timeout_s: float = setting(5, gt=0)
    db_pool_timeout_s: float = setting(10, gt=0)

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{os.path.join(self.home, 'overspill.db')}"

    @property
    def resolved_blob_url(self) -> str:
        if self.blob_url:
            return self.blob_url
        from pathlib import Path

        return Path(os.path.abspath(self.home), "blobs").as_uri()

    @property
    def is_embedded_database(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")
