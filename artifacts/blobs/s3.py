"""Blobs as objects in an S3-compatible bucket (AWS, MinIO, Ceph, moto).

An object PUT is atomic on S3, so a segment is visible whole or not at all. All
botocore errors are translated here: nothing above this module sees one.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, cast

from overspill.artifacts.blobs.base import BlobInfo, BlobNotFound, check_key
from overspill.artifacts.blobs.keys import is_segment_key
from overspill.artifacts.errors import StorageUnavailable

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

_READ_CHUNK = 1024 * 1024
_DELETE_BATCH = 1000  # DeleteObjects' limit per request


class S3BlobStore:
    # Half a local segment: the next segment fills while one is sent, and two
    # buffers of 4 MiB keep a writer under 100 MB beside boto3's ~25 MB of models
    # (bench/store.py, 256 MiB to moto: 160 vs 131 MB/s, peak RSS 99 vs 107 MB).
    segment_bytes = 4 * 1024 * 1024

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        client: S3Client | None = None,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.url = f"s3://{bucket}/{self.prefix}"
        if client is None:
            import boto3
            from botocore.config import Config

            client = boto3.client(
                "s3",
                endpoint_url=endpoint_url,
                config=Config(
                    retries={"max_attempts": 3, "mode": "standard"},
                    max_pool_connections=32,
                    # An endpoint that accepts and never answers must not hold a
                    # writer (and so a command) for botocore's default of minutes.
                    connect_timeout=5,
                    read_timeout=20,
                ),
            )
        self._client: S3Client = client

    def _key(self, key: str) -> str:
        return self.prefix + check_key(key)

    def _fail(self, action: str, key: str, exc: Exception) -> StorageUnavailable:
        code = _error_code(exc)
        if code == "NoSuchBucket":
            return StorageUnavailable(f"S3 bucket {self.bucket!r} does not exist")
        detail = code or type(exc).__name__
        return StorageUnavailable(f"S3 {action} {self.bucket}/{self.prefix}{key} failed: {detail}")

    def put(self, key: str, data: bytes | bytearray | memoryview) -> None:
        full = self._key(key)
        # A file over the caller's buffer, not bytes(data): botocore reads it in
        # bounded pieces (see _ViewFile.read), so no copy of a segment is made. A
        # bytearray body it would copy, more than once.
        try:
            self._client.put_object(
                Bucket=self.bucket, Key=full, Body=cast(IO[bytes], _ViewFile(data))
            )
        except Exception as exc:
            raise self._fail("put", key, exc) from None

    def read(self, key: str, start: int, end: int) -> Iterator[bytes]:
        full = self._key(key)
        if end <= start:
            return iter(())
        try:
            resp = self._client.get_object(
                Bucket=self.bucket, Key=full, Range=f"bytes={start}-{end - 1}"
            )
        except Exception as exc:
            if _error_code(exc) in ("NoSuchKey", "404"):
                raise BlobNotFound(key) from None
            raise self._fail("get", key, exc) from None
        return self._stream(resp["Body"], key)

    def _stream(self, body: Any, key: str) -> Iterator[bytes]:
        try:
            yield from body.iter_chunks(_READ_CHUNK)
        except Exception as exc:
            raise self._fail("get", key, exc) from None
        finally:
            body.close()

    def delete_many(self, keys: Iterable[str]) -> int:
        removed = 0
        batch: list[str] = []
        for key in keys:
            batch.append(self._key(key))
            if len(batch) == _DELETE_BATCH:
                removed += self._delete_batch(batch)
                batch = []
        if batch:
            removed += self._delete_batch(batch)
        return removed

    def _delete_batch(self, keys: list[str]) -> int:
        try:
            resp = self._client.delete_objects(
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True},
            )
        except Exception as exc:
            raise self._fail("delete", keys[0], exc) from None
        errors = resp.get("Errors") or []
        if errors:
            first = errors[0]
            raise StorageUnavailable(
                f"S3 delete of {len(errors)} objects failed, first {first.get('Key')}: "
                f"{first.get('Code')}"
            )
        return len(keys)

    def list(self, prefix: str = "") -> Iterator[BlobInfo]:
        paginator = self._client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix):
                for obj in page.get("Contents", []):
                    yield BlobInfo(obj["Key"][len(self.prefix) :], obj["Size"], obj["LastModified"])
        except Exception as exc:
            raise self._fail("list", prefix, exc) from None

    def discard_partial(self, older_than: datetime, *, dry_run: bool = False) -> int:
        """Abort multipart uploads left under our prefix (ours are single PUTs, but
        a shared bucket or an older client may leave some)."""
        aborted = 0
        try:
            resp = self._client.list_multipart_uploads(Bucket=self.bucket, Prefix=self.prefix)
            for up in resp.get("Uploads", []):
                if up["Initiated"] >= older_than:
                    continue
                if not is_segment_key(up["Key"][len(self.prefix) :].lstrip("/")):
                    continue  # another tool's upload under the same prefix
                aborted += 1
                if not dry_run:
                    self._client.abort_multipart_upload(
                        Bucket=self.bucket, Key=up["Key"], UploadId=up["UploadId"]
                    )
        except Exception as exc:
            raise self._fail("list uploads", "", exc) from None
        return aborted

    def check(self) -> None:
        try:
            self._client.head_bucket(Bucket=self.bucket)
        except Exception as exc:
            if _error_code(exc) in ("404", "NoSuchBucket"):
                raise StorageUnavailable(f"S3 bucket {self.bucket!r} does not exist") from None
            raise self._fail("head bucket", "", exc) from None


class _ViewFile(io.RawIOBase):
    """A read-only, seekable file over a buffer, without copying it."""

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        self._view = memoryview(data).cast("B")
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._view)}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, size: int | None = -1) -> memoryview:
        """A view, not a copy: botocore reads the body three times (checksum,
        signature, send) in pieces of up to 1 MiB, and a copy per piece left
        about 3 MB of freed-but-kept heap behind in the writer's peak RSS.
        Everything that reads it (hashers, zlib, ``socket.sendall``) takes a
        buffer; none keeps one past the put."""
        end = len(self._view) if size is None or size < 0 else self._pos + size
        chunk = self._view[self._pos : end]
        self._pos += len(chunk)
        return chunk

    def readinto(self, buffer: Any) -> int:
        chunk = self._view[self._pos : self._pos + len(buffer)]
        n = len(chunk)
        memoryview(buffer).cast("B")[:n] = chunk
        self._pos += n
        return n

    def __len__(self) -> int:
        return len(self._view)


def _error_code(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code is not None else None
    return None
