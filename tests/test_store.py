"""The store's behaviour on every {SQLite, PostgreSQL} x {local, S3} pair."""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from overspill.artifacts.errors import (
    Conflict,
    InvalidArgument,
    InvalidRange,
    NotFound,
    StorageUnavailable,
)
from overspill.artifacts.queries import GrepQuery, LineQuery, ListQuery, TailQuery, TextQuery
from overspill.artifacts.store import ArtifactStore
from tests.helpers import ADMIN, ALICE, BOB, write_artifact

MiB = 1024 * 1024


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=300_000), cuts=st.lists(st.integers(0, 300_000), max_size=12))
def test_bytes_come_back_exactly_for_any_chunking(
    store: ArtifactStore, data: bytes, cuts: list[int]
) -> None:
    points = sorted({c for c in cuts if c < len(data)})
    writer = store.open_writer(ALICE)
    prev = 0
    for p in [*points, len(data)]:
        writer.write(data[prev:p])
        prev = p
    result = writer.close()
    assert result.state == "complete"
    assert result.sha256 == hashlib.sha256(data).hexdigest()
    _, content = store.open_content(ALICE, writer.id)
    assert b"".join(content.iter_range(0, len(data))) == data
    info = store.get(ALICE, writer.id)
    assert info.size_bytes == info.total_bytes == len(data)
    assert info.line_count == data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)


def test_every_byte_range_across_segment_boundaries(store: ArtifactStore) -> None:
    data = bytes(range(24))
    # flush after each chunk: segments of 7, 1, 13 and the last 3
    art = write_artifact(store, data, chunks=[7, 1, 13])
    for start in range(0, 25):
        for end in range(start, 26):
            assert store.read_bytes(ALICE, art, start, end) == data[start:end]


def test_negative_and_inverted_ranges_are_rejected(store: ArtifactStore) -> None:
    art = write_artifact(store, b"hello")
    with pytest.raises(InvalidRange, match="invalid byte range"):
        store.read_bytes(ALICE, art, -1, 3)
    with pytest.raises(InvalidRange, match="invalid byte range"):
        store.read_bytes(ALICE, art, 4, 2)
    with pytest.raises(ValidationError, match="offset"):
        TextQuery(offset=-5)
    with pytest.raises(ValidationError, match="start"):
        LineQuery(start=0)  # a query out of its bounds cannot even be built


def test_text_windows_tile_exactly_and_split_a_character_only_when_smaller(
    store: ArtifactStore,
) -> None:
    text = "a€b😀c" * 10 + "é"  # every width of character, at every offset mod 4
    data = text.encode()
    art = write_artifact(store, data, chunks=[101, 5, 7])
    for limit in (1, 2, 3, 4, 5, 64, 1000):
        offset, pieces, spans = 0, [], []
        while True:
            win = store.text(ALICE, art, TextQuery(offset=offset, limit=limit))
            assert win.offset == offset and win.next_offset <= offset + limit
            assert win.next_offset > offset or win.eof
            pieces.append(win.text)
            spans.append((win.offset, win.next_offset))
            offset = win.next_offset
            if win.eof:
                break
        # Each stored byte exactly once, in order.
        assert spans[0][0] == 0 and spans[-1][1] == len(data)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
        if limit >= 4:  # a window that can hold any character never splits one
            assert "".join(pieces) == text
        assert win.complete


def test_a_text_window_starts_at_the_offset_asked_even_mid_character(
    store: ArtifactStore,
) -> None:
    art = write_artifact(store, "€x€€".encode())
    win = store.text(ALICE, art, TextQuery(offset=1, limit=10))
    assert (win.offset, win.split_start, win.text) == (1, 2, "\ufffd\ufffdx€€")
    short = store.text(ALICE, art, TextQuery(offset=1, limit=6))
    assert (short.offset, short.next_offset, short.text) == (1, 7, "\ufffd\ufffdx€")
    split = store.text(ALICE, art, TextQuery(offset=1, limit=5))  # never past offset + limit
    assert (split.offset, split.next_offset, split.text) == (1, 4, "\ufffd\ufffdx")


def test_lines_handle_crlf_and_missing_final_newline(store: ArtifactStore) -> None:
    art = write_artifact(store, b"one\r\ntwo\r\nthree", chunks=[4, 3])
    win = store.lines(ALICE, art, LineQuery(start=1, count=10))
    assert [ln.text for ln in win.lines] == ["one", "two", "three"]
    assert [ln.number for ln in win.lines] == [1, 2, 3]
    assert win.eof and win.line_count == 3
    second = store.lines(ALICE, art, LineQuery(start=2, count=1))
    assert [ln.text for ln in second.lines] == ["two"] and second.next_line == 3
    assert store.lines(ALICE, art, LineQuery(start=4, count=1)).lines == []


def test_line_lookup_uses_segments_and_finds_every_line(store: ArtifactStore) -> None:
    lines = [f"line {i}" for i in range(1, 2001)]
    data = ("\n".join(lines) + "\n").encode()
    art = write_artifact(store, data, chunks=[5000, 3, 7777, 1])
    for n in (1, 2, 500, 733, 1999, 2000):
        win = store.lines(ALICE, art, LineQuery(start=n, count=2))
        assert win.lines[0].text == f"line {n}"
    assert store.get(ALICE, art).line_count == 2000
    assert store.lines(ALICE, art, LineQuery(start=2001, count=1)).lines == []


def test_empty_artifact_reads(store: ArtifactStore) -> None:
    art = write_artifact(store, b"")
    info = store.get(ALICE, art)
    assert info.state == "complete" and info.size_bytes == 0 and info.line_count == 0
    assert info.sha256 == hashlib.sha256(b"").hexdigest()
    assert store.text(ALICE, art).text == ""
    assert store.text(ALICE, art).eof
    assert store.lines(ALICE, art, LineQuery()).lines == []
    assert store.tail(ALICE, art, TailQuery(lines=5)).text == ""
    assert store.grep(ALICE, art, GrepQuery(pattern="x")).matches == []


def test_tail_by_lines_and_bytes(store: ArtifactStore) -> None:
    data = b"".join(b"row %d\n" % i for i in range(100))
    art = write_artifact(store, data, chunks=[333])
    t = store.tail(ALICE, art, TailQuery(lines=3))
    assert t.text == "row 97\nrow 98\nrow 99\n" and t.first_line == 98
    assert store.tail(ALICE, art, TailQuery(bytes=7)).text == "\nrow 99\n"[-7:]
    nofinal = write_artifact(store, b"a\nb\nc")
    assert store.tail(ALICE, nofinal, TailQuery(lines=2)).text == "b\nc"
    crlf = write_artifact(store, b"x\r\ny\r\n")
    assert store.tail(ALICE, crlf, TailQuery(lines=1)).text == "y\r\n"


def test_tail_is_bounded_and_says_so(store: ArtifactStore) -> None:
    art = write_artifact(store, b"x" * 10_000)
    t = store.tail(ALICE, art, TailQuery(lines=1, max_bytes=100))
    assert len(t.text) == 100 and t.truncated and t.first_line is None


def test_very_long_lines_are_truncated_in_windows_not_lost(store: ArtifactStore) -> None:
    data = b"a" * 200_000 + b"\nshort\n"
    art = write_artifact(store, data)
    win = store.lines(ALICE, art, LineQuery(start=1, count=2))
    assert win.lines[0].truncated and len(win.lines[0].text) == 64 * 1024
    assert win.lines[1].text == "short"
    assert store.read_bytes(ALICE, art, 199_990, 200_001) == b"a" * 10 + b"\n"


def test_grep_reports_lines_offsets_and_context(store: ArtifactStore) -> None:
    data = b"alpha\nBeta one\ngamma\nbeta two\r\ndelta\n"
    art = write_artifact(store, data, chunks=[8])
    res = store.grep(ALICE, art, GrepQuery(pattern="beta", ignore_case=True, context=1))
    assert [m.line.number for m in res.matches] == [2, 4]
    assert [m.line.offset for m in res.matches] == [6, 21]
    assert res.matches[1].line.text == "beta two"
    assert [ln.text for ln in res.matches[0].before] == ["alpha"]
    assert [ln.text for ln in res.matches[0].after] == ["gamma"]
    assert [ln.text for ln in res.matches[1].after] == ["delta"]
    assert res.eof and not res.truncated
    assert store.grep(ALICE, art, GrepQuery(pattern="beta")).matches[0].line.number == 4


def test_grep_fixed_strings_and_continuation(store: ArtifactStore) -> None:
    data = b"".join(b"a.b %d\n" % i for i in range(50)) + b"axb\n"
    art = write_artifact(store, data)
    first = store.grep(ALICE, art, GrepQuery(pattern="a.b", fixed=True, max_matches=20))
    assert len(first.matches) == 20 and first.truncated and not first.eof
    rest = store.grep(
        ALICE, art, GrepQuery(pattern="a.b", fixed=True, max_matches=100, offset=first.next_offset)
    )
    assert [m.line.number for m in rest.matches] == list(range(21, 51))
    assert rest.eof


def test_grep_pattern_that_blows_up_backtracking_finishes(store: ArtifactStore) -> None:
    art = write_artifact(store, b"a" * 50_000 + b"b\n")
    res = store.grep(ALICE, art, GrepQuery(pattern=r"(a+)+$"))
    assert res.matches == [] and res.eof
    res = store.grep(ALICE, art, GrepQuery(pattern=r"(a|aa)+b"))
    assert len(res.matches) == 1


def test_invalid_regex_is_a_clear_error(store: ArtifactStore) -> None:
    art = write_artifact(store, b"x")
    with pytest.raises(InvalidArgument, match="invalid regular expression"):
        store.grep(ALICE, art, GrepQuery(pattern="(unclosed"))
    with pytest.raises(InvalidArgument, match="must not be empty"):
        store.grep(ALICE, art, GrepQuery.model_construct(pattern=""))


def test_cap_keeps_the_prefix_and_counts_the_rest(store: ArtifactStore) -> None:
    writer = store.open_writer(ALICE, max_bytes=10)
    writer.write(b"0123456")
    writer.write(b"789abcdef")
    writer.write(b"more")
    result = writer.close()
    assert result.state == "capped"
    info = store.get(ALICE, writer.id)
    assert (info.state, info.size_bytes, info.total_bytes) == ("capped", 10, 20)
    assert store.read_bytes(ALICE, writer.id, 0, 100) == b"0123456789"
    assert info.sha256 == hashlib.sha256(b"0123456789").hexdigest()


def test_another_owners_artifact_is_indistinguishable_from_a_missing_one(
    store: ArtifactStore,
) -> None:
    art = write_artifact(store, b"secret", principal=ALICE)
    missing = "art_" + "0" * 26
    for call in (
        lambda a: store.get(BOB, a),
        lambda a: store.read_bytes(BOB, a, 0, 1),
        lambda a: store.text(BOB, a),
        lambda a: store.grep(BOB, a, GrepQuery(pattern="s")),
        lambda a: store.delete(BOB, a),
    ):
        with pytest.raises(NotFound) as theirs:
            call(art)
        with pytest.raises(NotFound) as nothing:
            call(missing)
        assert str(theirs.value).replace(art, "ID") == str(nothing.value).replace(missing, "ID")
    assert store.get(ADMIN, art).owner == ALICE.name
    assert store.list(BOB).items == []
    assert [i.id for i in store.list(ALICE).items] == [art]


def test_invalid_ids_are_rejected_by_shape(store: ArtifactStore) -> None:
    for bad in ("", "art_", "art_../../etc/passwd", "ART_" + "0" * 26, "art_" + "I" * 26):
        with pytest.raises(InvalidArgument, match="invalid artifact id"):
            store.get(ALICE, bad)


def test_delete_leaves_a_tombstone_and_frees_the_bytes(store: ArtifactStore) -> None:
    from overspill.artifacts.errors import Gone

    art = write_artifact(store, os.urandom(200_000))
    info = store.delete(ALICE, art)
    assert info.state == "deleted" and info.deleted_at is not None
    with pytest.raises(Gone) as exc:
        store.read_bytes(ALICE, art, 0, 10)
    assert exc.value.reason == "deleted"
    assert store.list(ALICE).items == []
    assert [i.id for i in store.list(ALICE, ListQuery(include_gone=True)).items] == [art]
    assert list(store.blobs.list(art)) == []
    assert store.delete(ALICE, art).state == "deleted"  # idempotent


def test_writer_publishes_on_time_so_slow_output_is_visible(store: ArtifactStore) -> None:
    import time

    writer = store.open_writer(ALICE)
    writer.write(b"first line\n")
    deadline = time.monotonic() + 5
    while store.get(ALICE, writer.id).size_bytes == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    info = store.get(ALICE, writer.id)
    assert info.state == "writing" and info.size_bytes == 11
    assert store.text(ALICE, writer.id).text == "first line\n"
    assert not store.text(ALICE, writer.id).complete
    writer.close()


def test_appending_after_close_is_a_conflict(store: ArtifactStore) -> None:
    writer = store.open_writer(ALICE)
    writer.close()
    with pytest.raises(Conflict):
        writer.write(b"late")


def test_list_filters_and_sorts(store: ArtifactStore) -> None:
    small = write_artifact(store, b"x", session_id="s1", kind="output")
    big = write_artifact(store, b"y" * 5000, session_id="s2", kind="log")
    mid = write_artifact(store, b"z" * 100, session_id="s1")
    assert [i.id for i in store.list(ALICE, ListQuery(sort="size")).items] == [big, mid, small]
    assert [i.id for i in store.list(ALICE, ListQuery(sort="size", order="asc")).items] == [
        small,
        mid,
        big,
    ]
    assert {i.id for i in store.list(ALICE, ListQuery(session_id="s1")).items} == {small, mid}
    assert [i.id for i in store.list(ALICE, ListQuery(kind="log")).items] == [big]
    assert [i.id for i in store.list(ALICE, ListQuery(min_size=100, sort="size")).items] == [
        big,
        mid,
    ]
    assert store.list(ALICE, with_total=True).total_bytes == 5101
    assert [i.id for i in store.list(ALICE, ListQuery(state="complete", sort="size")).items] == [
        big,
        mid,
        small,
    ]
    with pytest.raises(ValidationError, match="state"):
        ListQuery(state="bogus")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="invalid cursor"):
        store.list(ALICE, ListQuery(cursor="not-a-cursor"))


def test_pagination_is_stable_under_concurrent_inserts(store: ArtifactStore) -> None:
    original = [write_artifact(store, b"x" * (i + 1)) for i in range(23)]
    for sort in ("created", "size"):
        seen: list[str] = []
        cursor = None
        while True:
            page = store.list(ALICE, ListQuery(sort=sort, limit=5, cursor=cursor))
            seen.extend(i.id for i in page.items)
            write_artifact(store, b"new" * 7)  # lands while we page
            cursor = page.next_cursor
            if cursor is None:
                break
        assert len(seen) == len(set(seen))
        assert set(original) <= set(seen)


def test_a_storage_failure_mid_write_fails_the_artifact_but_keeps_what_was_stored(
    store: ArtifactStore,
) -> None:
    writer = store.open_writer(ALICE)
    writer.write(b"kept\n" * 100)
    writer.flush()
    _break_blob_backend(store)
    with pytest.raises(StorageUnavailable):
        # A writer that places bytes (local) fails at the write, a buffering one
        # (S3) when the segment is stored: at the flush at the latest.
        writer.write(b"lost\n" * 100)
        writer.flush()
    with pytest.raises(StorageUnavailable):
        writer.write(b"more")
    result = writer.close()
    assert result.state == "failed" and result.error and result.size_bytes == 500
    info = store.get(ALICE, writer.id)
    assert info.state == "failed" and info.error == result.error and info.size_bytes == 500


def test_unset_segment_size_takes_the_backends_own(store: ArtifactStore) -> None:
    from overspill.artifacts.blobs.s3 import S3BlobStore

    own = ArtifactStore.open(store.settings.replace(segment_bytes=None))
    try:
        writer = own.open_writer(ALICE)
        writer.write(b"x" * (9 * MiB + 1))
        writer.close()
        content = own.open_content(ALICE, writer.id)[1]
        sizes = [seg.size for seg in content._segments_from(0)]
    finally:
        own.close()
    if isinstance(store.blobs, S3BlobStore):
        assert sizes == [4 * MiB, 4 * MiB, MiB + 1]
    else:
        assert sizes == [8 * MiB, MiB + 1]


def _break_blob_backend(store: ArtifactStore) -> None:
    """Make the real backend unusable: the blob root becomes a file; the bucket vanishes."""
    from overspill.artifacts.blobs.local import LocalBlobStore
    from overspill.artifacts.blobs.s3 import S3BlobStore

    if isinstance(store.blobs, LocalBlobStore):
        root = Path(store.blobs.root)
        root.rename(root.with_name("moved-away"))
        root.write_bytes(b"not a directory")
    else:
        assert isinstance(store.blobs, S3BlobStore)
        import boto3

        s3 = boto3.client("s3")
        for obj in s3.list_objects_v2(Bucket=store.blobs.bucket).get("Contents", []):
            s3.delete_object(Bucket=store.blobs.bucket, Key=obj["Key"])
        s3.delete_bucket(Bucket=store.blobs.bucket)


def test_an_unreachable_database_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from overspill.artifacts.config import StoreSettings

    settings = StoreSettings(
        home=tmp_path, database_url="postgresql+psycopg://nobody@127.0.0.1:1/none"
    )
    with pytest.raises(StorageUnavailable, match=r"database .*127\.0\.0\.1:1/none unreachable"):
        ArtifactStore.open(settings)


def test_an_unsupported_database_url_is_a_configuration_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from overspill.artifacts.config import StoreSettings
    from overspill.artifacts.errors import ConfigurationError

    with pytest.raises(
        ConfigurationError, match=r"unsupported database URL 'mysql://u:\*\*\*@h/d'"
    ) as e:
        ArtifactStore.open(StoreSettings(home=tmp_path, database_url="mysql://u:pw@h/d"))
    assert "pw" not in str(e.value)


def test_bad_settings_name_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from overspill.artifacts.config import StoreSettings
    from overspill.artifacts.errors import ConfigurationError

    monkeypatch.setenv("OVERSPILL_SEGMENT_BYTES", "-3")
    with pytest.raises(ConfigurationError, match="OVERSPILL_SEGMENT_BYTES"):
        StoreSettings.load()


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 40), st.integers(0, 200))
def test_newline_counts_agree_with_bytes_count_at_any_length_and_end(
    data: bytes, repeat: int, cut: int
) -> None:
    from overspill.artifacts.newlines import count_newlines

    # Lengths up to ~12 KB cross every vector width and alignment the count uses.
    big = data * (1 + repeat)
    end = max(len(big) - cut, 0)
    assert count_newlines(memoryview(bytearray(big))[:end]) == big[:end].count(b"\n")
    assert count_newlines(big[1:]) == big[1:].count(b"\n")
    assert count_newlines(memoryview(bytearray(big))[: len(big) + 5]) == big.count(b"\n")


def test_a_loose_data_directory_is_made_private(tmp_path: Path) -> None:
    import os
    import stat

    from overspill.artifacts.config import StoreSettings

    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    ArtifactStore.open(StoreSettings(home=home)).close()
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700


def test_several_processes_starting_on_a_fresh_home_all_succeed(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env["OVERSPILL_HOME"] = str(tmp_path / "fresh")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "overspill.api.cli", "ls"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(6)
    ]
    results = [(*p.communicate(timeout=120), p.returncode) for p in procs]
    assert [r[2] for r in results] == [0] * 6, [r[1].decode() for r in results]


def test_a_database_that_is_down_is_storage_unavailable_for_tokens_and_content(
    store: ArtifactStore,
) -> None:
    from sqlalchemy import event

    from overspill.artifacts.errors import StorageUnavailable

    art = write_artifact(store, b"x\n")
    _, content = store.open_content(ALICE, art)
    store.engine.dispose()
    dbapi = store.engine.dialect.dbapi

    @event.listens_for(store.engine, "do_connect")
    def down(*args: object) -> None:
        raise dbapi.OperationalError("the database is down")  # type: ignore[union-attr]

    with pytest.raises(StorageUnavailable, match="database unavailable"):
        store.tokens.authenticate("ovs_" + "x" * 40)
    with pytest.raises(StorageUnavailable, match="database unavailable"):
        content.read(0, 2)
    event.remove(store.engine, "do_connect", down)


def test_complete_refuses_to_record_a_hash_of_bytes_that_grew_meanwhile(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from overspill.artifacts.errors import OffsetConflict

    info = store.create(ALICE)
    store.append(ALICE, info.id, 0, iter([b"first "]))
    real_content = store.reader.content

    def content_then_append(i: object) -> object:
        c = real_content(i)  # type: ignore[arg-type]
        store.append(ALICE, info.id, 6, iter([b"second"]))  # lands while hashing
        return c

    monkeypatch.setattr(store.reader, "content", content_then_append)
    with pytest.raises(OffsetConflict):
        store.complete(ALICE, info.id)
    monkeypatch.undo()
    done = store.complete(ALICE, info.id)
    assert done.size_bytes == 12
    assert done.sha256 == __import__("hashlib").sha256(b"first second").hexdigest()


def test_a_missing_extra_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from overspill.artifacts.blobs.registry import open_blob_store
    from overspill.artifacts.db.engine import make_engine
    from overspill.artifacts.errors import ConfigurationError

    monkeypatch.setitem(sys.modules, "boto3", None)  # as if not installed
    with pytest.raises(ConfigurationError, match=r"pip install 'overspill\[s3\]'"):
        open_blob_store("s3://bucket/p")
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ConfigurationError, match=r"pip install 'overspill\[postgres\]'"):
        make_engine("postgresql+psycopg://u@127.0.0.1:1/d")
    with pytest.raises(ConfigurationError, match="known schemes are file://, s3://"):
        open_blob_store("gs://bucket/p")


def test_segments_record_where_they_sit_in_their_blob_and_old_rows_still_read(
    store: ArtifactStore,
) -> None:
    from sqlalchemy import select, update

    from overspill.artifacts.db.models import Segment

    data = b"".join(b"%06d\n" % i for i in range(60_000))  # several segments per batch
    art = write_artifact(store, data)
    with store._sessions() as s:
        rows = s.execute(select(Segment).where(Segment.artifact_id == art)).scalars().all()
        assert len(rows) > 2 and all(r.blob_offset is not None for r in rows)
    assert store.read_bytes(ALICE, art, 0, len(data)) == data
    with store.db.write() as s:  # as rows written before migration 0003 are
        s.execute(update(Segment).where(Segment.artifact_id == art).values(blob_offset=None))
    assert store.read_bytes(ALICE, art, 0, len(data)) == data


def test_tail_numbers_its_first_line_without_reading_the_whole_segment(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The segment row says how many newlines it holds, so the line number of a
    tail near a segment's end is counted back from that end, not from its start."""
    seg = store.settings.segment_bytes or store.blobs.segment_bytes
    data = b"".join(b"row %06d\n" % i for i in range(3 * seg // 11))
    art = write_artifact(store, data)
    read = 0
    original = store.blobs.read

    def counting(key: str, start: int, end: int) -> Iterator[bytes]:
        nonlocal read
        for chunk in original(key, start, end):
            read += len(chunk)
            yield chunk

    monkeypatch.setattr(store.blobs, "read", counting)
    t = store.tail(ALICE, art, TailQuery(lines=2))
    total = data.count(b"\n")
    assert t.text == f"row {total - 2:06d}\nrow {total - 1:06d}\n"
    assert t.first_line == total - 1 and t.last_line == total
    assert read < 16 * 1024, f"read {read} bytes of a {seg}-byte segment for a 22-byte tail"
    for offset in (0, 5, 11, len(data) // 2, len(data) - 1):  # both directions agree
        assert store.open_content(ALICE, art)[1].line_number_at(offset) == (
            data[:offset].count(b"\n") + 1
        )


def test_bytes_placed_while_the_flush_interval_cuts_segments_stay_exact(
    store: ArtifactStore,
) -> None:
    """Where the producer writes straight into the blob (local), the writer's
    thread cuts partial segments on the flush interval while the producer goes on
    placing: every byte must land in exactly one segment, in order, with its
    newlines (given by the caller, as the executor does, or counted) right."""
    import random
    import time

    rng = random.Random(7)
    writer = store.open_writer(ALICE)
    expected = bytearray()
    for i in range(400):
        chunk = b"".join(b"line %d.%d\n" % (i, j) for j in range(rng.randrange(0, 300)))
        chunk += b"x" * rng.randrange(0, 50)  # lines split across chunks too
        hint = chunk.count(b"\n") if i % 2 else None
        writer.write(chunk, hint)
        expected += chunk
        if i % 37 == 0:
            time.sleep(0.06)  # let the flush interval (50 ms) cut mid-stream
    result = writer.close()
    assert result.state == "complete" and result.size_bytes == len(expected)
    assert result.sha256 == hashlib.sha256(expected).hexdigest()
    _, content = store.open_content(ALICE, writer.id)
    assert content.read(0, len(expected)) == bytes(expected)
    # The pauses did cut: some segment before the last is shorter than a full one.
    sizes = [seg.size for seg in content._segments_from(0)]
    assert any(n < store.settings.segment_bytes for n in sizes[:-1]), sizes  # type: ignore[operator]
    lines = expected.split(b"\n")
    info = store.get(ALICE, writer.id)
    assert info.line_count == len(lines) - (0 if lines[-1] else 1)
    for n in (1, 2, len(lines) // 3, len(lines) // 2, len(lines) - 1):
        win = store.lines(ALICE, writer.id, LineQuery(start=n, count=1))
        assert win.lines[0].text == lines[n - 1].decode()


def test_a_reused_buffer_may_change_after_write_and_the_hash_still_matches(
    store: ArtifactStore,
) -> None:
    """The writer keeps (to hash later) only what cannot change under it: bytes.
    A buffer the caller reuses -- as the executor's pump does -- is read back
    from the blob instead; mixing the two in one segment must still be exact."""
    writer = store.open_writer(ALICE)
    expected = bytearray()
    buf = bytearray(10_000)
    for i in range(300):
        if i % 3:
            chunk = bytes([65 + i % 26]) * 7_000
            writer.write(chunk)
            expected += chunk
        else:
            buf[:] = bytes([97 + i % 26]) * 10_000
            writer.write(buf)
            expected += buf
            buf[:] = b"\0" * 10_000  # reused: what was written must not change
    result = writer.close()
    assert result.sha256 == hashlib.sha256(expected).hexdigest()
    assert store.open_content(ALICE, writer.id)[1].read(0, len(expected)) == bytes(expected)
