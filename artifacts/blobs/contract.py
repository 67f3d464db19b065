"""The blob backend contract, as tests any backend can run (fsspec-style).

A new backend proves itself by subclassing this in its own test suite::

    class TestMyBackend(BlobStoreContract):
        def make_store(self) -> BlobStore:
            return MyBlobStore(...)  # a fresh, empty backend

and running pytest. The methods import pytest only when they run, so the
package does not depend on it.
"""

from __future__ import annotations

import os
from typing import Any

from overspill.artifacts.blobs.base import BlobNotFound, BlobStore
from overspill.artifacts.errors import InvalidArgument

ESCAPING_KEYS = ("../escape", "a/../../b", "/abs", "a//b", "a/b/", "sp ace", "")


class BlobStoreContract:
    def make_store(self) -> BlobStore:
        """A fresh, empty backend for one test."""
        raise NotImplementedError

    def _raises(self, exc: type[BaseException]) -> Any:
        import pytest

        return pytest.raises(exc)

    def test_put_then_read_any_range(self) -> None:
        blobs = self.make_store()
        data = os.urandom(3 * 1024 * 1024 + 17)
        blobs.put("art_X/0001_aa", data)
        assert b"".join(blobs.read("art_X/0001_aa", 0, len(data))) == data
        assert b"".join(blobs.read("art_X/0001_aa", 5, 9)) == data[5:9]
        assert b"".join(blobs.read("art_X/0001_aa", len(data) - 1, len(data))) == data[-1:]

    def test_reading_a_missing_blob_raises_blob_not_found(self) -> None:
        blobs = self.make_store()
        with self._raises(BlobNotFound):
            b"".join(blobs.read("art_X/none", 0, 10))

    def test_delete_many_is_idempotent(self) -> None:
        blobs = self.make_store()
        for i in range(3):
            blobs.put(f"art_Y/{i}", b"x")
        blobs.delete_many(["art_Y/0", "art_Y/1", "art_Y/missing"])
        assert [b.key for b in blobs.list("art_Y")] == ["art_Y/2"]
        blobs.delete_many(["art_Y/0"])

    def test_list_reports_keys_and_sizes(self) -> None:
        blobs = self.make_store()
        blobs.put("art_A/1", b"abc")
        blobs.put("art_B/1", b"defg")
        assert {(b.key, b.size) for b in blobs.list()} >= {("art_A/1", 3), ("art_B/1", 4)}
        assert [b.key for b in blobs.list("art_B")] == ["art_B/1"]

    def test_keys_that_could_escape_are_refused(self) -> None:
        blobs = self.make_store()
        for key in ESCAPING_KEYS:
            with self._raises(InvalidArgument):
                blobs.put(key, b"x")

    def test_check_passes_on_a_usable_backend(self) -> None:
        self.make_store().check()
