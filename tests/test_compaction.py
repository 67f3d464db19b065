"""Compressed frames: an ended artifact compacted into compressed frames reads exactly
as it did, on every backend; identical frames of one owner are stored once, and
freed when the last artifact naming them goes; nothing a failed or raced
compaction wrote is left behind."""

from __future__ import annotations

import hashlib
import os
import random
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from overspill.artifacts.clock import ManualClock
from overspill.artifacts.errors import StorageUnavailable
from overspill.artifacts.queries import GrepQuery, LineQuery, TailQuery, TextQuery
from overspill.artifacts.records import Principal
from overspill.artifacts.store import ArtifactStore
from overspill.artifacts.stored.frames import FRAME_BYTES
from overspill.artifacts.writing.compaction import Compactor
from tests.helpers import ALICE, BOB, write_artifact


def _log(lines: int, seed: int = 0) -> bytes:
    """A compiler-like log: repetitive, with numbers that differ line to line."""
    rng = random.Random(seed)
    words = ["compiling", "linking", "warning: unused variable", "note: in expansion", "ok"]
    return b"".join(
        b"[%05d] %s src/module_%d.c:%d\n"
        % (i, rng.choice(words).encode(), rng.randrange(400), rng.randrange(9000))
        for i in range(lines)
    )


def _blob_keys(store: ArtifactStore) -> list[str]:
    return sorted(b.key for b in store.blobs.list())


def _everything(store: ArtifactStore, who: Principal, artifact_id: str) -> bytes:
    _, content = store.open_content(who, artifact_id)
    return b"".join(content.iter_range(0, content.size))


def _hot_for(store: ArtifactStore, seconds: float) -> None:
    store.ctx.settings = store.ctx.settings.replace(hot_s=seconds)


def _reads(store: ArtifactStore, artifact_id: str) -> list[Any]:
    """Every kind of bounded read, as the model and the UI make them."""
    size = store.get(ALICE, artifact_id).size_bytes
    rng = random.Random(7)
    spans = [(0, 1), (FRAME_BYTES - 5, FRAME_BYTES + 5), (size - 3, size)]
    spans += [(a, a + rng.randrange(1, 70_000)) for a in rng.sample(range(size), 8)]
    return [
        [store.read_bytes(ALICE, artifact_id, a, b) for a, b in spans],
        store.text(
            ALICE, artifact_id, TextQuery(offset=FRAME_BYTES * 2 - 10, limit=5000)
        ).model_dump(),
        store.lines(ALICE, artifact_id, LineQuery(start=9_000, count=40)).model_dump(),
        store.tail(ALICE, artifact_id, TailQuery(lines=25)).model_dump(),
        store.grep(ALICE, artifact_id, GrepQuery(pattern=r"module_13\.c", context=1)).model_dump(),
    ]


def test_a_compacted_artifact_reads_exactly_as_it_did(store: ArtifactStore) -> None:
    data = _log(60_000)  # ~2.4 MB: frames of 256 KiB and a short last one
    artifact_id = write_artifact(store, data, chunks=[1_000_003, 77])
    before = _reads(store, artifact_id)
    info = store.get(ALICE, artifact_id)
    assert not info.compressed and info.stored_bytes == len(data)

    assert store.compactor.compact(artifact_id)

    after = store.get(ALICE, artifact_id)
    assert after.compressed and after.sha256 == hashlib.sha256(data).hexdigest()
    assert after.size_bytes == len(data) and after.line_count == info.line_count
    assert after.stored_bytes is not None and after.stored_bytes < len(data) // 2
    assert _reads(store, artifact_id) == before
    assert _everything(store, ALICE, artifact_id) == data
    assert not store.compactor.compact(artifact_id)  # once is enough


def _codecs(store: ArtifactStore, artifact_id: str) -> set[str | None]:
    _, content = store.open_content(ALICE, artifact_id)
    return {seg.codec for seg in content.plan(0, content.size)}


def test_each_codec_compacts_into_its_own_standard_frames_and_reads_the_others(
    store: ArtifactStore,
) -> None:
    """The setting picks the codec of new frames; a frame row names its codec, so
    outputs compacted under one setting read exactly under the other, and one
    sharing another's frames names their codec, not the setting's."""
    import lz4.frame

    from overspill.artifacts.stored.frames import _codec

    one, two = _log(20_000, seed=5), _log(20_000, seed=6)
    store.ctx.settings = store.ctx.settings.replace(compression="zstd")
    as_zstd = write_artifact(store, one)
    assert store.compactor.compact(as_zstd)
    store.ctx.settings = store.ctx.settings.replace(compression="lz4")
    as_lz4, shares = write_artifact(store, two), write_artifact(store, one)
    assert store.compactor.compact(as_lz4) and store.compactor.compact(shares)

    assert _codecs(store, as_zstd) == {"zstd"} and _codecs(store, shares) == {"zstd"}
    assert _codecs(store, as_lz4) == {"lz4"}
    assert store.get(ALICE, shares).stored_bytes == 0
    for artifact_id, data in ((as_zstd, one), (as_lz4, two), (shares, one)):
        assert _everything(store, ALICE, artifact_id) == data
    # Each frame is the codec's own format: its reference decoder reads it whole.
    for artifact_id, data, decoder in (
        (as_zstd, one, _codec().decompress),
        (as_lz4, two, lz4.frame.decompress),
    ):
        _, content = store.open_content(ALICE, artifact_id)
        first = content.plan(0, content.size)[0]
        assert first.stored_size is not None
        stored = b"".join(
            store.blobs.read(first.key, first.blob_offset, first.blob_offset + first.stored_size)
        )
        assert decoder(stored) == data[:FRAME_BYTES]


def test_auto_keeps_lz4_for_a_log_and_zstd_for_digits_lz4_cannot_shrink(
    store: ArtifactStore,
) -> None:
    """The default: each frame is lz4 (fast to read) unless that stores more than
    5% of the frame beyond zstd, as digits do (lz4 has no entropy stage)."""
    from overspill.artifacts.stored.frames import LZ4_MARGIN, _codec

    assert store.ctx.settings.compression == "auto"
    log, digits = _log(20_000, seed=8), b"".join(b"%d\n" % i for i in range(120_000))
    as_log, as_digits = write_artifact(store, log), write_artifact(store, digits)
    assert store.compactor.compact(as_log) and store.compactor.compact(as_digits)
    _, content = store.open_content(ALICE, as_log)
    whole = {seg.codec for seg in content.plan(0, content.size) if seg.size == FRAME_BYTES}
    assert whole == {"lz4"} and _codecs(store, as_digits) == {"zstd"}
    zstd_alone = sum(
        len(_codec().compress(digits[i : i + FRAME_BYTES], level=3))
        for i in range(0, len(digits), FRAME_BYTES)
    )
    assert store.get(ALICE, as_digits).stored_bytes == zstd_alone
    stored = store.get(ALICE, as_log).stored_bytes
    assert stored is not None and stored < len(log) * (0.3 + LZ4_MARGIN)
    assert _everything(store, ALICE, as_log) == log
    assert _everything(store, ALICE, as_digits) == digits


def test_random_bytes_stay_raw_and_cost_nothing_extra(store: ArtifactStore) -> None:
    data = os.urandom(3 * FRAME_BYTES + 1000)
    artifact_id = write_artifact(store, data)
    assert store.compactor.compact(artifact_id)
    info = store.get(ALICE, artifact_id)
    assert info.stored_bytes == len(data)  # every frame kept as it was
    assert _everything(store, ALICE, artifact_id) == data


def test_an_empty_or_still_written_artifact_is_left_alone(store: ArtifactStore) -> None:
    _hot_for(store, 0)  # (the hot tier has its own test)
    empty = write_artifact(store, b"")
    writer = store.open_writer(ALICE)
    writer.write(b"more to come\n")
    writer.flush()
    assert store.compactor.compact(empty)
    assert store.get(ALICE, empty).stored_bytes == 0
    assert not store.compactor.compact(writer.id)
    assert writer.id not in store.compactor.pending(100)
    writer.close()
    assert writer.id in store.compactor.pending(100)


def test_a_fresh_or_recently_read_output_stays_raw_until_it_cools(store: ArtifactStore) -> None:
    """The hot tier: nothing is compacted within ``hot_s`` of its last write or
    its last read; then the same pass takes it."""
    clock = ManualClock()
    store.clock = clock
    _hot_for(store, 900)
    artifact_id = write_artifact(store, _log(20_000))
    assert artifact_id not in store.compactor.pending(100)
    assert store.compactor.is_hot(artifact_id)
    clock.advance(seconds=600)
    store.tail(ALICE, artifact_id, TailQuery(lines=5))  # a read: hot again for 15 minutes
    store.ledger.flush()
    clock.advance(seconds=600)  # 20 minutes after the write, 10 after the read
    assert artifact_id not in store.compactor.pending(100)
    assert store.compactor.is_hot(artifact_id)
    assert not store.get(ALICE, artifact_id).compressed
    clock.advance(seconds=301)
    assert artifact_id in store.compactor.pending(100)
    assert not store.compactor.is_hot(artifact_id)
    assert store.compactor.compact(artifact_id)
    assert store.get(ALICE, artifact_id).compressed


def test_one_owners_identical_outputs_share_frames_until_the_last_goes(
    store: ArtifactStore,
) -> None:
    data = _log(40_000, seed=3)
    first = write_artifact(store, data)
    second = write_artifact(store, data)
    assert store.compactor.compact(first) and store.compactor.compact(second)
    kept = store.get(ALICE, first).stored_bytes
    assert kept is not None and 0 < kept < len(data)
    assert store.get(ALICE, second).stored_bytes == 0  # every frame was already stored
    assert store.usage(ALICE)[0]["bytes"] == kept
    assert store.usage(ALICE)[0]["output_bytes"] == 2 * len(data)

    store.delete(ALICE, first)
    store.sweeper.run()
    assert _everything(store, ALICE, second) == data  # the frames it names stayed
    store.delete(ALICE, second)
    store.sweeper.run()
    assert _blob_keys(store) == []  # the last reference gone, so is the pack


def test_outputs_of_different_owners_never_share_a_frame(store: ArtifactStore) -> None:
    data = _log(20_000, seed=4)
    mine = write_artifact(store, data, ALICE)
    theirs = write_artifact(store, data, BOB)
    assert store.compactor.compact(mine) and store.compactor.compact(theirs)
    assert store.get(BOB, theirs).stored_bytes == store.get(ALICE, mine).stored_bytes
    store.delete(ALICE, mine)
    store.sweeper.run()
    assert _everything(store, BOB, theirs) == data


def test_a_read_under_way_goes_on_across_the_compaction(store: ArtifactStore) -> None:
    data = _log(50_000, seed=5)
    artifact_id = write_artifact(store, data)
    _, content = store.open_content(ALICE, artifact_id)
    chunks = content.iter_range(0, content.size)
    got = [next(chunks)]  # the read has begun on the raw rows
    assert store.compactor.compact(artifact_id)  # ... and the raw blobs are gone
    got.extend(chunks)
    assert b"".join(got) == data


def test_a_compaction_whose_store_fails_leaves_the_artifact_as_written(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _log(30_000, seed=6)
    artifact_id = write_artifact(store, data)
    keys = _blob_keys(store)
    real_put = store.blobs.put
    calls = []

    def failing_put(key: str, payload: Any) -> None:
        calls.append(key)
        if len(calls) > 1:
            raise StorageUnavailable("disk full (test)")
        real_put(key, payload)

    monkeypatch.setattr(store.blobs, "put", failing_put)
    monkeypatch.setattr(
        "overspill.artifacts.writing.compaction.FRAMES_PER_PACK", 2
    )  # several packs
    assert not store.compactor.compact(artifact_id)
    assert _blob_keys(store) == keys  # the pack it did write was given back
    assert not store.get(ALICE, artifact_id).compressed
    assert _everything(store, ALICE, artifact_id) == data
    monkeypatch.setattr(store.blobs, "put", real_put)
    assert store.compactor.compact(artifact_id)  # a later pass succeeds


def test_a_delete_during_compaction_wins_and_nothing_is_left(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    artifact_id = write_artifact(store, _log(20_000, seed=8))
    real = Compactor._write_frames

    def then_delete(self: Compactor, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        store.delete(ALICE, artifact_id)

    monkeypatch.setattr(Compactor, "_write_frames", then_delete)
    assert not store.compactor.compact(artifact_id)
    store.sweeper.run()
    assert _blob_keys(store) == []


def test_concurrent_compactions_and_deletes_of_shared_frames_lose_nothing(
    store: ArtifactStore,
) -> None:
    """Eight copies of one output, compacted on four threads while half of them
    are deleted and purged: the survivors read whole, and once all are gone no
    blob is left (no pack freed while named, none kept once unnamed)."""
    data = _log(12_000, seed=9)
    ids = [write_artifact(store, data) for _ in range(8)]
    doomed, kept = ids[::2], ids[1::2]
    errors: list[BaseException] = []

    def compact(share: list[str]) -> None:
        try:
            for artifact_id in share:
                store.compactor.compact(artifact_id)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    def delete() -> None:
        try:
            for artifact_id in doomed:
                store.delete(ALICE, artifact_id)
                store.sweeper.run(reconcile=False)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=compact, args=(ids[i::3],)) for i in range(3)]
    threads.append(threading.Thread(target=delete))
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    store.compactor.run()
    for artifact_id in kept:
        assert _everything(store, ALICE, artifact_id) == data
    for artifact_id in kept:
        store.delete(ALICE, artifact_id)
    store.sweeper.run()
    assert _blob_keys(store) == []


def test_usage_counts_what_the_store_holds(store: ArtifactStore) -> None:
    data = _log(30_000, seed=10)
    artifact_id = write_artifact(store, data)
    assert store.usage(ALICE)[0]["bytes"] == len(data)
    store.compactor.compact(artifact_id)
    stored = store.get(ALICE, artifact_id).stored_bytes
    row = store.usage(ALICE)[0]
    assert row["bytes"] == stored and row["output_bytes"] == len(data)
    with store.db.read() as s:  # the counter quotas admit against
        assert store.quotas._usage(s, ALICE.name) == stored


@pytest.fixture
def pages(store: ArtifactStore) -> Iterator[Any]:
    from tests.api_helpers import make_api

    yield make_api(store)


def test_http_ranges_of_a_compacted_artifact_are_the_stored_bytes(pages: Any) -> None:
    data = _log(30_000, seed=11)
    artifact_id = write_artifact(pages.store, data)
    pages.store.compactor.compact(artifact_id)
    h = {"Authorization": f"Bearer {pages.alice}"}
    whole = pages.client.get(f"/v1/artifacts/{artifact_id}/content", headers=h)
    assert whole.status_code == 200 and whole.content == data
    a, b = FRAME_BYTES - 100, 3 * FRAME_BYTES + 17
    part = pages.client.get(
        f"/v1/artifacts/{artifact_id}/content", headers={**h, "Range": f"bytes={a}-{b}"}
    )
    assert part.status_code == 206 and part.content == data[a : b + 1]
    info = pages.client.get(f"/v1/artifacts/{artifact_id}", headers=h).json()
    assert info["compressed"] is True and info["stored_bytes"] < info["size_bytes"]


def test_a_compacted_output_read_again_decodes_nothing_again(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tail, then a grep, then a window, each a read of its own: the frames
    the first decoded serve the others (the process's frame cache), and the
    answers are the same as from the raw bytes."""
    import overspill.artifacts.stored.content as content_module
    from overspill.artifacts.stored.frame_cache import FRAMES
    from overspill.artifacts.stored.frames import decode as real

    data = _log(40_000)
    artifact_id = write_artifact(store, data)
    before = _reads(store, artifact_id)
    assert store.compactor.compact(artifact_id)
    FRAMES.clear()
    decoded: list[int] = []

    def counting(codec: str | None, stored: bytes, size: int, upto: int | None = None) -> bytes:
        decoded.append(size)
        return real(codec, stored, size, upto)

    monkeypatch.setattr(content_module, "decode", counting)
    assert _reads(store, artifact_id) == before
    first = len(decoded)
    assert first > 0
    assert _reads(store, artifact_id) == before
    assert len(decoded) == first  # every frame came from the cache
    assert FRAMES.size <= FRAMES.capacity


def test_the_frame_cache_keeps_the_most_recent_frames_within_its_bytes() -> None:
    from overspill.artifacts.stored.frame_cache import FrameCache

    cache = FrameCache(capacity=10)
    for i in range(6):
        cache.put(("k", i), b"abc")
    assert cache.size == 9 and cache.get(("k", 0)) is None and cache.get(("k", 5)) == b"abc"
    cache.get(("k", 3))  # used: kept over the older ones
    cache.put(("k", 9), b"abcd")
    assert cache.get(("k", 3)) == b"abc" and cache.get(("k", 4)) is None
    assert cache.size <= 10
    cache.put(("big", 0), b"x" * 11)  # larger than the whole cache: not kept
    assert cache.get(("big", 0)) is None


@contextmanager
def _segment_queries(store: ArtifactStore) -> Iterator[list[str]]:
    """The SQL statements that select segment rows, as they run."""
    from sqlalchemy import event

    seen: list[str] = []

    def note(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "FROM segments" in statement:
            seen.append(statement)

    event.listen(store.engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(store.engine, "before_cursor_execute", note)


def test_a_read_again_of_an_output_asks_the_database_for_no_segment_rows(
    store: ArtifactStore,
) -> None:
    """The process keeps each artifact's few segment rows (``ROWS``): the model's
    second read of an output plans from them, not from a query, and reads the
    same bytes, raw and compacted."""
    from overspill.artifacts.stored.frame_cache import clear_read_caches

    data = _log(40_000)
    artifact_id = write_artifact(store, data)
    for compacted in (False, True):
        if compacted:
            assert store.compactor.compact(artifact_id)
        clear_read_caches()
        before = _reads(store, artifact_id)
        with _segment_queries(store) as queries:
            assert _reads(store, artifact_id) == before
        assert queries == []
        assert b"".join(before[0]) == b"".join(data[a:b] for a, b in _spans(store, artifact_id))


def _spans(store: ArtifactStore, artifact_id: str) -> list[tuple[int, int]]:
    size = store.get(ALICE, artifact_id).size_bytes
    rng = random.Random(7)
    spans = [(0, 1), (FRAME_BYTES - 5, FRAME_BYTES + 5), (size - 3, size)]
    return spans + [(a, a + rng.randrange(1, 70_000)) for a in rng.sample(range(size), 8)]


def test_rows_kept_from_before_a_compaction_still_read_the_same_bytes(
    store: ArtifactStore,
) -> None:
    """A compaction changes no bytes and, in this process, no version of the row
    the kept rows are keyed by (the stored size does): either way a read after it
    gives what was printed, from the new rows once the old blobs are gone."""
    data = _log(40_000, seed=3)
    artifact_id = write_artifact(store, data)

    def whole() -> bytes:
        return b"".join(store.open_content(ALICE, artifact_id)[1].iter_range(0, len(data)))

    assert whole() == data
    assert store.compactor.compact(artifact_id)
    assert whole() == data
    assert store.tail(ALICE, artifact_id, TailQuery(lines=3)).text.encode() == b"".join(
        data.splitlines(keepends=True)[-3:]
    )


def test_a_stale_kept_row_whose_blob_is_gone_is_dropped_and_read_again(
    store: ArtifactStore,
) -> None:
    """Rows kept under the version a read still sees, naming blobs a rewrite has
    removed: the read drops them and plans from the database, once."""
    from overspill.artifacts.stored.frame_cache import ROWS

    data = _log(40_000, seed=4)
    artifact_id = write_artifact(store, data)
    info = store.get(ALICE, artifact_id)
    content = store.reader.content(info)
    content.read(0, 10)  # kept: the raw segments' rows
    version = (info.size_bytes, (info.updated_at, info.stored_bytes, info.compressed))
    stale = ROWS.get(artifact_id, version)
    assert stale is not None
    assert store.compactor.compact(artifact_id)
    ROWS.put(artifact_id, version, stale)  # as if this process kept them past it
    again = store.reader.content(info)  # a read with the old row's version
    assert again.read(0, len(data)) == data
    assert ROWS.get(artifact_id, version) != stale


def test_the_row_cache_keeps_the_most_recent_lists_within_its_rows() -> None:
    from overspill.artifacts.stored.frame_cache import RowCache

    cache: RowCache[int] = RowCache(capacity=10)
    for i in range(5):
        cache.put(f"a{i}", 1, [i, i, i])
    assert cache.size == 9 and cache.get("a0", 1) is None and cache.get("a4", 1) == [4, 4, 4]
    assert cache.get("a4", 2) is None  # another version of the row: not these rows
    cache.get("a2", 1)
    cache.put("a9", 1, [9, 9])
    assert cache.get("a2", 1) == [2, 2, 2] and cache.get("a3", 1) is None
    cache.put("a9", 2, [9])  # a new version replaces the old
    assert cache.get("a9", 1) is None and cache.size <= 10
    cache.put("big", 1, list(range(11)))
    assert cache.get("big", 1) is None
    cache.drop("a2")
    assert cache.get("a2", 1) is None


def test_a_long_read_of_a_compacted_output_decodes_every_other_frame_ahead(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grep or a download decodes every zstd frame: a second thread decodes
    every other one meanwhile. The bytes are the same; a read stopped early
    leaves no frame waiting to be decoded; a window decodes nothing ahead; lz4
    frames (quicker to decode than to hand over) are all decoded by the reader."""
    import overspill.artifacts.stored.decode_ahead as ahead_module
    from overspill.artifacts.stored.frame_cache import FRAMES
    from overspill.artifacts.stored.frames import decode as real

    data = _log(100_000, seed=50)  # ~4 MB: 16 frames (a seed of its own: no frame shared)
    store.ctx.settings = store.ctx.settings.replace(compression="lz4")
    as_lz4 = write_artifact(store, data[::-1])
    assert store.compactor.compact(as_lz4)
    store.ctx.settings = store.ctx.settings.replace(compression="zstd")
    artifact_id = write_artifact(store, data)
    assert store.compactor.compact(artifact_id)
    where: list[str] = []

    def noting(codec: str | None, stored: bytes, size: int, upto: int | None = None) -> bytes:
        where.append(threading.current_thread().name)
        return real(codec, stored, size, upto)

    monkeypatch.setattr(ahead_module, "decode", noting)
    frames = -(-len(data) // FRAME_BYTES)
    for _ in range(5):  # (a frame the decoder has not begun when it is due is decoded
        FRAMES.clear()  # by the reader: on a loaded machine, now and then all of them)
        where.clear()
        assert _everything(store, ALICE, artifact_id) == data
        if where:
            break
    assert where and all(name.startswith("frame-decode") for name in where)
    assert len(where) <= frames // 2 + 1

    FRAMES.clear()
    where.clear()
    _, content = store.open_content(ALICE, artifact_id)
    reading = content.iter_range(0, content.size)
    assert isinstance(reading, types.GeneratorType)
    assert next(reading)[:7] == data[:7]
    reading.close()  # stopped early: what was sent ahead is cancelled or done
    pool = ahead_module._decoder()
    pool.submit(lambda: None).result()  # (the decoder has caught up)
    assert len(where) <= ahead_module.AHEAD

    FRAMES.clear()
    where.clear()
    assert store.read_bytes(ALICE, artifact_id, 5 * FRAME_BYTES - 9, 5 * FRAME_BYTES + 9)
    assert where == []

    FRAMES.clear()
    assert _everything(store, ALICE, as_lz4) == data[::-1]
    assert where == []  # (the reader's own decoding goes through content, not here)
    assert _codecs(store, as_lz4) == {"lz4"}


def test_a_long_read_keeps_only_its_first_frames_and_a_short_one_keeps_what_it_decodes(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scan of the whole output keeps LONG_READ_KEEPS of its first frames and
    those of its last END_KEEPS bytes in the process's cache, not all it decodes (which pushed out the short reads' frames
    and halved decoding speed); a window keeps its frame for the next read."""
    import overspill.artifacts.stored.content as content_module
    from overspill.artifacts.stored.frame_cache import FRAMES

    monkeypatch.setattr(content_module, "LONG_READ_KEEPS", 2 * FRAME_BYTES)
    data = _log(100_000, seed=51)
    artifact_id = write_artifact(store, data)
    assert store.compactor.compact(artifact_id)
    monkeypatch.setattr(content_module, "END_KEEPS", 1)
    FRAMES.clear()
    assert _everything(store, ALICE, artifact_id) == data
    assert 0 < FRAMES.size <= 3 * FRAME_BYTES  # the first two, and the last
    FRAMES.clear()
    window = store.read_bytes(ALICE, artifact_id, 9 * FRAME_BYTES + 5, 9 * FRAME_BYTES + 70_000)
    assert window == data[9 * FRAME_BYTES + 5 : 9 * FRAME_BYTES + 70_000]
    assert FRAMES.size >= 70_000
