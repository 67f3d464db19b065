"""The MCP server, driven by the SDK's own client: ``overspill mcp`` as a real
subprocess over stdio, and ``/mcp`` on a live uvicorn over streamable HTTP with
the service's tokens. Continuations are followed the way a model follows them."""

from __future__ import annotations

import os
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

from overspill.artifacts.store import ArtifactStore
from overspill.shell.wording import find_calls
from tests.api_helpers import live_server, make_api
from tests.helpers import BOB, write_artifact

pytestmark = pytest.mark.slow

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
            assert t.meta == {"anthropic/maxResultSizeChars": 128000}
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
        art = res.structured_content["stdout"]["artifact_id"]
        assert res.structured_content["exit_code"] == 0 and art in marker
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
        art = res.structured_content["stderr"]["artifact_id"]
        listing = text_of(await client.call_tool("artifact_list", {}))
        rows = listing.splitlines()
        assert rows[0] == "[1 stored output in session conv-1, newest first]"
        assert rows[1].startswith(f"{art} stderr 168894 bytes 30000 lines complete ")
        assert rows[1].endswith(": seq 1 30000 >&2")

    run_stdio(mcp_env, body)


def test_a_background_job_is_read_and_killed(mcp_env: dict[str, str], tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"

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
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


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
        data = res.structured_content
        art, path = data["id"], data["legacy_path"]
        assert data["bytes"] == len(content) and data["lines"] == 20000
        assert len(data["preview"].encode()) <= 50_000
        assert text.startswith(f"[saved as {art}: {len(content)} bytes, 20000 lines; ")
        assert Path(path).read_text() == content
        assert Path(path).name.endswith("-page.html") and Path(path).parent.name.startswith(
            "session-"
        )
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert f"Full formatted result stored at: {path}. " in data["preview"]
        (name, args), _ = find_calls(data["preview"])
        # It reads on where the preview's head ends; from 0 it reads everything.
        head = data["preview"].split("\n(Omitted ")[0].encode() + b"\n"
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
