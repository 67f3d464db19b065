"""A pattern cannot hold a grep for long, whatever the line length.

Giant lines are searched in parts; a match that reached a part's edge used to be
retried one byte further each time, which made ``(a+)+$`` on a 2 MB line
quadratic (no answer within minutes). Each classic regex bomb here runs over
giant lines -- two 2 MB lines, one 8 MB line with no final newline, CRLF lines
-- and must agree with GNU grep on which lines match; the slow ones run through
the CLI, HTTP and MCP too, while another call answers meanwhile. (The timeout
marks are hang guards, not speed assertions.)
"""

from __future__ import annotations

import re
import subprocess
import threading
from pathlib import Path

import pytest

from overspill.api.agent.mcp_stdio import initialize_request
from overspill.artifacts.errors import InvalidArgument
from overspill.artifacts.queries import GrepQuery
from overspill.artifacts.store import ArtifactStore
from tests.helpers import ALICE, cli_env, mcp_answers, run_cli, write_artifact

SHAPES = {
    "two 2 MB lines": b"a" * 2_000_000 + b"!\n" + b"x" * 2_000_000 + b"\n",
    "one 8 MB line, no newline": b"a" * 8_000_000,
    "crlf": b"a" * 3_000_000 + b"\r\n" + b"ab" * 1_500_000 + b"\r\n" + b"x\r\n",
}

BOMBS = [
    r"(a+)+$",
    r"(a|aa)+$",
    r"(a*)*b",
    r"(a|a?)+$",
    r"(x+x+)+y",
    r"(a|ab)*c",
    r"a{1,50}a{1,50}$",
    r"(?i)(A?){25}A{25}$",
    r"(.*a){12}$",
    r"^(a+)+$",
    r"\ba+\b",
    r"x$",
    r"(ab)+$",
]


def _gnu_lines(data: bytes, pattern: str) -> list[int]:
    """Line numbers GNU grep matches (PCRE-free: -E, the CR a line's own byte)."""
    ere = pattern.replace("(?i)", "")
    flags = ["-i"] if "(?i)" in pattern else []
    done = subprocess.run(
        ["grep", "-a", "-n", "-E", *flags, ere], input=data, capture_output=True, timeout=120
    )
    return [int(line.split(b":", 1)[0]) for line in done.stdout.splitlines()]


def _our_lines(store: ArtifactStore, art: str, pattern: str) -> list[int]:
    found: list[int] = []
    offset = 0
    for _ in range(1000):
        page = store.grep(ALICE, art, GrepQuery(pattern=pattern, offset=offset, max_matches=100))
        found += [m.line.number for m in page.matches]
        if page.eof:
            return found
        assert page.next_offset > offset, "a page that does not move on"
        offset = page.next_offset
    raise AssertionError("the pages never ended")


@pytest.fixture(scope="module")
def bomb_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[ArtifactStore, dict[str, str]]:
    from overspill.artifacts.config import StoreSettings

    store = ArtifactStore.open(StoreSettings(home=tmp_path_factory.mktemp("bombs") / "home"))
    ids = {name: write_artifact(store, data, principal=ALICE) for name, data in SHAPES.items()}
    return store, ids


@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("pattern", BOMBS)
def test_a_regex_bomb_on_giant_lines_answers_as_gnu_grep_does(
    bomb_store: tuple[ArtifactStore, dict[str, str]], shape: str, pattern: str
) -> None:
    store, ids = bomb_store
    data = SHAPES[shape]
    try:
        ours = _our_lines(store, ids[shape], pattern)
    except InvalidArgument as exc:  # refused as too complex: an answer, at once
        assert "too complex" in exc.message
        return
    # The CR of a CRLF is the line's own last byte, for GNU grep as for the store.
    assert ours == _gnu_lines(data, pattern), (shape, pattern)


@pytest.mark.timeout(300)
def test_the_slowest_bombs_answer_through_the_cli_http_and_mcp_while_ls_answers(
    tmp_path: Path,
) -> None:
    env = cli_env(OVERSPILL_HOME=tmp_path / "home", OVERSPILL_OWNER="agent:x")
    data = SHAPES["two 2 MB lines"]
    put = run_cli(env, "put", "--name", "bomb", stdin=data)
    (art,) = re.findall(r"art_\w{26}", (put.stdout + put.stderr).decode())
    listed: list[int] = []

    def keep_listing() -> None:
        for _ in range(3):
            listed.append(run_cli(env, "ls").returncode)

    lister = threading.Thread(target=keep_listing)
    lister.start()
    for pattern in (r"(a+)+$", r"(a|aa)+$"):
        cli = run_cli(env, "grep", art, pattern, timeout=120)
        assert cli.returncode == 1 and cli.stdout == b"", cli.stderr  # grep's "no match"
        cli = run_cli(env, "grep", art, "-i", "-C", "100", pattern, timeout=120)
        assert cli.returncode == 1
    lister.join(timeout=120)
    assert listed == [0, 0, 0]

    requests = [
        initialize_request("t"),
        {
            "id": 2,
            "method": "tools/call",
            "params": {"name": "artifact_grep", "arguments": {"id": art, "pattern": "(a+)+$"}},
        },
    ]
    answer = mcp_answers(env, requests)[1]["result"]["content"][0]["text"]
    assert "search complete: the whole output was searched" in answer, answer[-300:]


@pytest.mark.timeout(120)
def test_the_slowest_bomb_answers_over_http(store: ArtifactStore) -> None:
    from tests.api_helpers import make_api

    api = make_api(store)
    art = write_artifact(store, SHAPES["two 2 MB lines"], principal=ALICE)
    headers = {"Authorization": f"Bearer {api.alice}"}
    for pattern in (r"(a+)+$", r"(a|aa)+$"):
        r = api.client.get(
            f"/v1/artifacts/{art}/grep", params={"pattern": pattern}, headers=headers
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["matches"] == [] and body["eof"] is True
