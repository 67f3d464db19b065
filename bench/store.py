"""Store write throughput and memory.

Local: 1 GiB in 64 KiB chunks through an ArtifactWriter against sha256 alone over
the same chunks in memory -- the work a writer that records sha256 for every
complete artifact cannot avoid -- and, for reference, the same chunks written to
a plain file (no target: the page cache here takes writes faster than sha256
runs). S3: 256 MiB through the writer to moto's HTTP server vs boto3's own
``upload_fileobj`` of the same bytes. Each case runs in its own process (so its
peak RSS is its own), interleaved, several times; ratios are medians of the
per-repetition ratios, and the load average is printed before and after.

    python bench/store.py [--quick]
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import arguments, median, peak_rss_mb, report, run_child

CHUNK = 64 * 1024
MiB = 1024 * 1024


def _chunks(total: int):  # type: ignore[no-untyped-def]
    block = os.urandom(CHUNK)
    for _ in range(total // CHUNK):
        yield block


def child(case: str, size: int, workdir: str, blob_url: str, endpoint: str) -> None:
    from overspill.artifacts.config import StoreSettings
    from overspill.artifacts.records import Principal
    from overspill.artifacts.store import ArtifactStore

    who = Principal(name="agent:bench", role="agent")
    os.sync()  # every run starts with no dirty pages left by the previous one
    if case == "sha256-only":
        # The ceiling for any writer that must hash what it stores, as the store does.
        import hashlib

        h = hashlib.sha256()
        t0 = time.perf_counter()
        for c in _chunks(size):
            h.update(c)
        h.hexdigest()
        elapsed = time.perf_counter() - t0
    elif case == "plain-file":
        t0 = time.perf_counter()
        with open(os.path.join(workdir, "plain.bin"), "wb") as f:
            for c in _chunks(size):
                f.write(c)
        elapsed = time.perf_counter() - t0
        os.unlink(os.path.join(workdir, "plain.bin"))
    elif case == "boto3-upload":
        import boto3

        client = boto3.client("s3", endpoint_url=endpoint)
        bucket = blob_url.split("/")[2]

        class Source(io.RawIOBase):
            def __init__(self) -> None:
                self.it = _chunks(size)
                self.rest = b""

            def readable(self) -> bool:
                return True

            def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
                if not self.rest:
                    self.rest = next(self.it, b"")
                n = min(len(b), len(self.rest))
                b[:n] = self.rest[:n]
                self.rest = self.rest[n:]
                return n

        t0 = time.perf_counter()
        client.upload_fileobj(io.BufferedReader(Source(), CHUNK), bucket, "boto3-ref.bin")
        elapsed = time.perf_counter() - t0
        client.delete_object(Bucket=bucket, Key="boto3-ref.bin")
    else:
        settings = StoreSettings(
            home=Path(workdir),
            database_url=f"sqlite:///{workdir}/bench.db",
            blob_url=blob_url,
            s3_endpoint_url=endpoint or None,
            max_artifact_bytes=max(size * 2, MiB),
        )
        store = ArtifactStore.open(settings)
        t0 = time.perf_counter()
        writer = store.open_writer(who)
        for c in _chunks(size):
            writer.write(c)
        result = writer.close()
        elapsed = time.perf_counter() - t0
        assert result.state == "complete" and result.size_bytes == size, result
        store.delete(who, writer.id)
    print(json.dumps({"mb_s": size / MiB / elapsed, "rss_mb": peak_rss_mb()}))


def _num(value: object) -> float:
    """A figure that is a number (the figures dict holds lists and strings too)."""
    assert isinstance(value, int | float), value
    return float(value)


def main() -> None:
    ap = arguments()
    ap.add_argument("--child", nargs=5)
    args = ap.parse_args()
    if args.child:
        case, size, workdir, blob_url, endpoint = args.child
        child(case, int(size), workdir, blob_url, endpoint)
        return

    local_size = 64 * MiB if args.quick else 1024 * MiB
    s3_size = 32 * MiB if args.quick else 256 * MiB
    repeats = 1 if args.quick else 5
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    script = Path(__file__).resolve()
    figures: dict[str, object] = {"load_average_before": list(os.getloadavg())}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        blob_url = Path(tmp, "blobs").as_uri()
        # An initialised home, as after the first run: measure the steady state.
        run_child(script, "writer", str(CHUNK), tmp, blob_url, "")
        plain, ours, rss, hashed = [], [], [], []
        for _ in range(repeats):
            hashed.append(
                run_child(script, "sha256-only", str(local_size), tmp, blob_url, "")["mb_s"]
            )
            plain.append(
                run_child(script, "plain-file", str(local_size), tmp, blob_url, "")["mb_s"]
            )
            r = run_child(script, "writer", str(local_size), tmp, blob_url, "")
            ours.append(r["mb_s"])
            rss.append(r["rss_mb"])
        small = run_child(script, "writer", str(16 * MiB), tmp, blob_url, "")
        figures.update(
            local_size_mib=local_size // MiB,
            local_writer_mb_s=round(median(ours), 1),
            # Every run, in order: the plain file's own speed swings several-fold
            # between runs on a VM (whether the page cache gets memory the host
            # still backs), which the medians alone would hide.
            local_writer_runs_mb_s=[round(x) for x in ours],
            local_plain_file_runs_mb_s=[round(x) for x in plain],
            local_plain_file_mb_s=round(median(plain), 1),
            local_ratio=round(median([o / p for o, p in zip(ours, plain, strict=True)]), 3),
            local_sha256_only_mb_s=round(median(hashed), 1),
            local_sha256_only_runs_mb_s=[round(x) for x in hashed],
            local_ratio_vs_sha256_only=round(
                median([o / h for o, h in zip(ours, hashed, strict=True)]), 3
            ),
            local_sha256_only_to_plain=round(median(hashed) / median(plain), 3),
            local_peak_rss_mb=round(max(rss), 1),
            local_peak_rss_16mib_mb=round(small["rss_mb"], 1),
        )

        import boto3
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="bench")
        s3_url = "s3://bench/artifacts"
        ref, ours_s3, rss_s3, rss_ref = [], [], [], []
        try:
            # The same store and S3 client with a 0-byte artifact: the memory that is
            # paid before any data (interpreter, SQLAlchemy, boto3 and its models).
            rss_idle = run_child(script, "writer", "0", tmp, s3_url, endpoint)["rss_mb"]
            for _ in range(repeats):
                r = run_child(script, "boto3-upload", str(s3_size), tmp, s3_url, endpoint)
                ref.append(r["mb_s"])
                rss_ref.append(r["rss_mb"])
                r = run_child(script, "writer", str(s3_size), tmp, s3_url, endpoint)
                ours_s3.append(r["mb_s"])
                rss_s3.append(r["rss_mb"])
        finally:
            server.stop()
        figures.update(
            s3_size_mib=s3_size // MiB,
            s3_writer_mb_s=round(median(ours_s3), 1),
            s3_boto3_upload_mb_s=round(median(ref), 1),
            s3_ratio=round(median([o / r for o, r in zip(ours_s3, ref, strict=True)]), 3),
            s3_peak_rss_mb=round(max(rss_s3), 1),
            s3_peak_rss_before_data_mb=round(rss_idle, 1),
            s3_boto3_upload_peak_rss_mb=round(max(rss_ref), 1),
        )
    figures["load_average_after"] = list(os.getloadavg())
    peak = max(float(figures["local_peak_rss_mb"]), float(figures["s3_peak_rss_mb"]))  # type: ignore[arg-type]
    report(
        "store",
        figures,
        {
            "local_writer_vs_sha256_only": {
                "want": ">= 0.85",
                "got": figures["local_ratio_vs_sha256_only"],
                "met": _num(figures["local_ratio_vs_sha256_only"]) >= 0.85,
            },
            "s3_ratio": {
                "want": ">= 0.9",
                "got": figures["s3_ratio"],
                "met": _num(figures["s3_ratio"]) >= 0.9,
            },
            "peak_rss_mb": {"want": "< 100", "got": peak, "met": peak < 100},
        },
    )


if __name__ == "__main__":
    main()
