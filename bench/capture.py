"""Capture throughput, CPU and memory against what any pipe capture costs.

The reference is ``bash -c 'CMD | cat > f'``: a pipe, a reader and a file, which
is the least any capturing executor does (``CMD > f`` has no pipe at all, so no
capturing executor can approach it). The peer to beat is the TypeScript executor
overspill replaces, keeping the whole stream. Its figures are the ones issue 40's
table states (medians of interleaved ratios to ``cmd | cat > f``), printed beside
ours, not re-run here (it is not part of this repository). Target: the executor
with its store open and ``overspill run`` as a process each at or above the peer
at every size, and at 64 MiB at or above 0.5 as well.

Measured, interleaved, in one run (medians of per-repetition ratios):

* ``executor``: the executor in a process whose store is already open — how an
  embedding harness or ``overspill mcp`` captures — with the defaults
  (compatibility layer on, so up to 64 MiB also goes to the legacy spill file);
* ``cli``: ``overspill run -- CMD`` as a process, end to end (imports, opening
  the store on the first overflow, exit);
* ``ref``: ``bash -c 'CMD | cat > f'``;

for 64 MiB and 1 GiB of zeros and of log lines; CPU seconds (user + system of
the whole pipeline, the generator included, as for the reference) and peak RSS.
For the log lines, the executor with redaction off too (``unredacted``): the
ratio of redaction on to off. Then the fixed cost per command: ``overspill run -- echo hi`` and ``-- true``
against ``bash -c true``.

    python bench/capture.py [--quick]
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import arguments, median, peak_rss_mb, report, run_child

MiB = 1024 * 1024
GENERATORS = {
    "zeros": "head -c {size} /dev/zero",
    "lines": "yes 'INFO 2026-12-02T18:00:00Z worker-7 processed request id=42 in 3ms ok' | head -c {size}",
}
# The TypeScript executor overspill replaces, keeping the whole stream: its
# median ratios to `cmd | cat > f` as issue 40's table states them (its source is
# not in this repository, so they are stated, not re-run), and the table's floor
# of 0.5 at 64 MiB; CPU s for 1 GiB of zeros; `seq 1 20000` as a process (ms).
PEER = {
    "zeros_16mib": 0.23,  # (the table's 64 MiB figure; the quick run's smaller size)
    "zeros_64mib": 0.23,
    "zeros_1024mib": 0.86,
    "lines_16mib": 0.49,
    "lines_64mib": 0.49,
    "lines_1024mib": 0.75,
    "cpu_s_per_gib": 4.2,
    "seq_20000_ms": 120,
}
FLOOR = {"zeros_16mib": 0.5, "zeros_64mib": 0.5, "lines_16mib": 0.5, "lines_64mib": 0.5}


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def child_executor(gen: str, size: int, home: str) -> None:
    """One capture through an executor whose store is already open (this process)."""
    from overspill.artifacts.config import StoreSettings
    from overspill.artifacts.records import Principal
    from overspill.artifacts.store import ArtifactStore
    from overspill.shell import ExecRequest, Executor, ShellSettings, StoreSink

    store = ArtifactStore.open(StoreSettings(home=Path(home)))
    who = Principal(name="agent:bench", role="agent")
    executor = Executor(ShellSettings(), StoreSink(store, who))
    # A harness that embeds the executor has captured before: its first overflow
    # (SQLAlchemy compiling the statements once, the first threads) is not what
    # every later command costs.
    warm = executor.run(ExecRequest(command="seq 1 100000"))
    assert warm.stdout.artifact is not None
    store.delete(who, warm.stdout.artifact.id)
    command = GENERATORS[gen].format(size=size)
    os.sync()
    cpu0, t0 = _cpu(), time.perf_counter()
    result = executor.run(ExecRequest(command=command, timeout_ms=600_000))
    elapsed, cpu = time.perf_counter() - t0, _cpu() - cpu0
    art = result.stdout.artifact
    assert art is not None and art.size_bytes == size and art.sha256, result.stdout
    store.delete(who, art.id)
    if result.stdout.spill_path and os.path.exists(result.stdout.spill_path):
        os.unlink(result.stdout.spill_path)
    print(json.dumps({"s": elapsed, "cpu_s": cpu, "rss_mb": peak_rss_mb()}))


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of a child process tree; its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(argv, env=env, check=True, capture_output=True)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, out.stdout.decode(errors="replace")


class Runner:
    def __init__(self, home: str, workdir: str) -> None:
        self.home = home
        self.workdir = workdir
        self.exe = shutil.which("overspill") or str(Path(sys.executable).parent / "overspill")
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("OVERSPILL_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        self.env["OVERSPILL_HOME"] = home

    def ref(self, command: str) -> dict[str, float]:
        target = os.path.join(self.workdir, "ref.out")
        os.sync()
        s, cpu, _ = _timed(["bash", "-c", f"{command} | cat > {target}"], self.env)
        os.unlink(target)
        return {"s": s, "cpu_s": cpu}

    def executor(self, gen: str, size: int, *, redact: bool = True) -> dict[str, float]:
        env = self.env if redact else {**self.env, "OVERSPILL_REDACT": "off"}
        result: dict[str, float] = run_child(Path(__file__), gen, str(size), self.home, env=env)
        return result

    def cli(self, command: str) -> dict[str, float]:
        os.sync()
        s, cpu, text = _timed([self.exe, "run", "--json", "--", command], self.env)
        out = json.loads(text)["stdout"]
        # Clean up so the home does not grow run after run.
        subprocess.run(
            [self.exe, "rm", out["artifact"]["id"]], env=self.env, check=True, capture_output=True
        )
        spill = out["spill_path"]
        if spill and os.path.exists(spill):  # (rm deletes it with the artifact)
            os.unlink(spill)
        return {"s": s, "cpu_s": cpu}


def main() -> None:
    ap = arguments("16 and 64 MiB, one repetition")
    ap.add_argument("--child", nargs=3)
    args = ap.parse_args()
    if args.child:
        gen, size, home = args.child
        child_executor(gen, int(size), home)
        return
    sizes = [16 * MiB, 64 * MiB] if args.quick else [64 * MiB, 1024 * MiB]
    repeats = 1 if args.quick else 3
    figures: dict[str, Any] = {"load_average_before": list(os.getloadavg())}
    targets: dict[str, dict[str, Any]] = {}
    rss_by_size: dict[int, float] = {}
    cpu_per_gib: list[float] = []
    with (
        tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as home,
        tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as workdir,
    ):
        runner = Runner(home, workdir)
        runner.cli("seq 1 100000")  # make the home (schema) once, outside the timings
        for gen in GENERATORS:
            for size in sizes:
                command = GENERATORS[gen].format(size=size)
                rows: dict[str, list[dict[str, float]]] = {"ref": [], "executor": [], "cli": []}
                if gen == "lines":
                    rows["unredacted"] = []
                for _ in range(repeats):  # interleaved: each repetition runs all of them
                    rows["ref"].append(runner.ref(command))
                    rows["executor"].append(runner.executor(gen, size))
                    rows["cli"].append(runner.cli(command))
                    if "unredacted" in rows:
                        rows["unredacted"].append(runner.executor(gen, size, redact=False))
                label = f"{gen}_{size // MiB}mib"
                mb = size / MiB
                for name, runs in rows.items():
                    figures[f"{label}_{name}_mb_s"] = round(median([mb / r["s"] for r in runs]), 1)
                    figures[f"{label}_{name}_runs_s"] = [round(r["s"], 3) for r in runs]
                    figures[f"{label}_{name}_cpu_s"] = round(median([r["cpu_s"] for r in runs]), 2)
                for name in ("executor", "cli"):
                    ratios = [
                        ref["s"] / ours["s"]
                        for ref, ours in zip(rows["ref"], rows[name], strict=True)
                    ]
                    figures[f"{label}_{name}_ratio"] = round(median(ratios), 3)
                if label in PEER:
                    figures[f"{label}_peer_ratio"] = PEER[label]
                if "unredacted" in rows:  # the executor with redaction on, to it off
                    on_off = median(
                        [
                            off["s"] / on["s"]
                            for on, off in zip(rows["executor"], rows["unredacted"], strict=True)
                        ]
                    )
                    figures[f"{label}_redaction_on_off_ratio"] = round(on_off, 3)
                    targets[f"{label}_redaction_on_off_ratio"] = {
                        "want": ">= 0.85",
                        "got": round(on_off, 3),
                        "met": on_off >= 0.85,
                    }
                rss = max(r["rss_mb"] for r in rows["executor"])
                figures[f"{label}_executor_peak_rss_mb"] = round(rss, 1)
                rss_by_size[size] = max(rss_by_size.get(size, 0.0), rss)
                if size == sizes[-1]:  # per GiB at the largest size: no fixed costs
                    gib = size / (1024 * MiB)
                    cpu_per_gib.append(median([r["cpu_s"] for r in rows["executor"]]) / gib)
                want = max(PEER[label], FLOOR.get(label, 0.0))
                for name in ("executor", "cli"):
                    got = figures[f"{label}_{name}_ratio"]
                    floor = f" and >= {FLOOR[label]}" if label in FLOOR else ""
                    targets[f"{label}_{name}_ratio"] = {
                        "want": f">= the peer's {PEER[label]}{floor} of `cmd | cat > f`",
                        "got": got,
                        "met": got >= want,
                    }
    figures.update(_fixed_cost(reps=5 if args.quick else 11))
    figures["load_average_after"] = list(os.getloadavg())
    figures["cpu_s_per_gib"] = round(max(cpu_per_gib), 2)
    figures["peer_cpu_s_per_gib"] = PEER["cpu_s_per_gib"]
    seq = figures["seq_20000_ms"]
    targets["seq_20000_ms"] = {
        "want": f"<= the peer's {PEER['seq_20000_ms']} ms",
        "got": seq,
        "met": seq <= PEER["seq_20000_ms"],
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
    report("capture", figures, targets)


def _fixed_cost(reps: int) -> dict[str, Any]:
    """What every command pays: `overspill run -- echo hi` and `-- true` end to end
    as processes, against `bash -c true` (interleaved, medians)."""
    exe = shutil.which("overspill") or str(Path(sys.executable).parent / "overspill")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("OVERSPILL_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    cases = {
        "echo_hi_ms": [exe, "run", "--", "echo hi"],
        "run_true_ms": [exe, "run", "--", "true"],
        "seq_20000_ms": [exe, "run", "--", "seq 1 20000"],
        "bash_true_ms": ["bash", "-c", "true"],
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    with tempfile.TemporaryDirectory() as home:
        env["OVERSPILL_HOME"] = home
        for argv in cases.values():  # the local server up, the bytecode written
            subprocess.run(argv, env=env, check=True, capture_output=True)
        for _ in range(reps):
            for name, argv in cases.items():
                t0 = time.perf_counter()
                subprocess.run(argv, env=env, check=True, capture_output=True)
                times[name].append((time.perf_counter() - t0) * 1000)
    out: dict[str, Any] = {k: round(median(v), 1) for k, v in times.items()}
    out["echo_hi_runs_ms"] = [round(x) for x in times["echo_hi_ms"]]
    return out


if __name__ == "__main__":
    main()
