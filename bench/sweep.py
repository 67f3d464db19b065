"""Sweeper throughput: N expired artifacts (one small segment each) deleted by one
sweep, on the local backend and on S3 through moto's HTTP server. Reports
artifacts per second and bytes freed.

    python bench/sweep.py [--quick]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import arguments, report

PAYLOAD = b"expired output line\n" * 5  # 100 bytes


def seed(store, n: int) -> None:  # type: ignore[no-untyped-def]
    """Insert ``n`` already-expired artifacts in bulk (rows and blobs)."""
    from sqlalchemy import insert

    from overspill.artifacts.blobs.keys import segment_key
    from overspill.artifacts.db.models import Artifact, Segment
    from overspill.artifacts.ids import new_artifact_id

    now = store.clock.now()
    past = now - timedelta(days=1)
    batch = 2000
    with ThreadPoolExecutor(8) as pool:
        for start in range(0, n, batch):
            ids = [new_artifact_id() for _ in range(min(batch, n - start))]
            keys = [segment_key(i, 0, "00000000") for i in ids]
            list(pool.map(lambda k: store.blobs.put(k, PAYLOAD), keys))
            with store.engine.begin() as conn:
                conn.execute(
                    insert(Artifact),
                    [
                        dict(
                            id=i,
                            owner="agent:bench",
                            kind="output",
                            media_type="text/plain",
                            source={},
                            state="complete",
                            size_bytes=len(PAYLOAD),
                            total_bytes=len(PAYLOAD),
                            max_bytes=1 << 30,
                            line_count=5,
                            segment_count=1,
                            created_at=past,
                            updated_at=past,
                            completed_at=past,
                            expires_at=past,
                            retention_clamped=False,
                        )
                        for i in ids
                    ],
                )
                conn.execute(
                    insert(Segment),
                    [
                        dict(
                            artifact_id=i,
                            seq=0,
                            offset=0,
                            size=len(PAYLOAD),
                            blob_key=k,
                            line_offset=0,
                            newlines=5,
                            created_at=past,
                        )
                        for i, k in zip(ids, keys, strict=True)
                    ],
                )


def measure(blob_url: str, endpoint: str | None, n: int, home: Path) -> dict[str, float]:
    from overspill.artifacts.config import StoreSettings
    from overspill.artifacts.store import ArtifactStore

    store = ArtifactStore.open(
        StoreSettings(home=home, blob_url=blob_url, s3_endpoint_url=endpoint)
    )
    seed(store, n)
    t0 = time.perf_counter()
    r = store.sweeper.run(reconcile=False)
    elapsed = time.perf_counter() - t0
    assert r.expired == n and not r.errors, r
    assert not list(store.blobs.list())
    store.close()
    return {"artifacts_per_s": n / elapsed, "seconds": elapsed, "bytes_freed": r.bytes_freed}


def main() -> None:
    ap = arguments()
    # Seeding 100k objects into moto's in-memory server alone takes over ten minutes
    # here, so the S3 run defaults to 20k; --s3-count 100000 runs the full size.
    ap.add_argument("--s3-count", type=int)
    args = ap.parse_args()
    n_local = 5_000 if args.quick else 100_000
    n_s3 = args.s3_count or (2_000 if args.quick else 20_000)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        local = measure(Path(tmp, "blobs").as_uri(), None, n_local, Path(tmp, "local"))
        import boto3
        from moto.server import ThreadedMotoServer

        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="sweep")
        try:
            s3 = measure("s3://sweep/p", endpoint, n_s3, Path(tmp, "s3"))
        finally:
            server.stop()
    figures = {
        "local_artifacts": n_local,
        "local_artifacts_per_s": round(local["artifacts_per_s"]),
        "local_seconds": round(local["seconds"], 2),
        "local_bytes_freed": local["bytes_freed"],
        "s3_artifacts": n_s3,
        "s3_artifacts_per_s": round(s3["artifacts_per_s"]),
        "s3_seconds": round(s3["seconds"], 2),
        "s3_bytes_freed": s3["bytes_freed"],
    }
    report(
        "sweep",
        figures,
        {
            "local_artifacts_per_s": {
                "want": ">= 2000",
                "got": figures["local_artifacts_per_s"],
                "met": figures["local_artifacts_per_s"] >= 2000,
            }
        },
    )


if __name__ == "__main__":
    main()
