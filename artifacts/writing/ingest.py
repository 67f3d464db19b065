"""Ingest: creating artifacts (validation, retention, quota), their writers, and
the HTTP upload protocol (attach at an offset, append, complete).

The bytes of a writer go through ``artifacts.writing.segment_storage`` and its rows
through ``artifacts.writing.publishing``; this module only builds and checks.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from overspill.artifacts.blobs.base import AppendableBlobStore
from overspill.artifacts.catalog import audit
from overspill.artifacts.catalog.catalog import Catalog, info_of
from overspill.artifacts.catalog.retention import check_retention, effective_policy
from overspill.artifacts.catalog.retention import resolve as resolve_retention
from overspill.artifacts.catalog.usage import bump_usage
from overspill.artifacts.clock import as_utc
from overspill.artifacts.context import Part, StoreContext
from overspill.artifacts.db.models import Artifact
from overspill.artifacts.errors import Conflict, InvalidArgument, OffsetConflict, QuotaExceeded
from overspill.artifacts.ids import check_artifact_id, new_artifact_id
from overspill.artifacts.inputs import check_source, check_text
from overspill.artifacts.records import ArtifactInfo, Principal
from overspill.artifacts.writing.publishing import Publisher
from overspill.artifacts.writing.segment_storage import BlobPlacer, BlobStager
from overspill.artifacts.writing.writer import ArtifactWriter
from overspill.artifacts.writing.writes import Ending, NewArtifact

if TYPE_CHECKING:
    from overspill.artifacts.catalog.quotas import Quotas
    from overspill.artifacts.reading.reading import Reader


class Ingest(Part):
    def __init__(
        self,
        ctx: StoreContext,
        quotas: Quotas,
        catalog: Catalog,
        reader: Reader,
        publisher: Publisher,
    ) -> None:
        super().__init__(ctx)
        self._quotas = quotas
        self._catalog = catalog
        self._reader = reader
        self._publisher = publisher

    def create(self, principal: Principal, new: NewArtifact) -> ArtifactInfo:
        """Create an empty artifact in state ``writing`` with no lease (HTTP uploads)."""
        row = self._insert(principal, new, lease_token=None)
        return info_of(row, self.clock.now())

    def open_writer(self, principal: Principal, new: NewArtifact) -> ArtifactWriter:
        """Create an artifact and return a streaming writer holding its lease."""
        info, token = self.open_lease(principal, new)
        return self._writer(info.id, token, info.max_bytes, start=0)

    def open_lease(self, principal: Principal, new: NewArtifact) -> tuple[ArtifactInfo, str]:
        """Create an artifact whose writer lives elsewhere (a local server's client
        placing blobs itself): the artifact and the lease token its publishes name.
        Only an HTTP upload may make one for another owner."""
        token = secrets.token_hex(16)
        row = self._insert(principal, new._replace(owner=None), lease_token=token)
        return info_of(row, self.clock.now()), token

    def _writer(
        self, artifact_id: str, token: str | None, max_bytes: int, start: int
    ) -> ArtifactWriter:
        s = self.settings
        blobs = self.blobs
        publication = self._publisher.for_writer(artifact_id, token)
        common: dict[str, Any] = {
            "max_bytes": max_bytes - start,
            "base": start,
            "segment_bytes": s.segment_bytes or blobs.segment_bytes,
            "flush_interval": s.flush_interval_s,
            "lease_seconds": s.lease_seconds,
            "stall_s": s.storage_stall_s,
        }
        # Where blobs can be appended to, the producer writes straight into them.
        if isinstance(blobs, AppendableBlobStore):
            return ArtifactWriter(
                artifact_id, publication, placer=BlobPlacer(blobs, artifact_id), **common
            )
        return ArtifactWriter(
            artifact_id, publication, stager=BlobStager(blobs, artifact_id), **common
        )

    def _insert(
        self, principal: Principal, new: NewArtifact, *, lease_token: str | None
    ) -> Artifact:
        kind, name, media_type, session_id, source, max_bytes, owner, retention, made, wanted = new
        if wanted is not None:
            check_artifact_id(wanted)
        if owner is not None and owner != principal.name and not principal.is_admin:
            raise InvalidArgument("only admins can create artifacts for another owner")
        if max_bytes is not None and max_bytes <= 0:
            raise InvalidArgument(f"max_bytes must be positive, got {max_bytes}")
        if not kind or len(kind) > 50:
            raise InvalidArgument("kind must be 1 to 50 characters")
        for field, value in (
            ("kind", kind),
            ("name", name),
            ("media_type", media_type),
            ("session_id", session_id),
            ("owner", owner),
        ):
            check_text(field, value)
        source = check_source(source)
        check_retention(retention)
        now = self.clock.now()
        owner_name = owner or principal.name
        with self._write() as s:
            # A promised id already taken (by anyone) is a conflict that says no more.
            if wanted is not None and s.get(Artifact, wanted) is not None:
                raise Conflict(f"artifact id {wanted} is taken")
            policy = effective_policy(s, owner_name, self.settings.default_retention_s)
            evicted = self._quotas.admit(s, owner_name, policy)
            caps = [self.settings.max_artifact_bytes, max_bytes, policy.max_artifact_bytes]
            resolved = resolve_retention(policy, now, retention)
            row = Artifact(
                id=wanted or new_artifact_id(int(now.timestamp() * 1000)),
                owner=owner_name,
                session_id=session_id,
                kind=kind,
                name=name,
                media_type=media_type,
                source=dict(source or {}),
                state="writing",
                size_bytes=0,
                total_bytes=0,
                max_bytes=min(c for c in caps if c is not None),
                line_count=0,
                segment_count=0,
                created_at=now if made is None else min(as_utc(made, "created_at"), now),
                updated_at=now,
                expires_at=resolved.expires_at,
                retention_requested_s=0 if retention == "forever" else resolved.requested_s,
                retention_source=resolved.source,
                retention_clamped=resolved.clamped,
                lease_token=lease_token,
                # Uploads over HTTP hold no token but do hold a lease: every append
                # renews it, and a client that vanishes leaves an incomplete artifact.
                lease_expires_at=now + timedelta(seconds=self.settings.lease_seconds),
                harness=_harness(source, owner_name),
            )
            s.add(row)
            bump_usage(s, row.owner, 0, 1)
            audit.record(
                s,
                now,
                principal.name,
                "create",
                of=row,
                kind=kind,
                retention=resolved.source,
                clamped=resolved.clamped or None,
            )
        self._publisher.purge_all(evicted)
        return row

    def attach_writer(self, principal: Principal, artifact_id: str, offset: int) -> ArtifactWriter:
        """A writer appending to an existing ``writing`` artifact at ``offset``
        (HTTP uploads). Offset mismatch raises OffsetConflict with the current size."""
        info = self._catalog.get(principal, artifact_id)
        if info.state != "writing":
            raise Conflict(f"artifact {artifact_id} is {info.state}; appends need state writing")
        if offset != info.size_bytes:
            raise OffsetConflict(
                f"append at offset {offset} but artifact has {info.size_bytes} bytes",
                current_size=info.size_bytes,
            )
        return self._writer(artifact_id, None, info.max_bytes, start=offset)

    def end_append(self, writer: ArtifactWriter, offset: int) -> None:
        """Publish what an attached writer holds without finishing the artifact."""
        try:
            writer.flush()
        finally:
            writer.abandon()
        if writer.capped:
            self._publisher.mark_total(writer.id, offset + writer.total_bytes)
        self._publisher.renew(writer.id, None)  # an append, even an empty one, keeps it alive
        if writer.stopped:
            raise QuotaExceeded(writer.stopped)

    def append(
        self, principal: Principal, artifact_id: str, offset: int, chunks: Iterator[bytes]
    ) -> ArtifactInfo:
        """Append a stream at an explicit offset (HTTP PATCH). Offset mismatch -> 409.
        An empty append only renews the upload's lease."""
        writer = self.attach_writer(principal, artifact_id, offset)
        try:
            for chunk in chunks:
                writer.write(chunk)
        finally:
            self.end_append(writer, offset)
        return self._catalog.get(principal, artifact_id)

    def complete(
        self,
        principal: Principal,
        artifact_id: str,
        *,
        total_bytes: int | None = None,
        source_update: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> ArtifactInfo:
        """Finish an HTTP-uploaded artifact: compute its sha256 (one bounded pass over
        what is stored) and mark it final. ``total_bytes`` beyond the stored size
        (the producer saw more than the cap) makes it ``capped``."""
        source_update = check_source(source_update, "source") if source_update else None
        check_text("error", error)
        info = self._catalog.get(principal, artifact_id)
        if info.state != "writing":
            raise Conflict(f"artifact {artifact_id} is already {info.state}")
        if total_bytes is not None and total_bytes < info.size_bytes:
            raise InvalidArgument(
                f"total_bytes {total_bytes} is less than the {info.size_bytes} bytes stored"
            )
        total = max(total_bytes or 0, info.total_bytes, info.size_bytes)
        if error:
            self._publisher.finish(
                artifact_id, None, Ending("failed", total, None, error, source_update)
            )
            return self._catalog.get(principal, artifact_id)
        content = self._reader.content(info)
        digest = hashlib.sha256()
        for chunk in content.iter_range(0, content.size):
            digest.update(chunk)
        state = "capped" if total > info.size_bytes else "complete"
        self._publisher.finish(
            artifact_id,
            None,
            Ending(state, total, digest.hexdigest(), None, source_update),
            hashed_size=content.size,
        )
        return self._catalog.get(principal, artifact_id)


def _harness(source: dict[str, Any] | None, owner: str) -> str | None:
    """The harness an output was made in: its hook's name, else an agent owner's
    (``agent:claude-code`` is the owner ``install`` writes for Claude Code)."""
    named = (source or {}).get("harness")
    if isinstance(named, str) and named:
        return named[:50]
    return owner[len("agent:") :][:50] if owner.startswith("agent:") else None
