"""The names of the blobs the store writes: ``<artifact id>/<offset:016d>_<nonce>``.

The offset is the artifact offset of the blob's first byte, so a segment at
artifact offset ``o`` sits at ``o - base`` in its blob (0 unless a placed blob
holds several segments). The nonce keeps two racing writers from ever sharing a
name; the segment row decides which blob is part of the artifact.
"""

from __future__ import annotations

import re

# The only blob keys the store ever writes. The reconciler touches nothing else:
# a README, a backup or another tool's objects under the same root or prefix are
# not ours to delete, whatever their age.
_SEGMENT_KEY = re.compile(r"(art_[0-9A-HJKMNP-TV-Z]{26})/([0-9]{16})_[0-9a-f]{1,32}\Z")


def segment_key(artifact_id: str, offset: int, nonce: str) -> str:
    """A blob's key; ``offset`` is the artifact offset of the blob's first byte."""
    return f"{artifact_id}/{offset:016d}_{nonce}"


def is_segment_key(key: str, artifact_id: str | None = None) -> bool:
    """A key of the shape the store writes (of ``artifact_id``'s blobs, if given)."""
    m = _SEGMENT_KEY.match(key)
    return m is not None and (artifact_id is None or m.group(1) == artifact_id)


def segment_key_base(key: str) -> int:
    """The artifact offset where the blob ``key`` starts."""
    return int(key.rsplit("/", 1)[1].split("_", 1)[0])
