"""Range reads under concurrency: 32 clients reading random 1 MiB ranges of a
256 MiB artifact through the API, against Starlette's plain ``FileResponse`` of
the same bytes from a file, each server in its own process, in the same run.

    python bench/api.py [--quick]
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import arguments, free_port, report, wait_up

MiB = 1024 * 1024
RANGE = MiB


def serve_ours(port: int, home: str) -> None:
    import uvicorn

    from overspill.api.server.app import create_app
    from overspill.artifacts.config import StoreSettings
    from overspill.artifacts.store import ArtifactStore

    store = ArtifactStore.open(StoreSettings(home=Path(home)))
    uvicorn.run(create_app(store), host="127.0.0.1", port=port, log_level="warning")


def serve_file(port: int, path: str) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import FileResponse
    from starlette.routing import Route

    async def handler(request):  # type: ignore[no-untyped-def]
        return FileResponse(path)

    uvicorn.run(
        Starlette(routes=[Route("/file", handler)]),
        host="127.0.0.1",
        port=port,
        log_level="warning",
    )


async def _load(
    url: str, headers: dict[str, str], size: int, clients: int, total: int
) -> dict[str, float]:
    import httpx

    latencies: list[float] = []
    rng = random.Random(42)
    offsets = [rng.randrange(0, size - RANGE) for _ in range(total)]
    queue: asyncio.Queue[int] = asyncio.Queue()
    for o in offsets:
        queue.put_nowait(o)
    received = 0

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal received
        while True:
            try:
                o = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            t0 = time.perf_counter()
            r = await client.get(url, headers={**headers, "Range": f"bytes={o}-{o + RANGE - 1}"})
            body = r.content
            latencies.append(time.perf_counter() - t0)
            assert r.status_code == 206 and len(body) == RANGE, (r.status_code, len(body))
            received += len(body)

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        await client.get(url, headers={**headers, "Range": "bytes=0-0"})  # warm up
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(clients)))
        elapsed = time.perf_counter() - t0
    latencies.sort()
    return {
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "mb_s": received / MiB / elapsed,
    }


def _run_server(args: list[str]) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *args], env=env)


def main() -> None:
    ap = arguments()
    ap.add_argument("--serve-ours", nargs=2)
    ap.add_argument("--serve-file", nargs=2)
    args = ap.parse_args()
    if args.serve_ours:
        serve_ours(int(args.serve_ours[0]), args.serve_ours[1])
        return
    if args.serve_file:
        serve_file(int(args.serve_file[0]), args.serve_file[1])
        return

    size = 64 * MiB if args.quick else 256 * MiB
    total = 160 if args.quick else 1600
    clients = 32
    from overspill.artifacts.catalog.tokens import NewToken
    from overspill.artifacts.config import StoreSettings
    from overspill.artifacts.records import Principal
    from overspill.artifacts.store import ArtifactStore

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        store = ArtifactStore.open(StoreSettings(home=Path(tmp)))
        who = Principal(name="agent:bench", role="agent")
        token = store.tokens.create(NewToken(principal=who.name, role="agent")).token
        writer = store.open_writer(who, media_type="application/octet-stream")
        plain = Path(tmp, "plain.bin")
        block = os.urandom(MiB)
        with open(plain, "wb") as f:
            for _ in range(size // MiB):
                writer.write(block)
                f.write(block)
        art = writer.close().id
        store.close()

        results: dict[str, dict[str, float]] = {}
        for name, server_args, url, headers in (
            ("starlette_file", ["--serve-file"], "/file", {}),
            (
                "overspill",
                ["--serve-ours"],
                f"/v1/artifacts/{art}/content",
                {"Authorization": f"Bearer {token}"},
            ),
        ):
            port = free_port()
            extra = [str(plain)] if name == "starlette_file" else [tmp]
            proc = _run_server([*server_args, str(port), *extra])
            try:
                wait_up(port)
                results[name] = asyncio.run(
                    _load(f"http://127.0.0.1:{port}{url}", headers, size, clients, total)
                )
            finally:
                proc.terminate()
                proc.wait(timeout=30)

    ours, ref = results["overspill"], results["starlette_file"]
    figures = {
        "artifact_mib": size // MiB,
        "clients": clients,
        "requests": total,
        "range_bytes": RANGE,
        **{f"overspill_{k}": round(v, 1) for k, v in ours.items()},
        **{f"file_response_{k}": round(v, 1) for k, v in ref.items()},
        "p50_ratio": round(ours["p50_ms"] / ref["p50_ms"], 2),
        "p99_ratio": round(ours["p99_ms"] / ref["p99_ms"], 2),
        "throughput_ratio": round(ours["mb_s"] / ref["mb_s"], 2),
    }
    report(
        "api",
        figures,
        {
            "p50_within_2x": {
                "want": "<= 2.0",
                "got": figures["p50_ratio"],
                "met": figures["p50_ratio"] <= 2.0,
            },
            "p99_within_2x": {
                "want": "<= 2.0",
                "got": figures["p99_ratio"],
                "met": figures["p99_ratio"] <= 2.0,
            },
            "throughput_within_2x": {
                "want": ">= 0.5",
                "got": figures["throughput_ratio"],
                "met": figures["throughput_ratio"] >= 0.5,
            },
        },
    )


if __name__ == "__main__":
    main()
