"""``overspill grep`` as a person runs it, against what a person would run instead.

On a log-like output (128 MiB; 32 MiB with --quick) stored in a fresh home (the
local server warm), each row is a whole command, timed end to end, output to a
file (GNU grep stops at the first match when its output is /dev/null),
interleaved repetitions, medians:

- each row on the output as printed (hot) and compacted into compressed frames
  (cold; ``*_cold_s``, ratio ``cold_ratio_to_hot``, target >= 0.8);
- many matches (``INFO``, a third of the lines): ``overspill grep ID INFO``
  against ``cat f | grep -n INFO`` (the reference the issue names) and
  ``overspill cat ID | grep -n INFO``;
- no match, ``ERROR`` (about 1%), ``-i error``, ``ERROR.*timeout``: against GNU
  ``grep -n`` on the same bytes in a file and ripgrep ``rg -n`` (the PyPI wheel).

Ratios are reference time / overspill time (higher is better). ``verb_floor_s``
is ``overspill info ID``: a verb's start and one request, under every row. Targets:
many matches >= 0.67 of ``cat f | grep -n``; the others >= 1.0 of GNU grep and
>= 0.5 of ripgrep.

    python bench/grep.py [--quick]

What sets the pace (profiled): a row costs one regex search (~0.7 us through
the binding) or, for a plain string, one ``bytes.find``, plus a newline count
and the row's bytes; the HTTP stream and the CLI's copy add ~0.1 s per 30 MB of
rows. The next lever is a chunk-wide candidate search (a literal prefilter for
regexes, as the redactor's), so lines without a match are never visited in
Python.
"""

from __future__ import annotations

import argparse
import json
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
RG = shutil.which("rg", path=os.path.dirname(sys.executable)) or shutil.which("rg")


def make_log(path: Path, size: int) -> None:
    rng = random.Random(7)
    with path.open("w") as f:
        written, i = 0, 0
        while written < size:
            r = rng.random()
            level = "INFO" if r < 0.34 else "ERROR" if r < 0.35 else "DEBUG"
            tail = " upstream timeout" if level == "ERROR" and rng.random() < 0.3 else " ok"
            line = f"2026-12-06T18:{i % 60:02d}:00Z {level} worker-{i % 7} req={i}{tail}\n"
            f.write(line)
            written += len(line)
            i += 1


def timed(cmd: str, env: dict[str, str]) -> float:
    """Seconds for ``cmd`` writing to a file: GNU grep with its output on /dev/null
    stops at the first match, so /dev/null would time something else."""
    out = env["BENCH_OUT"]
    t = time.perf_counter()
    subprocess.run(["bash", "-c", f"{cmd} > {out}"], env=env, check=False)
    return time.perf_counter() - t


def put(log: Path, env: dict[str, str]) -> str:
    with log.open("rb") as data:
        done = subprocess.run(
            [OVERSPILL, "put", "--name", "log", "--json"],
            env=env,
            stdin=data,
            capture_output=True,
            text=True,
            check=True,
        )
    return str(json.loads(done.stdout)["id"])


def wait_compacted(art: str, env: dict[str, str]) -> None:
    """Until the home's local server has compacted ``art`` (HOT_S=0: seconds)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        info = subprocess.run(
            [OVERSPILL, "info", art, "--json"], env=env, capture_output=True, text=True
        )
        if json.loads(info.stdout or "{}").get("compressed"):
            return
        time.sleep(0.5)
    raise SystemExit("the cold copy was never compacted")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="32 MiB, fewer repetitions")
    args = parser.parse_args()
    size, reps = (32 * MiB, 3) if args.quick else (128 * MiB, 5)
    figures: dict[str, object] = {}
    targets: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-grep-") as tmp:
        log = Path(tmp) / "log.txt"
        make_log(log, size)
        base = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        base.update(OVERSPILL_OWNER="user:bench", BENCH_OUT=str(Path(tmp) / "out.txt"))
        # The same bytes in two homes: one as an agent reads an output right after
        # making it (hot: raw segments), one compacted into compressed frames (cold).
        homes = {
            "hot": dict(base, OVERSPILL_HOME=str(Path(tmp) / "hot")),
            "cold": dict(base, OVERSPILL_HOME=str(Path(tmp) / "cold"), OVERSPILL_HOT_S="0"),
        }
        arts = {form: put(log, env) for form, env in homes.items()}
        wait_compacted(arts["cold"], homes["cold"])
        for form, env in homes.items():
            timed(f"{OVERSPILL} grep {arts[form]} INFO", env)  # the local server warm
        rows = {
            "many_matches": ("INFO", "-n INFO"),
            "no_match": ("NO_SUCH_TOKEN", "-n NO_SUCH_TOKEN"),
            "error_1pct": ("ERROR", "-n ERROR"),
            "ignore_case": ("-i error", "-n -i error"),
            "regex": ("'ERROR.*timeout'", "-n 'ERROR.*timeout'"),
        }
        env = homes["hot"]
        # The floor under every row: a verb's start and one request (``info``).
        floor = [timed(f"{OVERSPILL} info {arts['hot']}", env) for _ in range(reps * 2)]
        figures["verb_floor_s"] = round(statistics.median(floor), 3)
        for name, (ours, theirs) in rows.items():
            runs: dict[str, list[float]] = {
                "overspill": [],
                "cold": [],
                "gnu": [],
                "rg": [],
                "pipe": [],
            }
            for _ in range(reps):
                runs["overspill"].append(timed(f"{OVERSPILL} grep {arts['hot']} {ours}", env))
                runs["cold"].append(timed(f"{OVERSPILL} grep {arts['cold']} {ours}", homes["cold"]))
                if name == "many_matches":
                    runs["gnu"].append(timed(f"cat {log} | grep {theirs}", env))
                    runs["pipe"].append(
                        timed(f"{OVERSPILL} cat {arts['hot']} | grep {theirs}", env)
                    )
                else:
                    runs["gnu"].append(timed(f"grep {theirs} {log}", env))
                if RG and name != "many_matches":
                    runs["rg"].append(timed(f"{RG} {theirs} {log}", env))
            med = {k: statistics.median(v) for k, v in runs.items() if v}
            for k, v in med.items():
                figures[f"{name}_{k}_s"] = round(v, 3)
            ratio = med["gnu"] / med["overspill"]
            figures[f"{name}_ratio_to_gnu"] = round(ratio, 3)
            cold = med["overspill"] / med["cold"]
            figures[f"{name}_cold_ratio_to_hot"] = round(cold, 3)
            targets[f"{name}_cold_vs_hot"] = {
                "want": ">= 0.8 (compacted against as printed)",
                "got": round(cold, 3),
                "met": cold >= 0.8,
            }
            if name == "many_matches":
                figures[f"{name}_ratio_to_pipe"] = round(med["pipe"] / med["overspill"], 3)
                targets[name] = {
                    "want": ">= 0.67 of cat f | grep -n",
                    "got": round(ratio, 3),
                    "met": ratio >= 0.67,
                }
                continue
            targets[f"{name}_vs_gnu"] = {
                "want": ">= 1.0",
                "got": round(ratio, 3),
                "met": ratio >= 1.0,
            }
            if "rg" in med:
                r = med["rg"] / med["overspill"]
                figures[f"{name}_ratio_to_rg"] = round(r, 3)
                targets[f"{name}_vs_rg"] = {"want": ">= 0.5", "got": round(r, 3), "met": r >= 0.5}
        for env in homes.values():
            subprocess.run([OVERSPILL, "server", "stop"], env=env, capture_output=True)
    figures["size_mib"] = size // MiB
    report("grep", figures, targets)


if __name__ == "__main__":
    main()
