"""Opening an artifact page in the browser: a 1 GiB artifact against a 1 KiB one.

Both are served by the same server in the same run; Debian's Chromium (driven by
Playwright) opens each page in turn and the time until its content is on screen
(head and, for the large one, tail) is measured. The page reads bounded windows
only, so the large one should open about as fast as the small one.

    python bench/ui.py [--quick]       # --quick: 64 MiB instead of 1 GiB
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import arguments, free_port, median, report, wait_up

MiB = 1024 * 1024
CHROMIUM = os.environ.get("TEST_OVERSPILL_CHROMIUM", "/usr/bin/chromium")
TARGET_RATIO = 1.5


def _seed(home: Path, large: int) -> tuple[str, str, str]:
    """A 1 KiB and a ``large``-byte artifact of log lines, and a token."""
    from overspill.artifacts.catalog.tokens import NewToken
    from overspill.artifacts.config import StoreSettings
    from overspill.artifacts.records import Principal
    from overspill.artifacts.store import ArtifactStore

    store = ArtifactStore.open(StoreSettings(home=home, max_artifact_bytes=large * 2))
    who = Principal(name="user:bench", role="user")
    line = b"2026-12-03T08:00:00Z worker[17] INFO processed batch 123456 in 42 ms ok\n"
    block = line * (MiB // len(line))
    ids = []
    for size in (1024, large):
        with store.open_writer(who, source={"command": f"bench {size}"}) as w:
            left = size
            while left > 0:
                piece = block[: min(left, len(block))]
                w.write(piece)
                left -= len(piece)
        ids.append(w.id)
    token = store.tokens.create(NewToken(principal=who.name, role=who.role)).token
    store.close()
    return ids[0], ids[1], token


def _open_ms(page, url: str, large: bool) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("#head-text")
    if large:
        page.wait_for_selector("#tail-text")
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    ap = arguments()
    args = ap.parse_args()
    large = 64 * MiB if args.quick else 1024 * MiB
    rounds = 7 if args.quick else 21
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        home = Path(tmp)
        small_id, large_id, token = _seed(home, large)
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
        env.update(OVERSPILL_HOME=str(home), OVERSPILL_SWEEP_INTERVAL_S="0")
        server = subprocess.Popen(
            [sys.executable, "-m", "overspill.api.cli", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_up(port)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(
                    executable_path=CHROMIUM,
                    args=[
                        "--headless",
                        "--no-sandbox",
                        "--disable-gpu",
                        "--disable-background-networking",
                    ],
                )
                page = browser.new_page()
                page.goto(f"{base}/#token={token}")
                page.wait_for_selector("#summary")
                small_ms, large_ms = [], []
                _open_ms(page, f"{base}/artifacts/{small_id}", False)  # warm the cache
                for _ in range(rounds):
                    small_ms.append(_open_ms(page, f"{base}/artifacts/{small_id}", False))
                    large_ms.append(_open_ms(page, f"{base}/artifacts/{large_id}", True))
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    ratio = median(large_ms) / median(small_ms)
    figures = {
        "large_artifact_mib": large // MiB,
        "rounds": rounds,
        "small_1kib_open_ms_p50": round(median(small_ms), 1),
        "large_open_ms_p50": round(median(large_ms), 1),
        "large_open_ms_max": round(max(large_ms), 1),
        "ratio_large_to_small": round(ratio, 3),
    }
    report(
        "ui",
        figures,
        {
            "ratio_large_to_small": {
                "want": f"<= {TARGET_RATIO}",
                "got": round(ratio, 3),
                "met": ratio <= TARGET_RATIO,
            }
        },
    )


if __name__ == "__main__":
    main()
