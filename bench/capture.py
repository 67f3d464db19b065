"""Capture throughput and memory: a command's output through the executor into a
local artifact vs ``bash -c 'CMD > file'``, for 64 MiB and 1 GiB, for a zero
stream and a line-oriented one. Each case runs in its own process; medians of
interleaved repeats are reported.

The executor runs as ``overspill run`` does by default, compatibility layer on:
up to 64 MiB of each stream is also written to the legacy spill file, so at
64 MiB it writes twice what the redirect writes. The same run without the layer
(``*_no_spill_*``) shows what the artifact alone costs; the targets are judged on
the default.

Also measured: the floor any capture that hashes what it keeps must pay — read
the pipe in 1 MiB chunks, write a file, sha256 on a second thread, nothing else
(no tail, no segments, no database). Its ratio to the plain redirect shows how
much of the target is reachable on this machine in this run.

    python bench/capture.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import median, peak_rss_mb, report, run_child

MiB = 1024 * 1024
GENERATORS = {
    "zeros": "head -c {size} /dev/zero",
    "lines": "yes 'INFO 2026-12-02T18:00:00Z worker-7 processed request id=42 in 3ms ok' | head -c {size}",
}


def _floor(command: str, workdir: str) -> float:
    """Seconds for the least a hashing capture does: pipe -> file + sha256."""
    import fcntl
    import hashlib
    from concurrent.futures import ThreadPoolExecutor

    target = os.path.join(workdir, "floor.out")
    t0 = time.perf_counter()
    proc = subprocess.Popen(["bash", "-c", command], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    fcntl.fcntl(proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, MiB)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    hasher, buffers, hashing = hashlib.sha256(), [bytearray(MiB), bytearray(MiB)], None
    with ThreadPoolExecutor(1) as pool:
        for i in itertools.count():
            buf = buffers[i % 2]
            n = os.readv(proc.stdout.fileno(), [buf])
            if not n:
                break
            if hashing is not None:
                hashing.result()  # the other buffer is free again
            hashing = pool.submit(hasher.update, memoryview(buf)[:n])
            os.write(fd, memoryview(buf)[:n])
        if hashing is not None:
            hashing.result()
    hasher.hexdigest()
    proc.wait()
    os.close(fd)
    elapsed = time.perf_counter() - t0
    os.unlink(target)
    return elapsed


def child(case: str, gen: str, size: int, workdir: str) -> None:
    command = GENERATORS[gen].format(size=size)
    os.sync()
    if case == "plain":
        target = os.path.join(workdir, "plain.out")
        t0 = time.perf_counter()
        subprocess.run(["bash", "-c", f"{command} > {target}"], check=True)
        elapsed = time.perf_counter() - t0
        os.unlink(target)
        print(json.dumps({"mb_s": size / MiB / elapsed, "rss_mb": peak_rss_mb()}))
        return
    if case == "floor":
        print(json.dumps({"mb_s": size / MiB / _floor(command, workdir), "rss_mb": peak_rss_mb()}))
        return
    from overspill.artifacts.config import StoreSettings
    from overspill.artifacts.records import Principal
    from overspill.artifacts.store import ArtifactStore
    from overspill.shell import ExecRequest, Executor, ShellSettings, StoreSink

    store = ArtifactStore.open(StoreSettings(home=Path(workdir)))
    who = Principal(name="agent:bench", role="agent")
    # "executor" is overspill run's default: the compatibility layer also writes the
    # legacy spill file (up to 64 MiB per stream, the contract's cap).
    executor = Executor(ShellSettings(legacy_spill=case == "executor"), StoreSink(store, who))
    t0 = time.perf_counter()
    result = executor.run(ExecRequest(command=command, timeout_ms=600_000))
    elapsed = time.perf_counter() - t0
    art = result.stdout.artifact
    assert art is not None and art.size_bytes == size, result.stdout
    store.delete(who, art.id)
    print(json.dumps({"mb_s": size / MiB / elapsed, "rss_mb": peak_rss_mb()}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--child", nargs=4)
    args = ap.parse_args()
    if args.child:
        case, gen, size, workdir = args.child
        child(case, gen, int(size), workdir)
        return
    sizes = [16 * MiB, 64 * MiB] if args.quick else [64 * MiB, 1024 * MiB]
    repeats = 1 if args.quick else 3
    script = Path(__file__).resolve()
    figures: dict[str, object] = {}
    targets: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        run_child(script, "executor", "zeros", str(MiB), tmp)  # initialise the home
        rss_by_size: dict[int, float] = {}
        for gen in GENERATORS:
            for size in sizes:
                ours, plain, rss, floor, no_spill = [], [], [], [], []
                for _ in range(repeats):
                    plain.append(run_child(script, "plain", gen, str(size), tmp)["mb_s"])
                    floor.append(run_child(script, "floor", gen, str(size), tmp)["mb_s"])
                    r = run_child(script, "executor", gen, str(size), tmp)
                    ours.append(r["mb_s"])
                    rss.append(r["rss_mb"])
                    r = run_child(script, "executor-no-spill", gen, str(size), tmp)
                    no_spill.append(r["mb_s"])
                    rss.append(r["rss_mb"])
                label = f"{gen}_{size // MiB}mib"
                ratio = median(ours) / median(plain)
                figures[f"{label}_executor_mb_s"] = round(median(ours), 1)
                figures[f"{label}_plain_mb_s"] = round(median(plain), 1)
                # Every run: the redirect's own speed swings several-fold between runs
                # on a VM, which the medians alone would hide.
                figures[f"{label}_executor_runs_mb_s"] = [round(x) for x in ours]
                figures[f"{label}_plain_runs_mb_s"] = [round(x) for x in plain]
                figures[f"{label}_ratio"] = round(ratio, 3)
                figures[f"{label}_hashing_floor_mb_s"] = round(median(floor), 1)
                figures[f"{label}_hashing_floor_ratio"] = round(median(floor) / median(plain), 3)
                figures[f"{label}_ratio_vs_floor"] = round(median(ours) / median(floor), 3)
                # Without the compatibility layer: the artifact is the only copy kept.
                figures[f"{label}_no_spill_mb_s"] = round(median(no_spill), 1)
                figures[f"{label}_no_spill_ratio"] = round(median(no_spill) / median(plain), 3)
                figures[f"{label}_peak_rss_mb"] = round(max(rss), 1)
                rss_by_size[size] = max(rss_by_size.get(size, 0.0), max(rss))
                targets[f"{label}_ratio"] = {
                    "want": ">= 0.8",
                    "got": round(ratio, 3),
                    "met": ratio >= 0.8,
                }
        small, large = rss_by_size[sizes[0]], rss_by_size[sizes[-1]]
        targets["peak_rss_mb"] = {
            "want": "< 100 at every size",
            "got": round(max(small, large), 1),
            "met": max(small, large) < 100,
        }
        targets["rss_flat"] = {
            "want": "largest size within 10 MB of the smallest",
            "got": round(large - small, 1),
            "met": large - small < 10,
        }
    figures.update(_startup(reps=3 if args.quick else 7))
    report("capture", figures, targets)


def _startup(reps: int) -> dict[str, object]:
    """`overspill run -- true` end to end as a process, against `bash -c true`
    (interleaved, medians): the fixed cost an agent pays for every command."""
    import shutil

    exe = shutil.which("overspill") or str(Path(sys.executable).parent / "overspill")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    ours: list[float] = []
    bash: list[float] = []
    with tempfile.TemporaryDirectory() as home:
        env["OVERSPILL_HOME"] = home
        for _ in range(reps):
            for argv, out in (([exe, "run", "--", "true"], ours), (["bash", "-c", "true"], bash)):
                t0 = time.perf_counter()
                subprocess.run(argv, env=env, check=True, capture_output=True)
                out.append((time.perf_counter() - t0) * 1000)
    return {
        "startup_run_true_ms": round(median(ours), 1),
        "startup_bash_true_ms": round(median(bash), 1),
        "startup_run_true_runs_ms": [round(x) for x in ours],
    }


if __name__ == "__main__":
    main()
