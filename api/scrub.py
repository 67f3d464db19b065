"""Redaction of what is already stored (``overspill redact --scrub``): a secret
found after the fact -- a new rule, an admin's new pattern -- is removed from
every output kept, not only from new ones.

One bounded page of artifacts per call (oldest id first, ``after`` the last one
seen): each is read through the current rules; one where something matches is
rewritten masked into frames of its own (``Compactor.scrub``: new blobs, then
the old ones go), with its sha256 updated and an audit entry naming the rules
and the count (never a value). An old blob another output still names holds
the secret too, so those outputs are rewritten as well (same bytes, blobs of
their own) until no row names it and it is deleted.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from pydantic import BaseModel, Field

from overspill.artifacts.db.models import Artifact
from overspill.artifacts.errors import OverspillError
from overspill.artifacts.records import GONE_STATES, Principal
from overspill.artifacts.store import ArtifactStore
from overspill.shell.redact.policy import Redaction, masked
from overspill.shell.redact.stream import StreamRedactor

SCRUBBER = Principal(name="system:scrub", role="admin")


class ScrubReport(BaseModel):
    dry_run: bool
    scanned: int = 0
    scanned_bytes: int = 0
    rewritten: int = 0  # (or would be, in a dry run)
    secrets: int = 0
    rules: dict[str, int] = Field(default_factory=dict)
    rehomed: int = 0  # outputs rewritten because they named a scrubbed blob
    skipped: int = 0  # changed meanwhile: the next run takes them
    artifact_ids: list[str] = Field(default_factory=list, description="Rewritten (first 100)")
    next_after: str | None = Field(None, description="Pass as `after` for the next page")


def scrub_page(
    store: ArtifactStore,
    redaction: Redaction,
    *,
    owner: str | None,
    after: str | None,
    limit: int,
    dry_run: bool,
    actor: str,
) -> ScrubReport:
    report = ScrubReport(dry_run=dry_run, next_after=None)
    rules = redaction._replace(enabled=True).rules()
    assert rules is not None
    ids = _page(store, owner, after, limit)
    for artifact_id in ids:
        finder = StreamRedactor(rules)
        try:
            _, content = store.open_content(SCRUBBER, artifact_id)
            for chunk in content.iter_range(0, content.size):
                finder.feed(chunk)
        except OverspillError:  # deleted (or unreadable) since the page was listed
            report.skipped += 1
            continue
        finder.finish()
        report.scanned += 1
        report.scanned_bytes += content.size
        found = finder.manifest
        if not found.total:
            continue
        report.secrets += found.total
        for rule, n in found.counts.items():
            report.rules[rule] = report.rules.get(rule, 0) + n
        if dry_run:
            _note(report, artifact_id)
            continue
        still = store.compactor.scrub(
            artifact_id,
            partial(_masked, StreamRedactor(rules)),
            {"count": found.total, "rules": dict(sorted(found.counts.items()))},
            actor,
        )
        if still is None:
            report.skipped += 1
            continue
        _note(report, artifact_id)
        report.rehomed += _rehome(store, still)
    report.next_after = ids[-1] if len(ids) == limit else None
    return report


def _masked(redactor: StreamRedactor, chunks: Iterator[bytes]) -> Iterator[bytes]:
    return masked(chunks, redactor)


def _rehome(store: ArtifactStore, keys: list[str]) -> int:
    """Rewrite the outputs that still name the old blobs, until none does (each
    rewrite names only blobs of its own, so this ends)."""
    done = 0
    for _ in range(3):  # a holder rewritten meanwhile is caught on the next round
        holders = store.compactor.holders(keys) if keys else []
        if not holders:
            break
        for holder in holders:
            if store.compactor.rehome(holder) is not None:
                done += 1
    return done


def _page(store: ArtifactStore, owner: str | None, after: str | None, limit: int) -> list[str]:
    from sqlalchemy import select

    query = select(Artifact.id).where(Artifact.state.not_in([*GONE_STATES, "writing"]))
    if owner is not None:
        query = query.where(Artifact.owner == owner)
    if after is not None:
        query = query.where(Artifact.id > after)
    with store.db.read() as s:
        return list(s.execute(query.order_by(Artifact.id).limit(limit)).scalars())


def _note(report: ScrubReport, artifact_id: str) -> None:
    report.rewritten += 1
    if len(report.artifact_ids) < 100:
        report.artifact_ids.append(artifact_id)
