"""One contract suite for every blob backend, plus the local backend's file safety."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from overspill.artifacts.blobs.base import BlobStore
from overspill.artifacts.blobs.contract import BlobStoreContract
from overspill.artifacts.blobs.local import LocalBlobStore
from overspill.artifacts.blobs.registry import open_blob_store
from overspill.artifacts.errors import ConfigurationError, StorageUnavailable
from tests.helpers import make_bucket


class TestEveryBackend(BlobStoreContract):
    """The contract that ships in the package, on every backend of the suite."""

    @pytest.fixture(autouse=True)
    def _url(self, blob_url: str) -> None:
        self.url = blob_url

    def make_store(self) -> BlobStore:
        return open_blob_store(self.url)


def test_local_files_are_private_and_the_root_is_0700(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "root")
    store.put("art_Z/seg", b"data")
    assert stat.S_IMODE(os.stat(tmp_path / "root").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "root" / "art_Z").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "root" / "art_Z" / "seg").st_mode) == 0o600
    assert [p.name for p in (tmp_path / "root" / "art_Z").iterdir()] == ["seg"]


def test_local_put_never_replaces_an_existing_blob(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "root")
    store.put("art_Z/seg", b"first")
    with pytest.raises(StorageUnavailable):
        store.put("art_Z/seg", b"second")
    assert b"".join(store.read("art_Z/seg", 0, 100)) == b"first"


def test_local_append_creates_exclusively_grows_in_place_and_cuts_back(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "root")
    store.append("art_A/0000000000000000_ab", 0, b"first ")
    store.append("art_A/0000000000000000_ab", 6, b"second")
    assert b"".join(store.read("art_A/0000000000000000_ab", 0, 100)) == b"first second"
    path = tmp_path / "root" / "art_A" / "0000000000000000_ab"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with pytest.raises(StorageUnavailable):  # a new blob never reuses an existing name
        store.append("art_A/0000000000000000_ab", 0, b"again")
    with pytest.raises(StorageUnavailable):  # nor grows one that is not there
        store.append("art_A/0000000000000000_zz", 5, b"late")
    store.truncate("art_A/0000000000000000_ab", 5)
    assert b"".join(store.read("art_A/0000000000000000_ab", 0, 100)) == b"first"


def _store_with_a_planted_link(tmp_path: Path) -> LocalBlobStore:
    """A store whose blob art_M/seg is a symlink to a file outside the root."""
    (tmp_path / "secret").write_bytes(b"top secret")
    store = LocalBlobStore(tmp_path / "root")
    (tmp_path / "root" / "art_M").mkdir()
    os.symlink(tmp_path / "secret", tmp_path / "root" / "art_M" / "seg")
    return store


def test_local_append_refuses_a_symlinked_blob(tmp_path: Path) -> None:
    store = _store_with_a_planted_link(tmp_path)
    with pytest.raises(StorageUnavailable):
        store.append("art_M/seg", 3, b"overwrite")
    with pytest.raises(StorageUnavailable):
        store.truncate("art_M/seg", 0)
    assert (tmp_path / "secret").read_bytes() == b"top secret"


def test_local_backend_refuses_symlinked_directories(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    store = LocalBlobStore(tmp_path / "root")
    os.symlink(outside, tmp_path / "root" / "art_L")
    with pytest.raises(StorageUnavailable):
        store.put("art_L/seg", b"x")
    assert list(outside.iterdir()) == []
    (outside / "seg").write_bytes(b"planted")
    with pytest.raises(StorageUnavailable, match="symlink"):
        b"".join(store.read("art_L/seg", 0, 10))


def test_local_backend_refuses_a_symlinked_blob(tmp_path: Path) -> None:
    store = _store_with_a_planted_link(tmp_path)
    with pytest.raises(StorageUnavailable):
        b"".join(store.read("art_M/seg", 0, 10))


def test_local_root_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(StorageUnavailable, match="not a plain directory"):
        LocalBlobStore(tmp_path / "link")


def test_unknown_backend_url_names_the_known_schemes() -> None:
    with pytest.raises(ConfigurationError, match=r"known schemes are file://, s3://"):
        open_blob_store("gcs://bucket/x")
    with pytest.raises(ConfigurationError, match="absolute path"):
        open_blob_store("file:relative/dir")
    with pytest.raises(ConfigurationError, match="need a bucket"):
        open_blob_store("s3:///prefix")


def test_missing_bucket_is_reported_by_name(in_process_s3: None) -> None:
    blobs = open_blob_store("s3://no-such-bucket-here/p")
    with pytest.raises(StorageUnavailable, match="'no-such-bucket-here' does not exist"):
        blobs.check()
    with pytest.raises(StorageUnavailable, match="does not exist"):
        blobs.put("art_A/1", b"x")


def test_s3_backend_against_motos_http_server(moto_server: str) -> None:
    bucket = make_bucket(moto_server)
    blobs = open_blob_store(f"s3://{bucket}/deep/prefix", s3_endpoint_url=moto_server)
    blobs.check()
    data = os.urandom(2 * 1024 * 1024)
    blobs.put("art_S/0", data)
    assert b"".join(blobs.read("art_S/0", 1000, 2_000_000)) == data[1000:2_000_000]
    assert [b.key for b in blobs.list("art_S")] == ["art_S/0"]
    import boto3

    raw = boto3.client("s3", endpoint_url=moto_server).list_objects_v2(Bucket=bucket)
    assert [o["Key"] for o in raw["Contents"]] == ["deep/prefix/art_S/0"]
    assert blobs.delete_many(["art_S/0"]) == 1
    assert list(blobs.list()) == []


def test_unreachable_s3_endpoint_is_storage_unavailable() -> None:
    blobs = open_blob_store("s3://bucket/p", s3_endpoint_url="http://127.0.0.1:9")
    with pytest.raises(StorageUnavailable):
        blobs.check()


def test_s3_put_body_reads_any_piece_of_the_buffer_and_rewinds() -> None:
    from overspill.artifacts.blobs.s3 import _ViewFile

    data = bytearray(os.urandom(10_000))
    body = _ViewFile(memoryview(data)[:9_000])
    assert bytes(body.read(4096)) + bytes(body.read(4096)) + bytes(body.read(4096)) == data[:9_000]
    assert bytes(body.read(10)) == b"" and body.tell() == 9_000
    body.seek(-100, os.SEEK_END)
    assert bytes(body.read()) == data[8_900:9_000]
    body.seek(0)
    into = bytearray(5_000)
    assert body.readinto(into) == 5_000 and into == data[:5_000]
    assert len(body) == 9_000


def test_a_reader_dropped_before_it_started_holds_no_file_descriptor(tmp_path: Path) -> None:
    import gc
    import os

    from overspill.artifacts.blobs.local import LocalBlobStore

    blobs = LocalBlobStore(tmp_path / "b")
    blobs.put("art_01AAAAAAAAAAAAAAAAAAAAAAAA/0000000000000000_00", b"data")
    before = len(os.listdir("/proc/self/fd"))
    readers = [
        blobs.read("art_01AAAAAAAAAAAAAAAAAAAAAAAA/0000000000000000_00", 0, 4) for _ in range(50)
    ]
    del readers
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= before
