"""What a Bash call costs through the real Claude Code with overspill installed
(``overspill install --shell claude-code``) over the same call without it.

Claude Code is driven headless against a stand-in model endpoint on loopback
(the harness tests' own, ``tests/harnesses``) that asks for N Bash calls of
``true`` and then N of ``seq 1 20000``; a call's cost is the time from the
stand-in's answer that asks for it to the request that brings its result back:
Claude Code's own work, the command, overspill's process and its hook. Runs with
and without overspill alternate (interleaved), and the medians of each command
are compared: the added milliseconds per call. Also timed: the hook alone (the
shell test a Bash call runs when no sandboxed output waits) and
``overspill-shell`` alone, each beside ``python -I -c pass``.

Targets: <= 40 ms added per call (each command); the hook <= 2x ``python -I -c pass``.

    python bench/harness.py [--quick]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import median, report

from overspill.api.agent.harness_config.install_shell import hook_group
from tests.harnesses.clients import HARNESSES, installed
from tests.harnesses.standin import Action, Reply, StandIn, ToolCall, Turn

COMMANDS = {"true": "true", "seq": "seq 1 20000"}


def one_run(n: int, *, install: bool) -> dict[str, list[float]]:
    """One Claude Code session of n calls of each command; seconds per call."""
    calls = [ToolCall("Bash", {"command": c, "description": k}) for k, c in COMMANDS.items()]
    script = [call for call in calls for _ in range(n)]
    stamps: list[float] = []

    def step(turn: Turn) -> Action:
        stamps.append(time.perf_counter())
        k = len(turn.results)
        return script[k] if k < len(script) else Reply("done")

    with tempfile.TemporaryDirectory(prefix="ovs-bench-") as tmp:
        root = Path(tmp)
        home, work, store = root / "home", root / "work", root / "store"
        home.mkdir()
        work.mkdir()
        with StandIn("anthropic", step) as model:
            run = HARNESSES["claude-code"].run(
                home=home,
                work=work,
                store=store,
                model_url=model.url,
                shell=True,
                install=install,
                flags=["--allowedTools", "Bash"],
                extra_env={"OVERSPILL_LOCAL_SERVER_IDLE_S": "2"},
                timeout=600,
                traced=False,
            )
        if run.returncode != 0 or len(model.received) != len(script):
            raise SystemExit(f"claude run failed: {run.stderr[-2000:]}")
    gaps = [b - a for a, b in itertools.pairwise(stamps)][: len(script)]
    return {k: gaps[i * n : (i + 1) * n] for i, k in enumerate(COMMANDS)}


def time_command(argv: list[str], repeat: int, env: dict[str, str] | None = None) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    installed()
    pairs, n, repeat = (1, 5, 10) if args.quick else (3, 20, 40)
    samples: dict[str, dict[str, list[float]]] = {
        "with": {k: [] for k in COMMANDS},
        "without": {k: [] for k in COMMANDS},
    }
    for _ in range(pairs):  # interleaved: without, with, without, with, ...
        for mode in ("without", "with"):
            for k, gaps in one_run(n, install=mode == "with").items():
                samples[mode][k] += gaps
    figures: dict[str, object] = {}
    targets: dict[str, dict[str, object]] = {}
    for k in COMMANDS:
        plain = median(samples["without"][k]) * 1000
        ours = median(samples["with"][k]) * 1000
        added = ours - plain
        figures[f"call_{k}_without_ms"] = round(plain, 1)
        figures[f"call_{k}_with_ms"] = round(ours, 1)
        figures[f"call_{k}_added_ms"] = round(added, 1)
        targets[f"added_per_call_{k}"] = {
            "want": "<= 40 ms",
            "got": f"{added:.1f} ms",
            "met": added <= 40,
        }
    python = time_command([sys.executable, "-I", "-c", "pass"], repeat)
    guard = hook_group()["hooks"][0]["command"]
    env = {**os.environ, "CLAUDE_TMPDIR": tempfile.gettempdir()}
    hook = time_command(["sh", "-c", guard], repeat, env)
    shell = str(Path(sys.executable).with_name("overspill-shell"))
    wrapped = "eval 'true' < /dev/null && pwd -P >| /dev/null"
    prefix = time_command([shell, wrapped], repeat)
    bash = time_command(["bash", "-c", wrapped], repeat)
    py, hk = median(python) * 1000, median(hook) * 1000
    figures.update(
        python_I_pass_ms=round(py, 2),
        hook_idle_ms=round(hk, 2),
        hook_vs_python=round(hk / py, 2),
        overspill_shell_true_ms=round(median(prefix) * 1000, 1),
        bash_true_ms=round(median(bash) * 1000, 2),
    )
    targets["hook_vs_python"] = {"want": "<= 2x", "got": f"{hk / py:.2f}x", "met": hk <= 2 * py}
    print(
        json.dumps({"samples": {m: {k: len(v) for k, v in d.items()} for m, d in samples.items()}})
    )
    report("harness", figures, targets)


if __name__ == "__main__":
    main()
