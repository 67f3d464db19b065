"""Choose a blob backend from a URL, in one place. SDKs are imported lazily."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlparse

from overspill.artifacts.blobs.base import BlobStore
from overspill.artifacts.errors import ConfigurationError


def _local(url: str, _endpoint: str | None) -> BlobStore:
    from overspill.artifacts.blobs.local import LocalBlobStore

    parsed = urlparse(url)
    if parsed.netloc not in ("", "localhost"):
        raise ConfigurationError(f"blob URL {url!r}: file URLs take no host (file:///path)")
    if not parsed.path.startswith("/"):
        raise ConfigurationError(f"blob URL {url!r}: file URLs need an absolute path")
    return LocalBlobStore(Path(unquote(parsed.path)))


def _s3(url: str, endpoint: str | None) -> BlobStore:
    try:
        import boto3  # noqa: F401  (only to say what to install)
    except ImportError:
        raise ConfigurationError(
            f"blob URL {url!r} needs the S3 support: pip install 'overspill[s3]'"
        ) from None
    from overspill.artifacts.blobs.s3 import S3BlobStore

    parsed = urlparse(url)
    if not parsed.netloc:
        raise ConfigurationError(f"blob URL {url!r}: s3 URLs need a bucket (s3://bucket/prefix)")
    return S3BlobStore(parsed.netloc, parsed.path.lstrip("/"), endpoint_url=endpoint)


BACKENDS: dict[str, Callable[[str, str | None], BlobStore]] = {"file": _local, "s3": _s3}


def open_blob_store(url: str, *, s3_endpoint_url: str | None = None) -> BlobStore:
    scheme = urlparse(url).scheme
    factory = BACKENDS.get(scheme)
    if factory is None:
        known = ", ".join(f"{s}://" for s in sorted(BACKENDS))
        raise ConfigurationError(f"unknown blob backend {url!r}: known schemes are {known}")
    return factory(url, s3_endpoint_url)
