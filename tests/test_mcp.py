"""The MCP server, driven by the SDK's own client: ``overspill mcp`` as a real
subprocess over stdio, and ``/mcp`` on a live uvicorn over streamable HTTP with
the service's tokens. Continuations are followed the way a model follows them."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from overspill.api.agent.mcp_stdio import initialize_request
from overspill.artifacts.store import ArtifactStore
from overspill.shell.wording import find_calls
from tests.api_helpers import live_server, make_api
from tests.helpers import BOB, Process, wait_until, write_artifact

pytestmark = [pytest.mark.one_store, pytest.mark.slow]

SEQ = "".join(f"{i}\n" for i in range(1, 30001)).encode()  # `seq 1 30000`, 168,894 bytes
READ_TOOLS = [
    "artifact_read",
    "artifact_grep",
    "artifact_search",
    "artifact_info",
    "artifact_list",
    "artifact_save",
]


def text_of(result: Any) -> str:
    (block,) = result.content
    assert block.type == "text"
    return str(block.text)


async def follow_reads(client: Client, name: str, args: dict[str, Any]) -> bytes:
    """Follow the first printed call from a read to the end; the bytes shown."""
    import re

    out = bytearray()
    start = int(args.get("offset", 0))
    for _ in range(200):
        text = text_of(await client.call_tool(name, args))
        header, _, rest = text.partition("\n")
        m = re.search(r"bytes (\d+)-(\d+)", header)
        assert m, header
        body = rest.rsplit("\n", 1)[0].encode()
        assert int(m.group(2)) - int(m.group(1)) == len(body)
        assert int(m.group(1)) == start + len(out)
        out += body
        calls = find_calls(text.rsplit("\n", 1)[-1])
        if not calls:
            return bytes(out)
        name, args = calls[0]
    raise AssertionError("continuations never ended")


@pytest.fixture
def mcp_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_") and k != "TMPDIR"}
    env.update(
        OVERSPILL_HOME=str(tmp_path / "home"),
        OVERSPILL_OWNER="agent:mcp-test",
        OVERSPILL_SESSION_ID="conv-1",
        OVERSPILL_RESULT_SPILL_DIR=str(tmp_path / "results"),
        TMPDIR=str(tmp_path),
    )
    return env


def run_stdio(env: dict[str, str], body: Callable[[Client], Awaitable[None]]) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "overspill.api.cli", "mcp"], env=env
    )

    async def main() -> None:
        async with Client(params) as client:
            await body(client)

    anyio.run(main)


def test_stdio_serves_bash_and_the_artifact_tools_with_a_result_size_hint(
    mcp_env: dict[str, str],
) -> None:
    async def body(client: Client) -> None:
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == ["bash", "bash_output", "bash_kill", *READ_TOOLS]
        for t in tools:
            # A client that names no known harness gets the executor's own bound:
            # two full stream tails with their lines.
            assert t.meta == {"anthropic/maxResultSizeChars": 132_200}
            assert t.input_schema["additionalProperties"] is False

    run_stdio(mcp_env, body)


def test_an_overflowing_bash_run_is_read_back_whole_by_following_its_marker(
    mcp_env: dict[str, str],
) -> None:
    async def body(client: Client) -> None:
        res = await client.call_tool("bash", {"command": "seq 1 30000"})
        text = text_of(res)
        assert not res.is_error
        assert text.endswith("30000\n\n" + text.rsplit("\n", 1)[-1])
        marker = text.rsplit("\n", 1)[-1]
        assert marker.startswith("[output truncated; full output: ")
        # Text only: a harness that prefers structured content must not get it instead.
        assert res.structured_content is None
        found = re.findall(r"artifact (art_\w+);", marker)
        assert len(found) == 1, marker
        (art,) = found
        assert "[exit code:" not in text
        (name, args), grep_call = find_calls(marker)
        # The window just before the tail shown, then on to the end; and from the start.
        shown_from = len(SEQ) - len(text.rsplit("\n\n", 1)[0]) - 1
        assert (name, args) == (
            "artifact_read",
            {"id": art, "offset": shown_from - 16000, "limit": 16000},
        )
        assert await follow_reads(client, name, args) == SEQ[shown_from - 16000 :]
        assert await follow_reads(client, name, {"id": art, "offset": 0}) == SEQ
        # A grep, its continuation followed to the end.
        found = []
        call: tuple[str, dict[str, Any]] | None = (
            "artifact_grep",
            {"id": art, "pattern": "^2999\\d$", "max_matches": 4},
        )
        while call is not None:
            answer = text_of(await client.call_tool(*call))
            found += [r.split(":")[0] for r in answer.splitlines() if not r.startswith("[")]
            calls = find_calls(answer.splitlines()[-1])
            call = calls[0] if calls else None
        assert found == [str(n) for n in range(29990, 30000)]
        assert grep_call[0] == "artifact_grep" and grep_call[1]["id"] == art

    run_stdio(mcp_env, body)


def test_a_forgotten_id_is_found_again_with_artifact_list(mcp_env: dict[str, str]) -> None:
    async def body(client: Client) -> None:
        res = await client.call_tool("bash", {"command": "seq 1 30000 >&2"})
        (art,) = re.findall(r"artifact (art_\w+);", text_of(res))
        listing = text_of(await client.call_tool("artifact_list", {}))
        rows = listing.splitlines()
        assert rows[0] == "[1 stored output in session conv-1, newest first]"
        assert rows[1].startswith(f"{art} stderr 168894 bytes 30000 lines complete ")
        assert rows[1].endswith(": seq 1 30000 >&2")

    run_stdio(mcp_env, body)


def test_a_background_job_is_read_and_killed(mcp_env: dict[str, str], tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    job: list[Process] = []  # the job's shell, taken while it runs

    async def body(client: Client) -> None:
        started = await client.call_tool(
            "bash",
            {"command": f"echo one; echo $$ > {pidfile}; sleep 60 & wait", "background": True},
        )
        first = text_of(started).splitlines()[0]
        assert first == "started background job bash_1"
        for _ in range(100):
            out = text_of(await client.call_tool("bash_output", {"job_id": "bash_1"}))
            if "one" in out:
                break
            await anyio.sleep(0.05)
        for _ in range(100):
            if pidfile.exists() and pidfile.read_text().strip():
                break
            await anyio.sleep(0.05)
        job.append(Process.of(int(pidfile.read_text())))
        assert out.splitlines()[0] == "one"
        assert out.splitlines()[-1].startswith("[job bash_1 is still running; read on: ")
        again = text_of(await client.call_tool("bash_output", {"job_id": "bash_1"}))
        assert again.splitlines()[0] == "(no new output)"
        killed = text_of(await client.call_tool("bash_kill", {"job_id": "bash_1"}))
        assert killed.splitlines()[0] == "job bash_1 stopped"
        final = text_of(await client.call_tool("bash_output", {"job_id": "bash_1"}))
        assert "[job bash_1 has ended]" in final and "[killed by signal: SIGTERM]" in final
        unknown = await client.call_tool("bash_output", {"job_id": "bash_9"})
        assert unknown.is_error and "no background job 'bash_9'" in text_of(unknown)

    run_stdio(mcp_env, body)
    assert job and job[0].gone()


def test_another_owners_artifact_is_not_found_over_stdio(mcp_env: dict[str, str]) -> None:
    from overspill.artifacts.config import StoreSettings

    home = Path(mcp_env["OVERSPILL_HOME"])
    store = ArtifactStore.open(StoreSettings(home=home))
    theirs = write_artifact(store, b"bob's secret\n", principal=BOB)
    store.close()

    async def body(client: Client) -> None:
        res = await client.call_tool("artifact_read", {"id": theirs})
        assert res.is_error and "not found" in text_of(res)
        missing = await client.call_tool("artifact_read", {"id": "art_" + "0" * 26})
        assert text_of(missing) == text_of(res).replace(theirs, "art_" + "0" * 26)

    run_stdio(mcp_env, body)


def test_artifact_save_returns_a_preview_and_writes_the_legacy_file(
    mcp_env: dict[str, str],
) -> None:
    content = "".join(f"line {i:06d} of a fetched page\n" for i in range(20000))

    async def body(client: Client) -> None:
        res = await client.call_tool(
            "artifact_save", {"content": content, "tool": "web_fetch", "name": "../../page.html"}
        )
        text = text_of(res)
        assert res.structured_content is None
        head_line, _, preview = text.partition("\n")
        (art,) = re.findall(r"^\[saved as (art_\w+): ", head_line)
        (path,) = re.findall(r"Full formatted result stored at: (\S+)\. ", preview)
        assert len(preview.encode()) <= 50_000
        assert head_line.startswith(f"[saved as {art}: {len(content)} bytes, 20000 lines; ")
        assert Path(path).read_text() == content
        assert Path(path).name.endswith("-page.html") and Path(path).parent.name.startswith(
            "session-"
        )
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        (name, args), _ = find_calls(preview)
        # It reads on where the preview's head ends; from 0 it reads everything.
        head = preview.split("\n(Omitted ")[0].encode() + b"\n"
        assert args == {"id": art, "offset": len(head)} and content.encode().startswith(head)
        assert (await follow_reads(client, name, args)) == content.encode()[len(head) :]
        assert (await follow_reads(client, name, {"id": art, "offset": 0})) == content.encode()

    run_stdio(mcp_env, body)


# -- streamable HTTP on a live server -----------------------------------------------------


def run_http(url: str, token: str | None, body: Callable[[Client], Awaitable[None]]) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def main() -> None:
        http = create_mcp_http_client(headers=headers)
        async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            await body(client)

    anyio.run(main)


def test_the_http_mount_has_no_bash_and_scopes_every_caller_to_its_own(
    store: ArtifactStore,
) -> None:
    api = make_api(store)
    mine = write_artifact(store, SEQ, source={"command": "seq 1 30000", "stream": "stdout"})
    theirs = write_artifact(store, b"bob's\n", principal=BOB)
    with live_server(api.app) as url:

        async def body(client: Client) -> None:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == READ_TOOLS  # no bash for a remote caller
            res = await client.call_tool("bash", {"command": "id"})
            assert res.is_error
            assert await follow_reads(client, "artifact_read", {"id": mine}) == SEQ
            hidden = await client.call_tool("artifact_info", {"id": theirs})
            assert hidden.is_error and "not found" in text_of(hidden)
            listing = text_of(await client.call_tool("artifact_list", {"all_sessions": True}))
            assert mine in listing and theirs not in listing
            resource = await client.read_resource(f"artifact://{mine}")
            (first,) = resource.contents
            assert isinstance(first, types.TextResourceContents)
            assert first.text.startswith(f"[{mine}: bytes 0-16000 of 168894")

        run_http(url, api.alice, body)

        import httpx

        r = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        r = httpx.post(
            f"{url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Authorization": "Bearer tok_nope"},
        )
        assert r.status_code == 401


def test_the_cli_lists_mcp_among_its_verbs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "overspill.api.cli", "--help"], capture_output=True, text=True
    )
    assert "mcp" in out.stdout


# -- the stdio server's own protocol facts (raw JSON-RPC, as a harness speaks it) ---------


class RawMcp:
    """``overspill mcp`` spoken to line by line, the way a harness does."""

    def __init__(
        self, env: dict[str, str], client: str = "test-client", *, handshake: bool = True
    ) -> None:
        import json

        self._json = json
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "overspill.api.cli", "mcp"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._ids = iter(range(1, 10_000))
        if handshake:  # (2026-07-28 has none: the envelope rides on every request)
            self.init = self.request("initialize", initialize_request(client)["params"])
            self.notify("notifications/initialized")

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(self._json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.send({"method": method, **({"params": params} if params else {})})

    def start(self, method: str, params: dict[str, Any] | None = None) -> int:
        ident = next(self._ids)
        self.send({"id": ident, "method": method, **({"params": params} if params else {})})
        return ident

    def answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed its stdout"
        message: dict[str, Any] = self._json.loads(line)
        return message

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        ident = self.start(method, params)
        message = self.answer()
        assert message["id"] == ident, message
        return message

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)


@pytest.fixture
def raw(mcp_env: dict[str, str]) -> Any:
    servers: list[RawMcp] = []

    def start(client: str = "test-client") -> RawMcp:
        servers.append(RawMcp(mcp_env, client))
        return servers[-1]

    yield start
    for server in servers:
        if server.proc.poll() is None:
            assert server.close() == 0


def _numbers(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return []


def test_the_handshake_names_the_release_and_offers_tools_and_resources(raw: Any) -> None:
    from overspill.api.version import VERSION

    server = raw()
    result = server.init["result"]
    assert result["serverInfo"] == {"name": "overspill", "title": "overspill", "version": VERSION}
    assert result["protocolVersion"] == "2025-06-18"
    assert set(result["capabilities"]) == {"tools", "resources"}
    templates = server.request("resources/templates/list")["result"]["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == [
        "artifact://{id}{?offset,length,start_line,line_count,tail}"
    ]
    unknown = server.request("prompts/list")
    assert unknown["error"]["code"] == -32601


def test_every_tool_says_what_it_does_to_the_world(raw: Any) -> None:
    tools = {t["name"]: t for t in raw().request("tools/list")["result"]["tools"]}
    for name in ("artifact_read", "artifact_grep", "artifact_search", "artifact_info"):
        assert tools[name]["annotations"]["readOnlyHint"] is True, name
        assert tools[name]["annotations"]["destructiveHint"] is False, name
    assert tools["artifact_list"]["annotations"]["readOnlyHint"] is True
    assert tools["bash"]["annotations"]["openWorldHint"] is True
    assert tools["bash"]["annotations"]["readOnlyHint"] is False
    assert tools["bash_kill"]["annotations"]["destructiveHint"] is True
    assert tools["artifact_save"]["annotations"]["readOnlyHint"] is False
    for tool in tools.values():
        assert tool["title"] and tool["annotations"]["title"] == tool["title"]


def test_no_number_a_schema_publishes_is_beyond_what_javascript_holds_exactly(
    raw: Any, store: ArtifactStore
) -> None:
    listed = raw().request("tools/list")["result"]["tools"]
    assert max(_numbers(listed)) <= 2**53 - 1
    api = make_api(store)
    with live_server(api.app) as url:

        async def body(client: Client) -> None:
            tools = (await client.list_tools()).tools
            dumped = [t.model_dump(mode="json", by_alias=True) for t in tools]
            assert max(_numbers(dumped)) <= 2**53 - 1
            assert all(t.annotations is not None for t in tools)

        run_http(url, api.alice, body)
    import json

    spec = json.dumps(api.app.openapi())
    assert str(2**62) not in spec


def test_the_handshake_loads_neither_pydantic_nor_the_store_nor_the_sdk() -> None:
    code = (
        "import sys, overspill.api.agent.mcp_stdio\n"
        "heavy = [m for m in ('pydantic', 'sqlalchemy', 'mcp', 'anyio', 'overspill.artifacts.store')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_artifact_resource_reads_the_window_its_uri_names(raw: Any) -> None:
    server = raw()
    res = server.request("tools/call", {"name": "bash", "arguments": {"command": "seq 1 30000"}})
    (art,) = re.findall(r"artifact (art_\w+);", res["result"]["content"][0]["text"])

    def read(uri: str) -> str:
        (content,) = server.request("resources/read", {"uri": uri})["result"]["contents"]
        assert content["uri"] == uri and content["mimeType"] == "text/plain"
        return str(content["text"])

    window = read(f"artifact://{art}?offset=6&length=12")
    assert window.splitlines()[1:3] == ["4", "5"]
    assert window.startswith(f"[{art}: bytes 6-18 of 168894")
    lines = read(f"artifact://{art}?start_line=100&line_count=3")
    assert lines.splitlines()[1:4] == ["100", "101", "102"]
    assert lines.startswith(f"[{art}: lines 100-102 of 30000 stored")
    tail = read(f"artifact://{art}?tail=2")
    assert tail.splitlines()[1:3] == ["29999", "30000"]
    assert read(f"artifact://{art}").startswith(f"[{art}: bytes 0-16000 of 168894")
    bad = read(f"artifact://{art}?colour=blue")
    assert bad.startswith("Error: artifact:// has no parameter 'colour'")


def test_a_client_known_to_cut_at_40000_characters_gets_answers_under_its_cut(raw: Any) -> None:
    server = raw("gemini-cli-mcp-client")
    tools = server.request("tools/list")["result"]["tools"]
    assert {t["_meta"]["anthropic/maxResultSizeChars"] for t in tools} == {36_000}
    res = server.request(
        "tools/call",
        {"name": "bash", "arguments": {"command": "seq 1 200000; seq 1 200000 >&2"}},
    )
    text = res["result"]["content"][0]["text"]
    assert len(text.encode()) <= 36_000
    assert text.count("[output truncated; ") == 2  # both streams end with their marker
    read = server.request(
        "tools/call",
        {"name": "artifact_read", "arguments": {"id": re.findall(r"art_\w+", text)[0]}},
    )
    assert len(read["result"]["content"][0]["text"].encode()) <= 36_000


def test_a_cancelled_call_stops_its_command_and_gets_no_answer(raw: Any, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    server = raw()
    ident = server.start(
        "tools/call", {"name": "bash", "arguments": {"command": f"echo $$ > {pidfile}; sleep 60"}}
    )
    for _ in range(200):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        anyio.run(anyio.sleep, 0.05)
    command = Process.of(int(pidfile.read_text()))
    server.notify("notifications/cancelled", {"requestId": ident, "reason": "user"})
    pong = server.request("ping")  # the next answer is the ping's, not the call's
    assert pong["result"] == {}
    assert wait_until(command.gone, timeout=10), "the cancelled command still runs"


# -- both protocol eras: the handshake (2025-11-25 and earlier) and 2026-07-28 --------------

MODERN = "2026-07-28"


def _envelope(client: str = "test-client", version: str = MODERN) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"},
    }


@pytest.mark.parametrize("mode", ["legacy", MODERN])
def test_the_sdk_client_of_either_era_gets_the_same_tools_resources_and_answers(
    mcp_env: dict[str, str], mode: str
) -> None:
    seen: dict[str, Any] = {}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "overspill.api.cli", "mcp"], env=mcp_env
    )

    async def main() -> None:
        async with Client(params, mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else MODERN)
            seen["tools"] = [t.name for t in (await client.list_tools()).tools]
            templates = (await client.list_resource_templates()).resource_templates
            seen["templates"] = [t.uri_template for t in templates]
            res = await client.call_tool("bash", {"command": "seq 1 30000"})
            (art,) = re.findall(r"artifact (art_\w+);", text_of(res))
            assert await follow_reads(client, "artifact_read", {"id": art, "offset": 0}) == SEQ
            resource = await client.read_resource(f"artifact://{art}?tail=2")
            (first,) = resource.contents
            assert isinstance(first, types.TextResourceContents)
            seen["tail"] = first.text.replace(art, "ID")

    anyio.run(main)
    assert seen["tools"] == ["bash", "bash_output", "bash_kill", *READ_TOOLS]
    assert seen["templates"] == ["artifact://{id}{?offset,length,start_line,line_count,tail}"]
    assert seen["tail"].splitlines()[1:3] == ["29999", "30000"]


def test_the_2026_era_is_discovered_enveloped_and_typed_on_stdio(mcp_env: dict[str, str]) -> None:
    from mcp_types.methods import serialize_server_result

    server = RawMcp(mcp_env, handshake=False)
    try:
        discover = server.request("server/discover", {"_meta": _envelope()})["result"]
        assert discover["supportedVersions"] == [MODERN]
        assert set(discover["capabilities"]) == {"tools", "resources"}
        assert discover["resultType"] == "complete"
        assert discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "overspill"
        # Each answer is what the revision's own schema accepts.
        serialize_server_result("server/discover", MODERN, discover)
        for method in ("tools/list", "resources/templates/list", "resources/list"):
            result = server.request(method, {"_meta": _envelope()})["result"]
            assert result["resultType"] == "complete" and result["ttlMs"] == 0
            serialize_server_result(method, MODERN, result)
        call = {"name": "artifact_list", "arguments": {}, "_meta": _envelope()}
        listed = server.request("tools/call", call)["result"]
        serialize_server_result("tools/call", MODERN, listed)
        assert listed["content"][0]["text"].startswith("[")
        # The client named in a request picks the answer budget, as a handshake does.
        tools = server.request("tools/list", {"_meta": _envelope("gemini-cli-mcp-client")})
        assert tools["result"]["tools"][0]["_meta"]["anthropic/maxResultSizeChars"] == 36_000
        # What the era refuses, and why.
        bare = server.request("tools/list", {})
        assert bare["error"]["code"] == -32602 and "_meta" in bare["error"]["message"]
        half = server.request(
            "tools/list",
            {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}},
        )
        assert half["error"]["code"] == -32602 and "clientCapabilities" in half["error"]["message"]
        old = server.request("tools/list", {"_meta": _envelope(version="2099-01-01")})
        assert old["error"]["code"] == -32022
        assert old["error"]["data"] == {"supported": [MODERN], "requested": "2099-01-01"}
        handshake = server.request("initialize", initialize_request("late")["params"])
        assert handshake["error"]["code"] == -32022
    finally:
        assert server.close() == 0


def test_a_handshake_connection_refuses_the_2026_envelope_and_discover(raw: Any) -> None:
    server = raw()
    enveloped = server.request("tools/list", {"_meta": _envelope()})
    assert enveloped["error"]["code"] == -32600
    assert server.request("server/discover")["error"]["code"] == -32601
    assert "tools" in server.request("tools/list")["result"]
