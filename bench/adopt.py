"""``overspill adopt``: how fast other tools' leftovers are taken in.

A directory of leftovers like a busy agent's: 512 files (128 with --quick) of
log lines, 1 MiB each on average (a few KiB to 4 MiB), adopted into a fresh
home by ``overspill adopt DIR`` (the local server warm), against ``cp -r DIR``
into a fresh directory on the same disk (what a person archiving them would
run), interleaved, medians. Target: >= 100 MB/s.

    python bench/adopt.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report

MiB = 1024 * 1024
OVERSPILL = str(Path(sys.executable).with_name("overspill"))


def make_files(root: Path, count: int, rng: random.Random) -> int:
    line = b"2026-12-06T18:00:00Z INFO worker-3 request done in 12 ms status=200\n"
    total = 0
    for i in range(count):
        size = int(rng.uniform(4096, 2 * MiB)) if i % 8 else 4 * MiB
        (root / f"tool_{i:05d}.txt").write_bytes(line * (size // len(line)))
        total += size // len(line) * len(line)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="128 files, 3 repetitions")
    args = parser.parse_args()
    count, reps = (128, 3) if args.quick else (512, 5)
    ours: list[float] = []
    ref: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-adopt-") as tmp:
        src = Path(tmp) / "leftovers"
        src.mkdir()
        total = make_files(src, count, random.Random(5))
        env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
        env["OVERSPILL_COMPRESSION_LEVEL"] = "0"  # the adoption alone, not compaction after it
        for rep in range(reps):
            home = Path(tmp) / f"home{rep}"
            env["OVERSPILL_HOME"] = str(home)
            subprocess.run([OVERSPILL, "ls"], env=env, capture_output=True, check=True)
            t = time.perf_counter()
            subprocess.run([OVERSPILL, "adopt", str(src)], env=env, capture_output=True, check=True)
            ours.append(time.perf_counter() - t)
            subprocess.run([OVERSPILL, "server", "stop"], env=env, capture_output=True)
            shutil.rmtree(home)
            copy = Path(tmp) / f"copy{rep}"
            t = time.perf_counter()
            subprocess.run(["cp", "-r", str(src), str(copy)], check=True)
            ref.append(time.perf_counter() - t)
            shutil.rmtree(copy)
    med, ref_med = statistics.median(ours), statistics.median(ref)
    rate = total / med / 1e6
    figures = {
        "files": count,
        "mib": round(total / MiB, 1),
        "adopt_s": round(med, 3),
        "cp_r_s": round(ref_med, 3),
        "adopt_mb_s": round(rate, 1),
        "cp_r_mb_s": round(total / ref_med / 1e6, 1),
        "ratio_to_cp": round(ref_med / med, 3),
    }
    targets = {"adopt_rate": {"want": ">= 100 MB/s", "got": round(rate, 1), "met": rate >= 100}}
    report("adopt", figures, targets)


if __name__ == "__main__":
    main()
