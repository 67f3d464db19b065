"""Search across outputs against GNU grep over the same bytes as files.

N outputs of log lines in one home (10,000 outputs, 2 GiB in all; ``--quick``:
1,000 and 64 MiB), the same bytes written as N files; then, interleaved,
medians of the repetitions:

* ``search``: a walk of ``store.search`` cursors to the end (the store in this
  process: what ``artifact_search`` and ``/v1/search`` do, without HTTP), for a
  pattern that matches a line in one output of a hundred;
* ``grep``: GNU ``grep -rn PATTERN DIR`` over the files (page cache warm);
* ``rg``: ripgrep, when installed, for reference;
* ``alone``: the same walk with ``search_workers=1`` (no worker processes).

The same again for a few large outputs (8 of 8 MiB; full: 32 of 16 MiB,
``large_*``), where the grep, not the listing, is the work the workers share.
Also the first call alone (what a model waits for: its default bounds), and
the time per output searched, to see the fixed cost of the many.

    python bench/search.py [--quick]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import arguments, median, report

MiB = 1024 * 1024
PATTERN = "ECONNREFUSED 10\\.0\\.0\\.[0-9]+"


def _body(i: int, size: int) -> bytes:
    line = b"2026-12-05T07:00:00Z INFO worker-%d request handled in 3ms status=200\n" % i
    data = line * (size // len(line))
    if i % 100 == 0:
        mid = len(data) // 2
        data = data[:mid] + b"ERROR connect ECONNREFUSED 10.0.0.%d:5432\n" % (i % 250) + data[mid:]
    return data


def _shape(root: Path, n: int, total: int, reps: int, figures: dict[str, Any], prefix: str) -> None:
    """N outputs of ``total`` bytes in all, as a store and as files; the walks
    (with the workers, then alone), grep and rg interleaved; medians in figures."""
    from overspill.artifacts.config import StoreSettings
    from overspill.artifacts.queries import SearchQuery
    from overspill.artifacts.records import Principal
    from overspill.artifacts.store import ArtifactStore

    files = root / f"{prefix}files"
    files.mkdir()
    home = root / f"{prefix}home"
    store = ArtifactStore.open(StoreSettings(home=str(home)))
    alone = ArtifactStore.open(StoreSettings(home=str(home), search_workers=1))
    who = Principal(name="agent:bench", role="agent")
    t0 = time.perf_counter()
    for i in range(n):
        data = _body(i, total // n)
        with store.open_writer(who, session_id="bench", source={"command": f"job {i}"}) as w:
            w.write(data)
        (files / f"out{i:05d}.log").write_bytes(data)
    figures[f"{prefix}outputs"] = n
    figures[f"{prefix}bytes"] = sum(f.stat().st_size for f in files.iterdir())
    figures[f"{prefix}setup_s"] = round(time.perf_counter() - t0, 1)

    def walk(on: ArtifactStore) -> tuple[float, int, float]:
        t = time.perf_counter()
        cursor, hits, first = None, 0, 0.0
        while True:
            res = on.search(who, SearchQuery(pattern=PATTERN, cursor=cursor))
            if not first:
                first = time.perf_counter() - t
            hits += res.matches
            cursor = res.next_cursor
            if cursor is None:
                return time.perf_counter() - t, hits, first

    walk(store)  # the workers start (this walk runs alone while they do)
    pool = store.reader.search_pool
    deadline = time.monotonic() + 30
    while pool is not None and pool.up() < pool.workers and time.monotonic() < deadline:
        time.sleep(0.05)
    walk(store)  # and import what a grep needs
    rows: dict[str, list[float]] = {"search": [], "alone": [], "grep": [], "rg": []}
    firsts: list[float] = []
    hits = 0
    rg = shutil.which("rg", path=os.path.dirname(sys.executable)) or shutil.which("rg")
    for _ in range(reps):
        s, hits, first = walk(store)
        rows["search"].append(s)
        firsts.append(first)
        rows["alone"].append(walk(alone)[0])
        t = time.perf_counter()
        subprocess.run(["grep", "-rnE", PATTERN, str(files)], capture_output=True, check=True)
        rows["grep"].append(time.perf_counter() - t)
        if rg:
            t = time.perf_counter()
            subprocess.run([rg, "-n", PATTERN, str(files)], capture_output=True, check=True)
            rows["rg"].append(time.perf_counter() - t)
    alone.close()
    store.close()
    figures[f"{prefix}workers"] = pool.workers if pool is not None else 1
    figures[f"{prefix}hits"] = hits
    for name, runs in rows.items():
        if runs:
            figures[f"{prefix}{name}_s"] = round(median(runs), 3)
            figures[f"{prefix}{name}_runs_s"] = [round(r, 3) for r in runs]
    figures[f"{prefix}first_call_ms"] = round(median(firsts) * 1000, 1)
    figures[f"{prefix}search_ms_per_output"] = round(figures[f"{prefix}search_s"] * 1000 / n, 3)
    search_s = figures[f"{prefix}search_s"]
    figures[f"{prefix}workers_speedup"] = round(figures[f"{prefix}alone_s"] / search_s, 3)
    figures[f"{prefix}search_vs_grep"] = round(figures[f"{prefix}grep_s"] / search_s, 3)
    if f"{prefix}rg_s" in figures:
        figures[f"{prefix}search_vs_rg"] = round(figures[f"{prefix}rg_s"] / search_s, 3)


def main() -> None:
    ap = arguments("1,000 outputs, 64 MiB")
    args = ap.parse_args()
    n, total = (1_000, 64 * MiB) if args.quick else (10_000, 2048 * MiB)
    big_n, big_total = (8, 64 * MiB) if args.quick else (32, 512 * MiB)
    reps = 2 if args.quick else 3
    figures: dict[str, Any] = {"load_average_before": list(os.getloadavg())}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        _shape(Path(tmp), n, total, reps, figures, "")
        _shape(Path(tmp), big_n, big_total, reps, figures, "large_")
    figures["load_average_after"] = list(os.getloadavg())
    targets: dict[str, dict[str, Any]] = {
        "hits": {
            "want": f"{n // 100} (one per hundred outputs)",
            "got": figures["hits"],
            "met": figures["hits"] == n // 100,
        },
    }
    for prefix, what in (("", f"{n:,} outputs"), ("large_", f"{big_n} large outputs")):
        got = figures[f"{prefix}search_vs_grep"]
        targets[f"{prefix}search_vs_grep"] = {
            "want": f">= 1.0 of GNU grep -rn over the same bytes as files ({what})",
            "got": got,
            "met": got >= 1.0,
        }
        if f"{prefix}search_vs_rg" in figures:
            got = figures[f"{prefix}search_vs_rg"]
            targets[f"{prefix}search_vs_rg"] = {
                "want": f">= 0.5 of rg -n ({what})",
                "got": got,
                "met": got >= 0.5,
            }
    report("search", figures, targets)


if __name__ == "__main__":
    main()
