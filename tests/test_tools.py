"""Model-facing tools: bounded text that always says how to continue."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from overspill.api.backend import Backend, LocalBackend
from overspill.api.client import OverspillClient
from overspill.api.tools import TOOL_DEFINITIONS, ArtifactTools
from overspill.artifacts.store import ArtifactStore
from tests.api_helpers import live_server, make_api
from tests.helpers import ALICE, write_artifact

DATA = "".join(f"{i:05d} {'ERROR disk full' if i % 250 == 0 else 'ok'}\n" for i in range(1, 2001))


@pytest.fixture(params=["in-process", "http"])
def tools_and_id(
    request: pytest.FixtureRequest, store: ArtifactStore
) -> Iterator[tuple[ArtifactTools, str]]:
    art = write_artifact(
        store, DATA.encode(), source={"command": "make test", "stream": "stdout", "exit_code": 2}
    )
    if request.param == "in-process":
        backend: Backend = LocalBackend(store, ALICE)
        yield ArtifactTools(backend, max_chars=1000), art
    else:
        api = make_api(store)
        with live_server(api.app) as url, OverspillClient(url, api.alice) as client:
            yield ArtifactTools(client, max_chars=1000), art


def test_definitions_are_json_schemas_for_three_tools() -> None:
    assert [t["name"] for t in TOOL_DEFINITIONS] == [
        "artifact_read",
        "artifact_grep",
        "artifact_info",
    ]
    for t in TOOL_DEFINITIONS:
        assert t["input_schema"]["type"] == "object" and "id" in t["input_schema"]["required"]


def test_reading_by_bytes_pages_through_the_whole_artifact(
    tools_and_id: tuple[ArtifactTools, str],
) -> None:
    tools, art = tools_and_id
    offset, pieces = 0, []
    for _ in range(200):
        out = tools.handle("artifact_read", {"id": art, "offset": offset}).text
        header, _, rest = out.partition("\n")
        body, _, footer = rest.rpartition("\n")
        assert header.startswith(f"[{art}: bytes {offset}-")
        assert len(body) <= 1000
        pieces.append(body)
        if footer == "[end of artifact]":
            break
        offset = int(re.search(r"offset=(\d+)\]$", footer).group(1))  # type: ignore[union-attr]
    assert "".join(pieces) == DATA


def test_line_windows_and_tail(tools_and_id: tuple[ArtifactTools, str]) -> None:
    tools, art = tools_and_id
    out = tools.handle("artifact_read", {"id": art, "start_line": 250, "line_count": 2}).text
    assert out.splitlines() == [
        f"[{art}: lines 250-251 of 2000]",
        "00250 ERROR disk full",
        "00251 ok",
        f"[continue: artifact_read id={art} start_line=252]",
    ]
    tail = tools.handle("artifact_read", {"id": art, "tail_lines": 2}).text
    assert tail.splitlines()[1:3] == ["01999 ok", "02000 ERROR disk full"]
    assert "from line 1999" in tail.splitlines()[0] and "offset=0" in tail.splitlines()[-1]


def test_grep_gives_line_numbers_and_where_to_resume(
    tools_and_id: tuple[ArtifactTools, str],
) -> None:
    tools, art = tools_and_id
    out = tools.handle(
        "artifact_grep", {"id": art, "pattern": "error", "ignore_case": True, "max_matches": 3}
    ).text
    lines = out.splitlines()
    assert lines[:3] == [
        "250:00250 ERROR disk full",
        "500:00500 ERROR disk full",
        "750:00750 ERROR disk full",
    ]
    resume = int(re.search(r"offset=(\d+)\]$", lines[-1]).group(1))  # type: ignore[union-attr]
    rest = tools.handle("artifact_grep", {"id": art, "pattern": "ERROR", "offset": resume}).text
    assert (
        rest.splitlines()[0].startswith("1000:")
        and rest.splitlines()[-1] == "[5 matches; search complete]"
    )


def test_info_and_errors_are_text(tools_and_id: tuple[ArtifactTools, str]) -> None:
    tools, art = tools_and_id
    info = tools.handle("artifact_info", {"id": art}).text
    assert "command: make test" in info and "2000 lines" in info and "exit: code 2" in info
    bad = tools.handle("artifact_grep", {"id": art, "pattern": "("})
    assert bad.is_error and "invalid regular expression" in bad.text
    missing = tools.handle("artifact_read", {"id": "art_" + "0" * 26})
    assert missing.is_error and "not found" in missing.text
    both = tools.handle("artifact_read", {"id": art, "offset": 0, "start_line": 2})
    assert both.is_error and "choose one" in both.text
    assert tools.handle("nope", {"id": art}).is_error
