"""Retention levels and clamps, pins, quotas, expiry on the read path, the sweeper
and the reconciler, on every backend pair, with an injected clock (no sleeping)."""

from __future__ import annotations

import os
import threading
from datetime import timedelta
from pathlib import Path
from typing import NoReturn

import pytest

from overspill.artifacts.blobs.s3 import S3BlobStore
from overspill.artifacts.catalog.policies import PolicySpec
from overspill.artifacts.catalog.retention import GLOBAL
from overspill.artifacts.clock import ManualClock
from overspill.artifacts.errors import Gone, QuotaExceeded
from overspill.artifacts.queries import ListQuery
from overspill.artifacts.records import Principal
from overspill.artifacts.store import ArtifactStore
from tests.helpers import ADMIN, ALICE, BOB, write_artifact

DAY = 86400


@pytest.fixture
def clock(store: ArtifactStore) -> ManualClock:
    c = ManualClock()
    store.clock = c
    store.tokens._clock = c
    return c


def test_levels_decide_the_expiry_and_say_which(store: ArtifactStore, clock: ManualClock) -> None:
    a = store.get(ALICE, write_artifact(store, b"x"))
    assert a.retention_source == "server default"
    assert a.expires_at == a.created_at + timedelta(seconds=store.settings.default_retention_s)
    store.policies.set(ADMIN, PolicySpec(default_retention_s=2 * DAY, max_retention_s=10 * DAY))
    b = store.get(ALICE, write_artifact(store, b"x"))
    assert b.retention_source == "global default" and b.expires_at == b.created_at + timedelta(
        days=2
    )
    store.policies.set(
        ADMIN, PolicySpec(default_retention_s=DAY, max_retention_s=3 * DAY), ALICE.name
    )
    c = store.get(ALICE, write_artifact(store, b"x"))
    assert c.retention_source == "owner default" and c.expires_at == c.created_at + timedelta(
        days=1
    )
    d = store.get(ALICE, write_artifact(store, b"x", retention=2 * DAY))
    assert d.retention_source == "requested" and not d.retention_clamped
    e = store.get(ALICE, write_artifact(store, b"x", retention=30 * DAY))
    assert e.retention_source == "owner ceiling" and e.retention_clamped
    assert e.expires_at == e.created_at + timedelta(days=3)
    f = store.get(BOB, write_artifact(store, b"x", principal=BOB, retention=30 * DAY))
    assert f.retention_source == "global ceiling" and f.expires_at == f.created_at + timedelta(
        days=10
    )


def test_forever_only_where_an_admin_allows_it(store: ArtifactStore, clock: ManualClock) -> None:
    store.policies.set(ADMIN, PolicySpec(max_retention_s=5 * DAY))
    art = write_artifact(store, b"x", retention="forever")
    info = store.get(ALICE, art)
    assert info.retention_clamped and "forever not allowed" in (info.retention_source or "")
    assert info.expires_at == info.created_at + timedelta(days=5)
    store.policies.set(ADMIN, PolicySpec(allow_forever=True), ALICE.name, apply_to_existing=True)
    assert store.get(ALICE, art).expires_at is None  # the stored request is honoured now


def test_a_refused_forever_never_shortens_what_an_artifact_already_had(
    store: ArtifactStore, clock: ManualClock
) -> None:
    art = write_artifact(store, b"x")  # the server default (7 days), no ceiling
    month = store.set_retention(ALICE, art, 30 * DAY)
    forever = store.set_retention(ALICE, art, "forever")
    assert forever.expires_at == month.expires_at and forever.retention_clamped
    assert forever.retention_source == "kept (forever not allowed)"
    store.policies.set(ADMIN, PolicySpec(max_retention_s=10 * DAY))  # a ceiling applies now
    capped = store.set_retention(ALICE, art, "forever")
    assert capped.expires_at == capped.created_at + timedelta(days=10)
    assert capped.retention_source == "global ceiling (forever not allowed)"


def test_pin_suspends_expiry_and_unpin_restores_it(
    store: ArtifactStore, clock: ManualClock
) -> None:
    art = write_artifact(store, b"pinned bytes", retention=60)
    store.pin(ALICE, art, "incident 42")
    clock.advance(seconds=120)
    info = store.get(ALICE, art)
    assert info.state == "complete" and info.pinned and info.pinned_by == ALICE.name
    assert info.pin_reason == "incident 42" and info.expires_at is None
    assert store.sweeper.run().expired == 0
    assert store.read_bytes(ALICE, art, 0, 6) == b"pinned"
    info = store.unpin(ALICE, art)
    assert info.state == "expired" and info.expires_at == info.created_at + timedelta(seconds=60)
    with pytest.raises(Gone):
        store.read_bytes(ALICE, art, 0, 6)


def test_expiry_is_enforced_on_reads_before_any_sweep(
    store: ArtifactStore, clock: ManualClock
) -> None:
    art = write_artifact(store, b"soon gone", retention=60)
    clock.advance(seconds=61)
    with pytest.raises(Gone) as exc:
        store.text(ALICE, art)
    assert exc.value.reason == "expired" and exc.value.since is not None
    assert store.list(ALICE).items == []
    assert [i.id for i in store.list(ALICE, ListQuery(state="expired")).items] == [art]
    assert store.get(ALICE, art).state == "expired"


def test_apply_to_existing_and_the_preview_numbers(
    store: ArtifactStore, clock: ManualClock
) -> None:
    old = [write_artifact(store, b"a" * 100) for _ in range(3)]
    clock.advance(days=3)
    new = [write_artifact(store, b"b" * 10) for _ in range(2)]
    write_artifact(store, b"c" * 1000, principal=BOB)
    store.pin(ALICE, new[0])
    spec = PolicySpec(default_retention_s=4 * DAY)
    preview = store.policies.preview(spec)
    by = {o.owner: o for o in preview.owners}
    # Alice: 3 old ones created 3 days ago expire within 24h; the unpinned new one within 7d.
    assert (by[ALICE.name].now.artifacts, by[ALICE.name].within_24h.artifacts) == (0, 3)
    assert by[ALICE.name].within_24h.bytes == 300
    assert (by[ALICE.name].within_7d.artifacts, by[ALICE.name].within_7d.bytes) == (4, 310)
    assert by[BOB.name].within_7d.artifacts == 1 and preview.total.within_7d.artifacts == 5
    assert preview.current_total.within_24h.artifacts == 0  # nothing changed yet
    assert store.get(ALICE, old[0]).expires_at == store.get(ALICE, old[0]).created_at + timedelta(
        days=7
    )
    _, changed = store.policies.set(
        ADMIN, PolicySpec(default_retention_s=DAY), apply_to_existing=True
    )
    assert changed == 5  # the pinned one is left alone
    clock.advance(seconds=1)
    assert {i.id for i in store.list(ALICE).items} == set(new)
    assert store.get(ALICE, old[1]).state == "expired"


def test_changes_without_apply_affect_only_new_artifacts(
    store: ArtifactStore, clock: ManualClock
) -> None:
    before = store.get(ALICE, write_artifact(store, b"x"))
    store.policies.set(ADMIN, PolicySpec(default_retention_s=60))
    assert store.get(ALICE, before.id).expires_at == before.expires_at
    after = store.get(ALICE, write_artifact(store, b"x"))
    assert after.expires_at == after.created_at + timedelta(seconds=60)


def test_quota_reject_refuses_new_artifacts_and_caps_a_running_one(
    store: ArtifactStore, clock: ManualClock
) -> None:
    store.policies.set(ADMIN, PolicySpec(quota_bytes=3 * 65536), ALICE.name)  # 3 segments
    w = store.open_writer(ALICE)
    w.write(b"x" * 300_000)
    result = w.close()
    assert result.state == "capped" and result.size_bytes == 3 * 65536
    assert "quota exceeded" in (result.error or "")
    with pytest.raises(QuotaExceeded, match="quota exceeded for user:alice"):
        store.open_writer(ALICE)
    assert store.open_writer(BOB).close().state == "complete"


def test_segments_refused_by_the_quota_leave_no_blob_behind(
    store: ArtifactStore, clock: ManualClock
) -> None:
    store.policies.set(ADMIN, PolicySpec(quota_bytes=2 * 65536), ALICE.name)
    w = store.open_writer(ALICE)
    w.write(b"y" * 5 * 65536)  # five segments staged, one batch, two admitted
    assert w.close().size_bytes == 2 * 65536
    assert sum(b.size for b in store.blobs.list(w.id)) == 2 * 65536
    assert store.read_bytes(ALICE, w.id, 0, 3 * 65536) == b"y" * 2 * 65536


def test_quota_evict_removes_the_oldest_unpinned_first(
    store: ArtifactStore, clock: ManualClock
) -> None:
    store.policies.set(ADMIN, PolicySpec(quota_bytes=300, over_quota="evict"), ALICE.name)
    first = write_artifact(store, b"1" * 100)
    clock.advance(seconds=1)
    pinned = write_artifact(store, b"2" * 100)
    store.pin(ALICE, pinned)
    clock.advance(seconds=1)
    third = write_artifact(store, b"3" * 100)
    clock.advance(seconds=1)
    fourth = write_artifact(store, b"4" * 150)
    assert store.get(ALICE, first).state == "deleted"
    assert store.get(ALICE, first).delete_reason == "evicted (owner over quota)"
    assert store.get(ALICE, pinned).state == "complete"
    assert store.get(ALICE, third).state == "deleted"
    assert store.read_bytes(ALICE, fourth, 0, 200) == b"4" * 150
    assert [e.action for e in store.audit_log(action="evict")] == ["evict", "evict"]


@pytest.mark.postgres
def test_concurrent_writers_never_overshoot_the_quota(
    store: ArtifactStore, clock: ManualClock
) -> None:
    quota = 64 * 1024 * 5
    store.policies.set(ADMIN, PolicySpec(quota_bytes=quota), ALICE.name)
    results = []

    def writer() -> None:
        try:
            w = store.open_writer(ALICE)
        except QuotaExceeded:
            return
        for _ in range(4):
            w.write(b"z" * 64 * 1024)
            w.flush() if not w.stopped else None
        results.append(w.close())

    threads = [threading.Thread(target=writer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    usage = {u["owner"]: u for u in store.usage(ADMIN)}
    assert usage[ALICE.name]["bytes"] <= quota
    assert sum(r.size_bytes for r in results) == usage[ALICE.name]["bytes"]


def test_deleting_while_a_writer_publishes_leaves_usage_exact(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The delete computes what it frees from the row it locks. Here a publish is
    started right after the delete has read the row and before it updates usage:
    with the lock the publish waits for the delete (and then finds a tombstone);
    without it, the publish committed in between and its bytes stayed counted."""
    from overspill.artifacts.catalog import catalog
    from overspill.artifacts.errors import OverspillError

    w = store.open_writer(ALICE)
    w.write(b"x" * 65536)
    w.flush()
    read_row, published = threading.Event(), threading.Event()
    real = catalog.bump_usage  # type: ignore[attr-defined]

    def bump_after_a_publish(*args: object, **kw: object) -> None:
        if not read_row.is_set():
            read_row.set()
            published.wait(timeout=1.0)  # with the row locked, no publish gets through
        real(*args, **kw)  # type: ignore[arg-type]

    def publish() -> None:
        read_row.wait(timeout=10)
        try:
            w.write(b"y" * 65536)
            w.flush()
            published.set()
        except OverspillError:
            pass  # the artifact was deleted first: expected

    monkeypatch.setattr(catalog, "bump_usage", bump_after_a_publish)
    publisher = threading.Thread(target=publish)
    publisher.start()
    store.delete(ALICE, w.id)
    publisher.join()
    w.close()
    from sqlalchemy import select

    from overspill.artifacts.db.models import OwnerUsage

    with store._sessions() as s:  # what the quota counts, not a sum of the rows
        counted = s.execute(
            select(OwnerUsage.bytes_stored).where(OwnerUsage.owner == ALICE.name)
        ).scalar_one()
    assert counted == 0, f"{counted} bytes still counted against the quota after the delete"


def test_the_sweeper_frees_expired_bytes_and_keeps_a_tombstone(
    store: ArtifactStore, clock: ManualClock
) -> None:
    arts = [write_artifact(store, b"e" * 70_000, retention=60) for _ in range(3)]
    keep = write_artifact(store, b"k", retention=3600)
    clock.advance(seconds=61)
    dry = store.sweeper.run(dry_run=True)
    assert (dry.expired, dry.expired_bytes) == (3, 210_000)
    assert all(list(store.blobs.list(a)) for a in arts)  # dry run touched nothing
    report = store.sweeper.run()
    assert (report.expired, report.bytes_freed, report.errors) == (3, 210_000, [])
    for a in arts:
        assert list(store.blobs.list(a)) == []
        info = store.get(ADMIN, a)
        assert info.state == "expired" and info.deleted_at is not None
    assert store.read_bytes(ALICE, keep, 0, 1) == b"k"
    assert store.sweeper.run().expired == 0
    assert {e.artifact_id for e in store.audit_log(action="expire")} == set(arts)
    clock.advance(days=31)
    assert store.sweeper.run().tombstones_removed >= 3
    with pytest.raises(Exception, match="not found"):
        store.get(ADMIN, arts[0])


@pytest.mark.postgres
def test_two_sweepers_racing_delete_each_artifact_exactly_once(
    store: ArtifactStore, clock: ManualClock
) -> None:
    arts = [write_artifact(store, b"r" * 10, retention=60) for _ in range(120)]
    clock.advance(seconds=61)
    store.sweeper.batch = 7
    reports = []
    barrier = threading.Barrier(2)

    def sweep() -> None:
        barrier.wait()
        reports.append(store.sweeper.run(reconcile=False))

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r.expired for r in reports) == 120
    events = store.audit_log(action="expire", limit=1000)
    assert sorted(e.artifact_id or "" for e in events) == sorted(arts)  # once each
    assert all(r.errors == [] for r in reports)


def test_a_read_racing_a_delete_gets_the_bytes_or_410(
    store: ArtifactStore, clock: ManualClock
) -> None:
    data = bytes(range(256)) * 2000
    for _ in range(5):
        art = write_artifact(store, data, chunks=[100_000, 100_000, 100_000])
        outcomes: list[object] = []

        def read(art: str = art, outcomes: list[object] = outcomes) -> None:
            for _ in range(20):
                try:
                    got = store.read_bytes(ALICE, art, 0, len(data))
                    outcomes.append(got == data)
                except Gone:
                    outcomes.append("gone")
                except Exception as exc:  # anything else fails the test, not the thread
                    outcomes.append(repr(exc))

        t = threading.Thread(target=read)
        t.start()
        store.delete(ALICE, art)
        t.join()
        assert set(outcomes) <= {True, "gone"}, outcomes


def test_a_storage_error_under_a_read_of_a_deleted_output_is_gone_else_it_stands(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend may fail a read of bytes deleted under it otherwise than by "no
    such blob" (moto raises a ValueError mid-GET): the row decides. An output
    deleted meanwhile answers Gone (410); a live one keeps the storage error."""
    from overspill.artifacts.errors import StorageUnavailable

    data = bytes(range(256)) * 2000
    live, doomed = write_artifact(store, data), write_artifact(store, data)
    contents = {art: store.open_content(ALICE, art)[1] for art in (live, doomed)}
    for content in contents.values():
        assert content.read(0, 1) == data[:1]  # each read knows its segments now

    def broken(key: str, start: int, end: int) -> NoReturn:
        raise StorageUnavailable(f"S3 get {key} failed: ValueError")

    store.delete(ALICE, doomed)
    monkeypatch.setattr(store.blobs, "read", broken)
    with pytest.raises(Gone):
        contents[doomed].read(0, 10)
    with pytest.raises(StorageUnavailable, match="ValueError"):
        contents[live].read(0, 10)


def test_orphan_blobs_are_reclaimed_after_the_grace(
    store: ArtifactStore, clock: ManualClock
) -> None:
    art = write_artifact(store, b"real")
    store.blobs.put(f"{art}/9999999999999999_deadbeef", b"orphan of a live artifact")
    store.blobs.put("art_01AAAAAAAAAAAAAAAAAAAAAAAA/0000000000000000_00000000", b"no row at all")
    store.sweeper.orphan_grace = timedelta(days=3650)  # everything is younger than this
    assert store.sweeper.run().orphan_blobs == 0
    store.sweeper.orphan_grace = timedelta(0)
    clock.advance(days=1)
    assert store.sweeper.run(dry_run=True).orphan_blobs == 2
    report = store.sweeper.run()
    assert report.orphan_blobs == 2 and report.orphan_bytes == 25 + 13
    assert store.read_bytes(ALICE, art, 0, 10) == b"real"
    assert [b.key.split("/")[0] for b in store.blobs.list()] == [art]


def test_a_writer_dropped_without_close_stops_renewing_and_is_finalised(
    store: ArtifactStore, clock: ManualClock
) -> None:
    """A producer that loses its writer (no close) must not keep the lease alive
    forever: the writer is collected, its loop ends, and the reaper finishes it."""
    import gc

    w = store.open_writer(ALICE)
    w.write(b"flushed\n")
    w.flush()
    art, loop = w.id, w._thread
    del w
    gc.collect()
    loop.join(timeout=10)
    assert not loop.is_alive(), "the dropped writer's loop still runs (and renews)"
    clock.advance(seconds=store.settings.lease_seconds + 1)
    assert store.sweeper.run().writers_finalised == 1
    assert store.get(ALICE, art).state == "incomplete"
    assert store.read_bytes(ALICE, art, 0, 100) == b"flushed\n"


def test_a_dead_writer_is_finalised_by_the_sweeper(
    store: ArtifactStore, clock: ManualClock
) -> None:
    w = store.open_writer(ALICE)
    w.write(b"flushed\n")
    w.flush()
    w.abandon()  # the process is gone: no close, no lease renewal
    clock.advance(seconds=store.settings.lease_seconds + 1)
    assert store.sweeper.run().writers_finalised == 1
    from sqlalchemy import select

    from overspill.artifacts.db.models import Artifact

    with store._sessions() as s:
        assert (
            s.execute(select(Artifact.state).where(Artifact.id == w.id)).scalar_one()
            == "incomplete"
        )
    assert store.read_bytes(ALICE, w.id, 0, 100) == b"flushed\n"


def test_the_audit_log_records_who_did_what(store: ArtifactStore, clock: ManualClock) -> None:
    art = write_artifact(store, b"x")
    store.pin(ALICE, art, "why")
    store.unpin(ALICE, art)
    store.set_retention(ALICE, art, 600)
    store.policies.set(ADMIN, PolicySpec(default_retention_s=DAY))
    store.delete(ALICE, art)
    actions = [e.action for e in store.audit_log(limit=10)]
    assert actions[:6] == ["delete", "policy", "retention", "unpin", "pin", "create"]
    pin = store.audit_log(action="pin")[0]
    assert pin.actor == ALICE.name and pin.details["reason"] == "why" and pin.artifact_id == art


def test_policy_views_inherit_and_can_be_removed(store: ArtifactStore, clock: ManualClock) -> None:
    assert store.policies.get(GLOBAL).default_retention_s is None
    store.policies.set(ADMIN, PolicySpec(default_retention_s=DAY), "agent:x")
    assert [p.owner for p in store.policies.list_owners()] == ["agent:x"]
    store.policies.delete(ADMIN, "agent:x")
    assert store.policies.list_owners() == []
    from overspill.artifacts.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="cannot exceed"):
        store.policies.set(ADMIN, PolicySpec(default_retention_s=10, max_retention_s=5))
    assert Principal(name="x").role == "agent"


def test_cleanup_never_deletes_what_overspill_did_not_write(
    store: ArtifactStore, clock: ManualClock
) -> None:
    from overspill.artifacts.blobs.local import LocalBlobStore

    art = write_artifact(store, b"real")
    store.pin(ALICE, art, "kept through the year below")
    foreign = [
        "README",
        "backup/db_dump",
        "keep.me.txt",
        f"{art}/notes",
        "art_x/0000000000000000_0",
    ]

    def present() -> list[str]:
        if isinstance(store.blobs, LocalBlobStore):
            root = Path(store.blobs.root)
            return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        listing = client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
        return sorted(o["Key"][len(prefix) :] for o in listing)

    if isinstance(store.blobs, LocalBlobStore):
        for name in foreign:
            path = Path(store.blobs.root) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"not overspill's")
            os.utime(path, (0, 0))  # as old as can be
        (Path(store.blobs.root) / ".tmp-someone-elses").write_bytes(b"x")
        os.utime(Path(store.blobs.root) / ".tmp-someone-elses", (0, 0))
    else:
        s3 = store.blobs
        assert isinstance(s3, S3BlobStore)
        client, bucket, prefix = s3._client, s3.bucket, s3.prefix
        for name in foreign:
            client.put_object(Bucket=bucket, Key=prefix + name, Body=b"not overspill's")
    before = present()
    store.sweeper.orphan_grace = timedelta(0)
    clock.advance(days=400)
    for _ in range(2):  # a second pass works too: nothing made the first one fail
        report = store.sweeper.run()

        assert report.errors == [] and report.orphan_blobs == 0
        assert report.foreign_skipped == len(foreign)
    assert present() == before
    assert store.read_bytes(ALICE, art, 0, 10) == b"real"


def test_an_owner_row_that_sets_only_retention_keeps_the_global_quota(
    store: ArtifactStore,
) -> None:
    from overspill.artifacts.errors import QuotaExceeded

    store.policies.set(ADMIN, PolicySpec(quota_bytes=10))
    store.policies.set(ADMIN, PolicySpec(default_retention_s=DAY), ALICE.name)
    policy = store.policies.effective(ALICE.name)
    assert policy.quota_bytes == 10 and policy.default_s == DAY
    w = store.open_writer(ALICE)
    w.write(b"x" * 1000)
    result = w.close()
    assert result.state == "capped" and result.size_bytes == 10  # all the room there was
    with pytest.raises(QuotaExceeded):
        write_artifact(store, b"y" * 5)


def test_setting_a_policy_changes_only_the_fields_given(store: ArtifactStore) -> None:
    store.policies.set(ADMIN, PolicySpec(quota_bytes=10_000, over_quota="evict"), ALICE.name)
    view, _ = store.policies.set(ADMIN, PolicySpec(default_retention_s=DAY), ALICE.name)
    assert view.quota_bytes == 10_000 and view.over_quota == "evict"
    assert view.default_retention_s == DAY
    view, _ = store.policies.set(ADMIN, PolicySpec(quota_bytes=None), ALICE.name)  # cleared
    assert view.quota_bytes is None and view.default_retention_s == DAY


def test_a_sweep_runs_only_when_due_and_one_process_at_a_time(
    store: ArtifactStore, clock: ManualClock
) -> None:
    art = write_artifact(store, b"x" * 1000, retention=60)
    clock.advance(seconds=61)
    first = store.sweeper.run_if_due(300)
    assert first is not None and first.expired == 1
    assert store.sweeper.run_if_due(300) is None  # ran a moment ago
    clock.advance(seconds=301)
    assert store.sweeper.run_if_due(300) is not None  # due again
    # A pass under way (its claim not lapsed) keeps every other process out.
    claim = store.sweeper.claim
    with store.db.write() as s:
        from overspill.artifacts.db.models import Maintenance

        row = s.get(Maintenance, "sweep")
        assert row is not None
        row.last_run_at = None
        row.claimed_until = clock.now() + claim
    assert store.sweeper.run_if_due(300) is None
    clock.advance(seconds=claim.total_seconds() + 1)  # the claimant died: its claim lapses
    assert store.sweeper.run_if_due(300) is not None
    assert store.get(ADMIN, art).state == "expired"


def test_a_dead_writers_unpublished_batch_data_is_taken_back_by_cleanup(
    store: ArtifactStore, clock: ManualClock
) -> None:
    from overspill.artifacts.blobs.base import AppendableBlobStore

    w = store.open_writer(ALICE)
    w.write(b"published\n" * 1000)
    w.flush()
    w.abandon()  # killed: the batch it was writing is in the file, in no row
    blobs = store.blobs
    keys = [b for b in blobs.list(f"{w.id}/")]
    if isinstance(blobs, AppendableBlobStore):
        (blob,) = keys
        blobs.append(blob.key, blob.size, b"u" * 3_000_000)  # the lost batch
    clock.advance(seconds=store.settings.lease_seconds + 1)
    report = store.sweeper.run()
    assert report.writers_finalised == 1
    if isinstance(blobs, AppendableBlobStore):
        assert report.unpublished_bytes == 3_000_000
        assert [b.size for b in blobs.list(f"{w.id}/")] == [10_000]
    else:  # S3: a segment is an object put whole; nothing half-written stays
        assert report.unpublished_bytes == 0
    assert store.read_bytes(ALICE, w.id, 0, 20_000) == b"published\n" * 1000
