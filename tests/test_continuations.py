"""Every read, followed the way a model follows it, on awkward outputs and on
every surface: the tools in this process, the tools over HTTP, MCP over stdio,
and the CLI.

A walk starts where a model starts, copies the first call each answer prints
and stops when none is printed. What the answers showed is then compared with
the stored bytes -- each byte exactly once, in order -- and grep's matches with
GNU ``grep -a -n`` on the same bytes. The outputs are the ones that broke
continuations before: binary, a UTF-8 character split at the answer size, CJK,
a 5 MB line, carriage-return progress bars, CRLF, no final newline.
"""

from __future__ import annotations

import itertools
import random
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from overspill.api.agent.tools import ArtifactTools
from overspill.api.client.http import OverspillClient
from overspill.api.client.in_process import InProcessClient
from overspill.artifacts.catalog.tokens import NewToken
from overspill.artifacts.config import StoreSettings
from overspill.artifacts.records import Principal
from overspill.artifacts.store import ArtifactStore
from overspill.shell.wording import find_calls
from tests.api_helpers import live_server, make_api
from tests.helpers import cli_env, run_cli, write_artifact

pytestmark = pytest.mark.slow

OWNER = Principal(name="agent:walker", role="agent")
ANSWER = 16_000  # the tools' default answer size


def _shapes() -> dict[str, bytes]:
    rng = random.Random(7)
    return {
        "binary": rng.randbytes(120_000),
        "utf8_split_at_the_cap": ("€" * 30_000 + "\n").encode(),
        "cjk": "".join(
            f"{i} 漢字かな混じり文{' warning' if i % 97 == 0 else ''}\n" for i in range(6000)
        ).encode(),
        "a_5mb_line": b"x" * 5_000_000 + b" warning at the very end\n",
        "progress_bars": b"".join(
            b"\r%3d%% [%-50s]" % (p, b"#" * (p // 2)) for p in range(101) for _ in range(20)
        )
        + b"\ndone, 1 warning\n",
        "crlf": b"".join(
            b"row %d%s\r\n" % (i, b" warning" if i % 41 == 0 else b"") for i in range(8000)
        ),
        "no_final_newline": (
            "".join(f"line {i}{' warning' if i % 50 == 0 else ''}\n" for i in range(5000))
            + "\n\nlast line without a newline"
        ).encode(),
    }


SHAPES = _shapes()
PATTERNS = ["warning", "^$", "[05]$"]

Ask = Callable[[str, dict[str, Any]], str]


# -- the surfaces ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """One home holding every shape (ids by shape name), shared by the surfaces."""
    path = tmp_path_factory.mktemp("walk") / "home"
    store = ArtifactStore.open(StoreSettings(home=path))
    ids = {
        name: write_artifact(store, data, principal=OWNER, chunks=[65_537])
        for name, data in SHAPES.items()
    }
    store.close()
    yield path, ids


@pytest.fixture(scope="module", params=["tools", "http", "mcp"])
def ask(request: pytest.FixtureRequest, home: tuple[Path, dict[str, str]]) -> Iterator[Ask]:
    path, _ = home
    if request.param == "mcp":
        yield from _mcp(path)
        return
    store = ArtifactStore.open(StoreSettings(home=path))
    if request.param == "tools":
        tools = ArtifactTools(InProcessClient(store, OWNER))
        yield lambda name, args: _text(tools.handle(name, args))
    else:
        api = make_api(store)
        token = store.tokens.create(NewToken(principal=OWNER.name, role=OWNER.role)).token
        with live_server(api.app) as url, OverspillClient(url, token) as client:
            tools = ArtifactTools(client)
            yield lambda name, args: _text(tools.handle(name, args))
    store.close()


def _text(result: Any) -> str:
    assert not result.is_error, result.text
    return str(result.text)


def _mcp(path: Path) -> Iterator[Ask]:
    """The SDK's client on ``overspill mcp`` over stdio, called from sync code."""
    import sys

    from anyio.from_thread import start_blocking_portal
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = cli_env(OVERSPILL_HOME=path, OVERSPILL_OWNER=OWNER.name)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "overspill.api.cli", "mcp"], env=env
    )
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Client(params)) as client,
    ):

        def call(name: str, args: dict[str, Any]) -> str:
            result = portal.call(client.call_tool, name, args)
            assert not result.is_error, result.content
            (block,) = result.content
            return str(block.text)

        yield call


# -- walking -------------------------------------------------------------------------------


def walk(ask: Ask, name: str, args: dict[str, Any], limit: int = 2_000) -> list[str]:
    """Every answer from this call on, copying the first call each footer prints."""
    answers = []
    for _ in range(limit):
        text = ask(name, args)
        answers.append(text)
        calls = find_calls(text.rsplit("\n", 1)[-1])
        if not calls:
            return answers
        name, args = calls[0]
    raise AssertionError("the continuations never ended")


def _parts(answer: str) -> tuple[str, str, str]:
    header, _, rest = answer.partition("\n")
    body, _, footer = rest.rpartition("\n")
    return header, body, footer


_SPAN = re.compile(r"bytes (\d+)-(\d+)")
_SHOWN = re.compile(r"shown bytes (\d+)-(\d+)")


def _shown_span(header: str) -> tuple[int, int]:
    m = _SHOWN.search(header) or _SPAN.search(header)
    assert m, header
    return int(m.group(1)), int(m.group(2))


def _as_lines(data: bytes) -> str:
    """Whole lines as a line window shows them: joined by newlines, without the
    terminator or the CR of a CRLF."""
    text = data.decode("utf-8", errors="replace")
    rows = text.split("\n")
    if text.endswith("\n"):
        rows.pop()
    return "\n".join(r[:-1] if r.endswith("\r") else r for r in rows)


def _tiles(spans: list[tuple[int, int]], size: int, start: int = 0) -> None:
    assert spans and spans[0][0] == start, spans[:2]
    for (_, end), (nxt, _) in itertools.pairwise(spans):
        assert nxt == end, (end, nxt)
    assert spans[-1][1] == size


# -- the reads -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", list(SHAPES))
def test_byte_windows_show_every_stored_byte_once(
    ask: Ask, home: tuple[Path, dict[str, str]], shape: str
) -> None:
    data, art = SHAPES[shape], home[1][shape]
    answers = walk(ask, "artifact_read", {"id": art, "offset": 0})
    spans = []
    for answer in answers:
        header, body, _ = _parts(answer)
        start, end = _shown_span(header)
        assert end - start <= ANSWER
        assert body == data[start:end].decode("utf-8", errors="replace"), (shape, start)
        spans.append((start, end))
    _tiles(spans, len(data))
    assert answers[-1].endswith("[end of output: you have seen up to its last byte]")


@pytest.mark.parametrize("shape", ["binary", "utf8_split_at_the_cap", "progress_bars"])
def test_hex_windows_give_back_the_exact_bytes(
    ask: Ask, home: tuple[Path, dict[str, str]], shape: str
) -> None:
    data, art = SHAPES[shape], home[1][shape]
    got = bytearray()
    for answer in walk(ask, "artifact_read", {"id": art, "offset": 0, "hex": True}):
        _, body, _ = _parts(answer)
        for row in body.split("\n"):
            assert int(row[:8], 16) == len(got), row
            got += bytes.fromhex(row[10:59].replace(" ", ""))
    assert bytes(got) == data


@pytest.mark.parametrize("shape", list(SHAPES))
def test_line_windows_and_their_long_line_pieces_tile_the_output(
    ask: Ask, home: tuple[Path, dict[str, str]], shape: str
) -> None:
    data, art = SHAPES[shape], home[1][shape]
    spans = []
    for answer in walk(ask, "artifact_read", {"id": art, "start_line": 1, "line_count": 200}):
        header, body, _ = _parts(answer)
        start, end = _shown_span(header)
        if " stored (bytes " in header:  # a page of whole lines
            assert body == _as_lines(data[start:end]), (shape, start)
        else:  # a piece of a line longer than one answer, as bytes
            assert body == data[start:end].decode("utf-8", errors="replace"), (shape, start)
        spans.append((start, end))
    _tiles(spans, len(data))


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("tail", [{"tail_lines": 50}, {"tail_bytes": 5_000}])
def test_a_tail_and_the_window_just_before_it_meet_exactly(
    ask: Ask, home: tuple[Path, dict[str, str]], shape: str, tail: dict[str, int]
) -> None:
    data, art = SHAPES[shape], home[1][shape]
    header, body, footer = _parts(ask("artifact_read", {"id": art, **tail}))
    start, end = _shown_span(header)
    assert end == len(data) and body == data[start:].decode("utf-8", errors="replace")
    if "tail_lines" in tail and start > 0:
        whole = _as_lines(data[start:]).count("\n") + 1
        assert whole >= 50 or "fewer than the 50 lines asked" in header, header
    if start == 0:
        return
    (before,) = [args for name, args in find_calls(footer) if "limit" in args]
    spans = []
    for answer in walk(ask, "artifact_read", before):
        h, b, _ = _parts(answer)
        spans.append(_shown_span(h))
        assert b == data[slice(*spans[-1])].decode("utf-8", errors="replace")
    assert spans[0] == (max(0, start - ANSWER), start)  # ends where the tail starts
    _tiles(spans, len(data), start=max(0, start - ANSWER))


def gnu_grep(data: bytes, pattern: str, *flags: str) -> bytes:
    return subprocess.run(
        ["grep", "-a", "-n", "-E", *flags, pattern], input=data, capture_output=True
    ).stdout


def gnu_matches(data: bytes, pattern: str) -> list[int]:
    rows = gnu_grep(data, pattern).split(b"\n")
    return [int(r.split(b":", 1)[0]) for r in rows if r]


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("page", [{}, {"context": 2, "max_matches": 10}])
def test_following_grep_finds_what_gnu_grep_finds_each_match_once(
    ask: Ask, home: tuple[Path, dict[str, str]], shape: str, pattern: str, page: dict[str, int]
) -> None:
    data, art = SHAPES[shape], home[1][shape]
    expected = gnu_matches(data, pattern)
    found: list[int] = []
    context: list[int] = []
    for answer in walk(ask, "artifact_grep", {"id": art, "pattern": pattern, **page}):
        for row in answer.split("\n")[:-1]:
            if row == "--":
                continue
            m = re.match(r"(\d+)([:-])", row)
            assert m, row[:200]
            (found if m.group(2) == ":" else context).append(int(m.group(1)))
    assert found == expected, (shape, pattern)
    assert not set(context) & set(expected), "a match was shown as context"


# -- the CLI ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli(home: tuple[Path, dict[str, str]]) -> Iterator[dict[str, str]]:
    from tests.helpers import stop_local_servers

    env = cli_env(OVERSPILL_HOME=home[0], OVERSPILL_OWNER=OWNER.name)
    yield env
    stop_local_servers(str(home[0]))


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_cli_writes_the_stored_bytes_and_prints_grep_as_gnu_grep(
    cli: dict[str, str], home: tuple[Path, dict[str, str]], shape: str
) -> None:
    data, art = SHAPES[shape], home[1][shape]
    cat = run_cli(cli, "cat", art)
    assert cat.returncode == 0 and cat.stdout == data and cat.stderr == b""
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1] + (b"\n" if data.endswith(b"\n") else b"")
    tail = run_cli(cli, "cat", art, "--tail", "1")
    assert tail.returncode == 0 and tail.stdout == last
    for pattern in PATTERNS:
        for flags in ([], ["-C", "2"], ["-m", "7"]):
            want = gnu_grep(data, pattern, *flags)
            got = run_cli(cli, "grep", art, pattern, *flags)
            assert got.stdout == want, (shape, pattern, flags)
            assert got.returncode == (0 if want else 1), got.stderr
