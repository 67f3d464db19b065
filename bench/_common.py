"""Helpers shared by the benchmarks: medians, child-process runs, the JSON last line."""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A free loopback port for a server the benchmark starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(port: int) -> None:
    """Block until a server accepts connections on ``port`` (30 s at most)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"server on {port} did not start")


def peak_rss_mb() -> float:
    """This process's own peak RSS. VmHWM belongs to the address space made at exec;
    ru_maxrss would include the parent's size at fork (here: moto's stored objects)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(script: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one measurement in a fresh process so its peak RSS is its own."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    out = subprocess.run(
        [sys.executable, str(script), "--child", *args],
        capture_output=True,
        text=True,
        env=full_env,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"benchmark child {args} failed:\n{out.stderr}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def median(values: list[float]) -> float:
    return statistics.median(values)


def report(name: str, figures: dict[str, Any], targets: dict[str, dict[str, Any]]) -> None:
    """Print the human summary and, last, one JSON object with figures and targets."""
    for key, value in figures.items():
        print(f"{name}: {key} = {value}")
    met = {k: bool(t["met"]) for k, t in targets.items()}
    for key, t in targets.items():
        print(
            f"{name}: target {key}: {t['want']} -> {t['got']} ({'met' if t['met'] else 'MISSED'})"
        )
    print(
        json.dumps(
            {
                "benchmark": name,
                "figures": figures,
                "targets": targets,
                "all_met": all(met.values()),
            }
        )
    )


def arguments(quick: str = "the short run (under 30 s)") -> argparse.ArgumentParser:
    """Every benchmark's command line: ``--quick`` (what it shortens, in ``quick``),
    and the options the caller adds."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help=quick)
    return ap
