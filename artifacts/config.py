"""Store configuration, read once at the boundary (env ``OVERSPILL_*`` or a TOML file).

Every other module receives a resolved :class:`StoreSettings`; nothing below this
reads the environment. ``OVERSPILL_CONFIG`` names an optional TOML file whose keys
are the setting names without the prefix; environment variables win over it.
"""

from __future__ import annotations

import os
from typing import Literal

from overspill.artifacts.settings_base import SettingsBase, setting

MiB = 1024 * 1024


def default_home() -> str:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local/share")
    return os.path.join(base, "overspill")


class StoreSettings(SettingsBase):
    # A path (a string: pathlib costs a verb ~10 ms to import).
    home: str = setting(
        default_factory=default_home,
        shown="`~/.local/share/overspill`",
        doc="data directory of the embedded default (SQLite file and `blobs/`), 0700",
    )
    database_url: str | None = setting(
        None,
        shown="`sqlite:///$HOME/overspill.db`",
        doc="SQLAlchemy URL, e.g. `postgresql+psycopg://user@host/db`",
    )
    blob_url: str | None = setting(
        None, shown="`file://$HOME/blobs`", doc="`file:///path` or `s3://bucket/prefix`"
    )
    s3_endpoint_url: str | None = setting(
        None, shown="AWS", doc="endpoint of an S3-compatible store (MinIO, Ceph, moto)"
    )
    segment_bytes: int | None = setting(
        None,
        unit="size",
        shown="the backend's: `8MiB` local, `4MiB` S3",
        doc="a writer stores a segment at this size; 8 of them are published in one "
        "transaction (and, locally, share one file)",
    )
    flush_interval_s: float = setting(
        1.0, gt=0, doc="... or publishes whatever has waited this long (seconds)"
    )
    lease_seconds: float = setting(30.0, gt=0, doc="a writer silent this long is presumed dead")
    # How long storage may hold a writer's producer (a command's pipe) before the
    # artifact is failed and the producer goes on without it.
    storage_stall_s: float = setting(
        10.0,
        gt=0,
        doc="storage that takes no segment this long fails the artifact; the command goes on",
    )
    # By measurement: see artifacts/stored/frames.py.
    compression: Literal["auto", "lz4", "zstd"] = setting(
        "auto",
        doc="codec of the frames an ended output is compressed into: `auto` takes lz4 "
        "(3-4x faster to read) for a frame where it stores at most 5% of the frame more "
        "than zstd, else zstd; `zstd` stores least, `lz4` reads fastest",
    )
    compression_level: int = setting(
        3,
        ge=0,
        le=22,
        doc="zstd level of those frames (0: stored as written; lz4 frames are at level 9)",
    )
    # The hot tier. An agent reads an output within minutes of making it, almost
    # never later; see artifacts/writing/compaction.py for the measurement behind 15 minutes.
    hot_s: float = setting(
        900,
        ge=0,
        finite=True,
        doc="an ended output stays as written (read at file speed) until it has gone this "
        "long without a write or a read, then it is compressed (0: at once)",
    )
    native_grep: bool = setting(
        True,
        doc="`overspill grep` of a plain string with many matches runs ripgrep where it is "
        "installed (the same rows, written natively); off: always the store's own scan",
    )
    max_artifact_bytes: int = setting(
        4096 * MiB,
        unit="size",
        shown="`4GiB`",
        doc="the store's cap on any one artifact, however it is made; past it `capped`",
    )
    default_retention_s: int = setting(
        7 * 24 * 3600, gt=0, unit="duration", doc="expiry when no policy says otherwise"
    )
    tombstone_keep_s: int = setting(
        30 * 24 * 3600,
        gt=0,
        unit="duration",
        doc="how long an expired or deleted output's row stays (answering `expired` or "
        "`deleted`, never wrong bytes) after its bytes are gone",
    )
    # See artifacts/grep/search_pool.py.
    search_workers: int = setting(
        0,
        ge=0,
        le=64,
        doc="processes a search across outputs greps ahead in, on local blobs (0: one per "
        "core; 1: none); used for a listing page of 16 MiB or more in outputs of 1 MiB "
        "or more on average, started by the first such search, stopped after 30 s unused",
    )
    read_max_bytes: int = setting(1 * MiB, unit="size", doc="most content one read window returns")
    # PostgreSQL's own limits, so that a stuck database answers instead of hanging.
    db_statement_timeout_s: float = setting(
        30, gt=0, doc="PostgreSQL: how long one query may run before it answers 503"
    )
    db_lock_timeout_s: float = setting(
        5, gt=0, doc="PostgreSQL: how long a query may wait for a lock before it answers 503"
    )
    db_pool_timeout_s: float = setting(
        10, gt=0, doc="how long a request waits for a database connection before it answers 503"
    )

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
