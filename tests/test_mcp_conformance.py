"""The official MCP conformance suite (``@modelcontextprotocol/conformance``,
pinned from npm) against ``/mcp`` of a real ``overspill serve``.

The suite's client sends no credentials, so it talks to the server through a
pass-through that adds an agent's bearer token and changes nothing else (Host
and Origin reach the server as the suite sent them: its DNS-rebinding scenario
sends another site's). The scenarios that need the suite's own reference server
(its tools, prompts and binary resource) are listed, each with its reason, in
``tests/conformance-baseline.yml``; the suite fails the run on any other failure
and on a listed one that passes. The TypeScript SDK's client (2.x) is driven
against ``overspill mcp`` too.
"""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.harnesses.clients import node
from tests.helpers import cli_env, free_port, run_cli, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.harness, pytest.mark.one_store]

BASELINE = Path(__file__).with_name("conformance-baseline.yml")
SERVE = [sys.executable, "-m", "overspill.api.cli", "serve"]
MUST_PASS = [
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-error",
    "resources-list",
    "resources-templates-read",
    "dns-rebinding-protection",
]


class _WithToken(BaseHTTPRequestHandler):
    """Forwards a request to the server, adding the bearer token."""

    protocol_version = "HTTP/1.1"
    target = 0
    token = ""

    def log_message(self, *args: object) -> None:
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else None
        conn = http.client.HTTPConnection("127.0.0.1", self.target, timeout=60)
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for name, value in self.headers.items():
            if name.lower() not in ("connection", "authorization"):
                conn.putheader(name, value)
        conn.putheader("Authorization", f"Bearer {self.token}")
        conn.endheaders(body)
        answer = conn.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = _forward


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """``overspill serve`` on loopback, and the URL of /mcp through the token."""
    env = cli_env(OVERSPILL_HOME=tmp_path / "home", OVERSPILL_LOCAL_SERVER="off")
    port = free_port()
    server = subprocess.Popen(
        [*SERVE, "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        import urllib.request

        def up() -> bool:
            try:
                return bool(urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz").status)
            except OSError:
                return False

        assert wait_until(up, 30), "overspill serve did not come up"
        made = run_cli(
            env, "token", "create", "--principal", "agent:conformance", "--role", "agent"
        )
        token = made.stdout.decode().strip().splitlines()[-1]
        handler = type("Handler", (_WithToken,), {"target": port, "token": token})
        proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=proxy.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{proxy.server_address[1]}/mcp"
        finally:
            proxy.shutdown()
            proxy.server_close()
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_official_conformance_suite_passes_but_for_the_listed_scenarios(
    harness_bin: Path, served: str, tmp_path: Path
) -> None:
    suite = harness_bin.parent / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    options = ["--expected-failures", str(BASELINE), "-o", str(tmp_path / "results")]
    done = subprocess.run(
        [str(node()), str(suite), "server", "--url", served, *options],
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout + done.stderr
    summary = out[out.rfind("=== SUMMARY ===") :]
    assert done.returncode == 0, summary[-3000:]
    for scenario in MUST_PASS:
        m = re.search(rf"(\S) {re.escape(scenario)}: (\d+) passed, (\d+) failed", summary)
        assert m and m.group(1) == "✓" and int(m.group(2)) >= 1, (scenario, summary[-2000:])


TS_CLIENT = """
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
const [mode, python, ...args] = process.argv.slice(2);
const negotiation = mode === "legacy" ? { mode: "legacy" } : { mode: { pin: mode } };
const client = new Client(
  { name: "ts-sdk-test", version: "1.0.0" },
  { versionNegotiation: negotiation },
);
await client.connect(new StdioClientTransport({ command: python, args, env: process.env }));
const tools = (await client.listTools()).tools.map((t) => t.name);
const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
const ran = await client.callTool({ name: "bash", arguments: { command: "seq 1 30000" } });
const text = ran.content[0].text;
const id = text.match(/artifact (art_\\w+);/)[1];
const read = await client.readResource({ uri: `artifact://${id}?tail=2` });
console.log(JSON.stringify({
  version: client.getNegotiatedProtocolVersion?.() ?? null,
  tools, templates, tail: read.contents[0].text.split("\\n").slice(1, 3),
}));
await client.close();
"""


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_the_typescript_sdk_client_of_either_era_uses_the_stdio_server(
    harness_bin: Path, tmp_path: Path, mode: str
) -> None:
    # Beside the pinned packages, where Node resolves the client's import.
    script = harness_bin.parent.parent / "overspill-ts-client.mjs"
    if not script.exists() or script.read_text() != TS_CLIENT:
        script.write_text(TS_CLIENT)
    env = cli_env(OVERSPILL_HOME=tmp_path / "home", OVERSPILL_OWNER="agent:ts")
    done = subprocess.run(
        [str(node()), str(script), mode, sys.executable, "-m", "overspill.api.cli", "mcp"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["version"] == ("2025-11-25" if mode == "legacy" else mode)
    assert seen["tools"][:3] == ["bash", "bash_output", "bash_kill"]
    assert "artifact_read" in seen["tools"]
    assert seen["templates"] == ["artifact://{id}{?offset,length,start_line,line_count,tail}"]
    assert seen["tail"] == ["29999", "30000"]
