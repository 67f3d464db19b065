"""Search across outputs: only the principal's own, never gone ones, newest first,
and a walk of cursors meets every matching line exactly once -- on every backend,
in process and over HTTP, through the tool's printed continuations and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from overspill.api.agent.tools import ArtifactTools
from overspill.api.client.api import StoreClient
from overspill.api.client.in_process import InProcessClient
from overspill.artifacts.errors import InvalidArgument
from overspill.artifacts.queries import GrepQuery, SearchQuery
from overspill.artifacts.records import Principal
from overspill.artifacts.store import ArtifactStore
from overspill.shell.wording import find_calls
from tests.helpers import ALICE, BOB


def _output(
    store: ArtifactStore,
    who: Principal,
    data: bytes,
    *,
    session: str = "s1",
    command: str = "make",
    tool: str = "bash",
) -> str:
    with store.open_writer(who, session_id=session, source={"tool": tool, "command": command}) as w:
        for i in range(0, len(data), 65536):
            w.write(data[i : i + 65536])
    return w.id


def _log(n: int, every: int, word: bytes = b"ECONNREFUSED") -> bytes:
    return b"".join(b"%d %s\n" % (i, word if i % every == 0 else b"ok") for i in range(1, n + 1))


@pytest.fixture
def outputs(store: ArtifactStore) -> list[str]:
    """Three of Alice's outputs (oldest first), one of Bob's, one of Alice's deleted."""
    ids = [
        _output(store, ALICE, _log(20_000, 997), command="npm test"),
        _output(store, ALICE, _log(3_000, 1_000_000), command="ls"),  # no match
        _output(store, ALICE, _log(50_000, 4_999), command="make", session="s2"),
    ]
    _output(store, BOB, _log(1_000, 10), command="bob's")
    gone = _output(store, ALICE, _log(1_000, 10), command="deleted")
    store.delete(ALICE, gone)
    return ids


def _walk(backend: StoreClient, query: SearchQuery) -> list[tuple[str, int]]:
    """Every (artifact, line) a walk of cursors returns, in order."""
    hits: list[tuple[str, int]] = []
    cursor = None
    for _ in range(10_000):
        res = backend.search(query.model_copy(update={"cursor": cursor}))
        hits += [(g.artifact_id, m.line.number) for g in res.groups for m in g.matches]
        cursor = res.next_cursor
        if cursor is None:
            return hits
    raise AssertionError("the walk never ended")


def _expected(store: ArtifactStore, ids: list[str], pattern: str) -> list[tuple[str, int]]:
    """What grep finds in each output, newest output first."""
    found = []
    for art in reversed(ids):
        res = store.grep(ALICE, art, GrepQuery(pattern=pattern, max_matches=10_000))
        found += [(art, m.line.number) for m in res.matches]
    return found


def test_a_search_finds_every_line_of_the_principals_live_outputs_newest_first(
    store: ArtifactStore, outputs: list[str], backend: StoreClient
) -> None:
    res = backend.search(SearchQuery(pattern="ECONNREFUSED", max_matches=1000))
    assert res.next_cursor is None and res.stopped is None
    assert [g.artifact_id for g in res.groups] == [outputs[2], outputs[0]]
    assert [(g.command, g.tool) for g in res.groups] == [("make", "bash"), ("npm test", "bash")]
    assert [(g.artifact_id, m.line.number) for g in res.groups for m in g.matches] == (
        _expected(store, outputs, "ECONNREFUSED")
    )
    assert res.artifacts_searched == 3  # Bob's and the deleted one are never searched
    assert res.groups[0].matches[0].line.text == "4999 ECONNREFUSED"


@pytest.mark.parametrize(("max_matches", "max_scan_bytes"), [(1, 2**30), (7, 1024), (1000, 4096)])
def test_a_walk_of_cursors_meets_every_match_once(
    store: ArtifactStore,
    outputs: list[str],
    backend: StoreClient,
    max_matches: int,
    max_scan_bytes: int,
) -> None:
    query = SearchQuery(
        pattern="ECONNREFUSED", max_matches=max_matches, max_scan_bytes=max_scan_bytes
    )
    assert _walk(backend, query) == _expected(store, outputs, "ECONNREFUSED")


def test_a_walk_whose_output_was_deleted_mid_search_goes_on_from_the_next_outputs_start(
    store: ArtifactStore,
) -> None:
    older = _output(store, ALICE, _log(2_000, 100), command="older")  # lines 100, 200, ...
    newer = _output(store, ALICE, _log(50_000, 10_000), command="newer")
    first = store.search(ALICE, SearchQuery(pattern="ECONNREFUSED", max_scan_bytes=300_000))
    assert first.resume_artifact == newer and (first.resume_offset or 0) > 100_000
    store.delete(ALICE, newer)
    rest = store.search(ALICE, SearchQuery(pattern="ECONNREFUSED", cursor=first.next_cursor))
    # Not resumed at the deleted output's offset inside the next one: all of its lines.
    assert [(g.artifact_id, m.line.number) for g in rest.groups for m in g.matches] == [
        (older, n) for n in range(100, 2_001, 100)
    ]


def test_a_walk_resumes_where_it_stopped_without_listing_what_it_searched(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [_output(store, ALICE, _log(2_000, 500), command=f"job {i}") for i in range(30)]
    first_listed: list[str] = []
    keep = store.catalog.list

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        page = keep(*args, **kwargs)
        first_listed.append(page.items[0].id)
        return page

    monkeypatch.setattr(store.catalog, "list", spy)
    resumed: list[str] = []
    hits: list[tuple[str, int]] = []
    cursor = None
    while True:
        res = store.search(ALICE, SearchQuery(pattern="ECONNREFUSED", max_matches=7, cursor=cursor))
        hits += [(g.artifact_id, m.line.number) for g in res.groups for m in g.matches]
        if res.next_cursor is None:
            break
        assert res.resume_artifact is not None
        resumed.append(res.resume_artifact)
        cursor = res.next_cursor
    assert hits == _expected(store, ids, "ECONNREFUSED")
    # Each call lists from the output the last one stopped in, not from its page's start.
    assert len(resumed) == 17 and first_listed[1:] == resumed


def test_a_call_lists_about_as_many_more_outputs_as_its_bytes_left_will_search(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from overspill.artifacts.reading import search as search_module

    monkeypatch.setattr(search_module, "_PAGE", 10)
    monkeypatch.setattr(search_module, "_MIN_PAGE", 2)
    ids = [_output(store, ALICE, _log(1_000, 500), command=f"job {i}") for i in range(30)]
    size = store.get(ALICE, ids[0]).size_bytes
    limits: list[int] = []
    keep = store.catalog.list

    def spy(principal, query):  # type: ignore[no-untyped-def]
        limits.append(query.limit)
        return keep(principal, query)

    monkeypatch.setattr(store.catalog, "list", spy)
    # A call searches 13 outputs' bytes: a page of 10, then about 3 more, not 10.
    query = SearchQuery(pattern="ECONNREFUSED", max_matches=1000, max_scan_bytes=13 * size)
    assert _walk(InProcessClient(store, ALICE), query) == _expected(store, ids, "ECONNREFUSED")
    assert limits[:2] == [10, 5], limits


def test_a_session_and_a_tool_narrow_the_search(store: ArtifactStore, outputs: list[str]) -> None:
    backend = InProcessClient(store, ALICE)
    res = backend.search(SearchQuery(pattern="ECONNREFUSED", session_id="s2", max_matches=1000))
    assert [g.artifact_id for g in res.groups] == [outputs[2]]
    web = _output(store, ALICE, b"GET / ECONNREFUSED\n", tool="web_fetch")
    res = backend.search(SearchQuery(pattern="ECONNREFUSED", tool="web_fetch"))
    assert [g.artifact_id for g in res.groups] == [web]


def test_a_cursor_the_search_did_not_issue_is_refused(store: ArtifactStore) -> None:
    with pytest.raises(InvalidArgument, match="cursor: not one a search returned"):
        store.search(ALICE, SearchQuery(pattern="x", cursor="bm90IGEgY3Vyc29y"))


def test_the_tools_continuations_followed_to_the_end_show_every_line_once(
    store: ArtifactStore, outputs: list[str]
) -> None:
    tools = ArtifactTools(InProcessClient(store, ALICE), max_chars=2000)
    answer = tools.handle("artifact_search", {"pattern": "ECONNREFUSED", "max_matches": 4})
    seen: list[tuple[str, int]] = []
    for _ in range(1000):
        text = answer.text
        assert not answer.is_error, text
        art = None
        for row in text.splitlines():
            if row.startswith("== "):
                art = row.split()[1]
            elif row[:1].isdigit():
                seen.append((str(art), int(row.split(":", 1)[0])))
        calls = find_calls(text.splitlines()[-1])
        if not calls:
            assert text.endswith("every output searched to its end]"), text
            break
        name, args = calls[-1]
        assert name == "artifact_search"
        answer = tools.handle(name, args)
    assert seen == _expected(store, outputs, "ECONNREFUSED")


def test_the_tool_says_when_nothing_matched(store: ArtifactStore, outputs: list[str]) -> None:
    tools = ArtifactTools(InProcessClient(store, ALICE), session_id="s1")
    size = len(_log(20_000, 997)) + len(_log(3_000, 1_000_000))  # session s1's two
    assert tools.handle("artifact_search", {"pattern": "nothing-like-this"}).text == (
        f"[no matching line; 2 outputs of this session searched ({size} bytes); "
        "every output searched to its end]"
    )


def test_the_cli_prints_id_line_text_and_exits_as_grep(tmp_path: Path) -> None:
    from tests.helpers import cli_env, run_cli

    env = cli_env(OVERSPILL_HOME=str(tmp_path / "home"), OVERSPILL_LOCAL_SERVER="off")
    done = run_cli(env, "run", "--json", "--", "seq 1 70000; echo 'Error: ECONNREFUSED'")
    assert done.returncode == 0, done.stderr
    found = run_cli(env, "search", "ECONNREFUSED")
    assert found.returncode == 0, found.stderr
    (row,) = found.stdout.decode().splitlines()
    art, line, text = row.split(":", 2)
    assert art.startswith("art_") and line == "70001" and text == "Error: ECONNREFUSED"
    assert run_cli(env, "search", "no-such-thing").returncode == 1
