"""Model-facing tools, tested the way a model uses them: read an answer, copy the
call it prints, and go on until no call is printed; then compare with the bytes."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

from overspill.api.agent.tools import TOOL_DEFINITIONS, ArtifactTools
from overspill.api.client.api import StoreClient
from overspill.api.client.http import OverspillClient
from overspill.api.client.in_process import InProcessClient
from overspill.artifacts.store import ArtifactStore
from overspill.shell.wording import find_calls
from tests.api_helpers import live_server, make_api
from tests.helpers import ALICE, BOB, write_artifact

pytestmark = pytest.mark.one_store

DATA = "".join(f"{i:05d} {'ERROR disk full' if i % 250 == 0 else 'ok'}\n" for i in range(1, 2001))
# Long lines, CRLF, multi-byte characters and no final newline.
MIXED = (
    "start\r\n"
    + "é" * 3000
    + "\n"
    + "x" * 5000
    + " ERROR_AT_END\n"
    + "".join(f"row {i} ✓\r\n" for i in range(300))
    + "tail without newline"
).encode()

Tools = Callable[..., ArtifactTools]


@pytest.fixture(params=["in-process", "http"])
def make_tools(request: pytest.FixtureRequest, store: ArtifactStore) -> Iterator[Tools]:
    if request.param == "in-process":
        yield lambda **kw: ArtifactTools(InProcessClient(store, ALICE), **kw)
    else:
        api = make_api(store)
        with live_server(api.app) as url, OverspillClient(url, api.alice) as client:
            backend: StoreClient = client
            yield lambda **kw: ArtifactTools(backend, **kw)


def follow(tools: ArtifactTools, name: str, args: dict[str, object], limit: int = 500) -> list[str]:
    """Every answer from ``args`` on, following the first printed call each time."""
    answers = []
    for _ in range(limit):
        res = tools.handle(name, args)
        assert not res.is_error, res.text
        answers.append(res.text)
        calls = find_calls(res.text.rsplit("\n", 1)[-1])
        if not calls:
            return answers
        name, args = calls[0]
    raise AssertionError("the continuations never ended")


_BYTES = re.compile(r"bytes (\d+)-(\d+)")


def byte_windows(answers: list[str]) -> list[tuple[int, int, str]]:
    """(start, end, shown text) of every answer, from its header."""
    out = []
    for text in answers:
        header, _, rest = text.partition("\n")
        body = rest.rsplit("\n", 1)[0]
        m = _BYTES.search(header)
        assert m, header
        out.append((int(m.group(1)), int(m.group(2)), body))
    return out


def test_definitions_are_json_schemas_for_the_five_read_tools() -> None:
    assert [t["name"] for t in TOOL_DEFINITIONS] == [
        "artifact_read",
        "artifact_grep",
        "artifact_search",
        "artifact_info",
        "artifact_list",
    ]
    for t in TOOL_DEFINITIONS:
        assert t["input_schema"]["type"] == "object"
        assert t["input_schema"]["additionalProperties"] is False


def test_following_byte_windows_reads_every_stored_byte_exactly(
    make_tools: Tools, store: ArtifactStore
) -> None:
    art = write_artifact(store, MIXED)
    tools = make_tools(max_chars=1000)
    windows = byte_windows(follow(tools, "artifact_read", {"id": art}))
    pos = 0
    for start, end, text in windows:
        assert start == pos and end - start <= 1000
        assert text == MIXED[start:end].decode()
        pos = end
    assert pos == len(MIXED)


def test_a_tail_continues_from_the_start_and_covers_everything(
    make_tools: Tools, store: ArtifactStore
) -> None:
    art = write_artifact(store, MIXED)
    tools = make_tools(max_chars=1000)
    answers = follow(tools, "artifact_read", {"id": art, "tail_lines": 5})
    windows = byte_windows(answers)
    tail_start, tail_end, tail_text = windows[0]
    assert tail_end == len(MIXED) and tail_text == MIXED[tail_start:].decode()
    assert "lines 300-304" in answers[0].splitlines()[0]
    assert MIXED[tail_start - 1 : tail_start] == b"\n"  # whole lines
    assert b"".join(MIXED[s:e] for s, e, _ in windows[1:]) == MIXED


def test_line_windows_show_whole_lines_and_split_a_line_longer_than_an_answer(
    make_tools: Tools, store: ArtifactStore
) -> None:
    art = write_artifact(store, MIXED)
    tools = make_tools(max_chars=1000)
    first = tools.handle("artifact_read", {"id": art, "start_line": 1, "line_count": 5}).text
    assert first.splitlines() == [
        f"[{art}: line 1 of 304 stored (bytes 0-7); the whole output is stored]",
        "start",
        f'[continue: artifact_read {{"id": "{art}", "start_line": 2, "line_count": 5}}]',
    ]
    long = tools.handle("artifact_read", {"id": art, "start_line": 2}).text.splitlines()
    assert long[0] == (
        f"[{art}: line 2 is 6001 bytes (bytes 7-6008), longer than one answer; "
        "shown bytes 7-1007 of it; the whole output is stored]"
    )
    assert long[-1] == (
        f'[continue this line: artifact_read {{"id": "{art}", "offset": 1007}}; or skip to '
        f'the next line: artifact_read {{"id": "{art}", "start_line": 3}}]'
    )
    # Following the line pages alone ends at the last line, which has no newline.
    answers = follow(tools, "artifact_read", {"id": art, "start_line": 4, "line_count": 50})
    shown = [ln for a in answers for ln in a.split("\n")[1:-1]]
    assert shown == [f"row {i} ✓" for i in range(300)] + ["tail without newline"]
    assert answers[-1].endswith("[end of output: you have seen up to its last byte]")


def test_grep_finds_a_match_at_the_end_of_a_long_line_and_stays_in_its_bound(
    make_tools: Tools, store: ArtifactStore
) -> None:
    line = b"a" * 100_000 + b" ERROR_AT_END\n"
    art = write_artifact(store, b"first\n" + line + b"last\n")
    res = make_tools(max_chars=16_000).handle("artifact_grep", {"id": art, "pattern": "ERROR"})
    assert not res.is_error
    rows = res.text.splitlines()
    assert rows[0].startswith("2:") and "ERROR_AT_END" in rows[0]
    assert f'all of it from byte 6: artifact_read {{"id": "{art}", "offset": 6}}' in rows[0]
    assert len(res.text) < 16_000
    assert rows[-1] == "[1 match in bytes 0-100025; search complete: the whole output was searched]"


def test_following_grep_continuations_finds_what_a_line_by_line_grep_finds(
    make_tools: Tools, store: ArtifactStore
) -> None:
    art = write_artifact(store, DATA.encode())
    tools = make_tools(max_chars=1000)
    args = {"id": art, "pattern": "error|0001\\d", "ignore_case": True, "max_matches": 4}
    answers = follow(tools, "artifact_grep", args)
    found = [int(r.split(":", 1)[0]) for a in answers for r in a.splitlines() if ":" in r[:7]]
    rx = re.compile("error|0001\\d", re.I)
    assert found == [n for n, ln in enumerate(DATA.splitlines(), 1) if rx.search(ln)]
    for a in answers[:-1]:
        (_, cont), *_ = find_calls(a.splitlines()[-1])
        assert cont["ignore_case"] is True and cont["max_matches"] == 4
        assert cont["pattern"] == "error|0001\\d"
    assert answers[-1].endswith("search complete: the whole output was searched]")


def test_grep_with_context_separates_groups(make_tools: Tools, store: ArtifactStore) -> None:
    art = write_artifact(store, DATA.encode())
    out = make_tools().handle(
        "artifact_grep", {"id": art, "pattern": "ERROR", "context": 1, "max_matches": 2}
    )
    assert out.text.split("\n[")[0].split("\n") == [
        "249-00249 ok",
        "250:00250 ERROR disk full",
        "251-00251 ok",
        "--",
        "499-00499 ok",
        "500:00500 ERROR disk full",
        "501-00501 ok",
    ]


def test_a_capped_artifact_never_reads_as_the_whole_output(
    make_tools: Tools, store: ArtifactStore
) -> None:
    art = write_artifact(store, b"line\n" * 1000, max_bytes=1000)
    tools = make_tools(max_chars=600)
    answers = follow(tools, "artifact_read", {"id": art})
    note = "capped: only the first 1000 of 5000 bytes were stored; bytes 1000-5000 are not stored"
    assert all(note in a.splitlines()[0] for a in answers)
    assert answers[-1].splitlines()[-1] == f"[end of the stored bytes, not of the output: {note}]"
    grep = tools.handle("artifact_grep", {"id": art, "pattern": "nothing"}).text
    assert (
        grep
        == f"[0 matches in bytes 0-1000; searched everything stored, not the whole output: {note}]"
    )


def test_a_failed_artifact_says_why_and_how_much_is_stored(
    make_tools: Tools, store: ArtifactStore
) -> None:
    w = store.open_writer(ALICE)
    w.write(b"partial\n")
    w.flush()
    w.close(error="disk full")
    text = make_tools().handle("artifact_read", {"id": w.id}).text
    assert text == (
        f"[{w.id}: bytes 0-8 of 8 stored, line 1; storage failed (disk full): only the first "
        f"8 of 8 bytes were stored]\npartial\n\n[end of the stored bytes, not of the output: "
        f"storage failed (disk full): only the first 8 of 8 bytes were stored]"
    )


def test_a_writing_artifact_offers_to_read_on_from_where_the_stored_bytes_end(
    make_tools: Tools, store: ArtifactStore
) -> None:
    w = store.open_writer(ALICE)
    w.write(b"so far\n")
    w.flush()
    try:
        text = make_tools().handle("artifact_read", {"id": w.id}).text
        assert text.splitlines()[0].endswith(
            "still being written: 7 bytes stored so far, more may come]"
        )
        assert text.splitlines()[-1] == (
            f'[end of what is stored so far; more may come: artifact_read {{"id": "{w.id}", '
            '"offset": 7}]'
        )
    finally:
        w.close()


def test_a_deleted_artifact_is_gone_and_its_info_offers_no_read(
    make_tools: Tools, store: ArtifactStore
) -> None:
    art = write_artifact(store, b"bye\n")
    store.delete(ALICE, art)
    tools = make_tools()
    read = tools.handle("artifact_read", {"id": art})
    assert read.is_error and "deleted" in read.text and "nothing can be read" in read.text
    info = tools.handle("artifact_info", {"id": art}).text
    assert "gone: deleted" in info and "artifact_read" not in info


def test_ids_are_accepted_as_a_model_quotes_them(make_tools: Tools, store: ArtifactStore) -> None:
    art = write_artifact(store, b"x\n")
    tools = make_tools()
    for quoted in (art.lower(), f"{art};", f"[{art}]", f"artifact://{art}", f"  {art}."):
        res = tools.handle("artifact_info", {"id": quoted})
        assert not res.is_error and res.text.startswith(f"id: {art}\n"), quoted


def test_arguments_outside_the_schema_are_refused_with_a_sentence(
    make_tools: Tools, store: ArtifactStore
) -> None:
    art = write_artifact(store, DATA.encode())
    tools = make_tools(max_chars=1000)
    cases = {
        ("artifact_read", "tail"): "Error: artifact_read has no argument 'tail'; it takes id, "
        "offset, limit, hex, start_line, line_count, tail_lines, tail_bytes.",
        ("artifact_read", "limit"): "Error: 'limit' must be at most 64000, got 70000.",
        ("artifact_read", "both"): "Error: give one of offset, start_line, tail_lines or "
        "tail_bytes, not offset and start_line.",
        ("artifact_grep", "pattern"): "Error: artifact_grep needs a 'pattern' (or failures: true).",
        ("artifact_grep", "context"): "Error: 'context' must be a whole number, got 'two'.",
    }
    calls = {
        ("artifact_read", "tail"): {"id": art, "tail": 3},
        ("artifact_read", "limit"): {"id": art, "limit": 70000},
        ("artifact_read", "both"): {"id": art, "offset": 0, "start_line": 2},
        ("artifact_grep", "pattern"): {"id": art},
        ("artifact_grep", "context"): {"id": art, "pattern": "x", "context": "two"},
    }
    for key, expected in cases.items():
        res = tools.handle(key[0], calls[key])
        assert res.is_error and res.text == expected
    schema = tools.definitions()[0]["input_schema"]["properties"]
    assert schema["limit"]["maximum"] == 64000  # the bound enforced is the one published
    # A limit above this answer's size is cut to it, and the answer says so exactly.
    cut = tools.handle("artifact_read", {"id": art, "limit": 5000})
    assert not cut.is_error and cut.text.startswith(f"[{art}: bytes 0-1000 of ")
    bad = tools.handle("artifact_grep", {"id": art, "pattern": "("})
    assert bad.is_error and "invalid regular expression" in bad.text
    missing = tools.handle("artifact_read", {"id": "art_" + "0" * 26})
    assert missing.is_error and "not found" in missing.text


def test_info_lists_the_run_and_the_sibling_stream(make_tools: Tools, store: ArtifactStore) -> None:
    src = {"tool": "bash", "command": "make test", "cwd": "/src", "run_id": "run_1", "exit_code": 2}
    out = write_artifact(store, DATA.encode(), session_id="s", source={**src, "stream": "stdout"})
    err = write_artifact(store, b"oops\n", session_id="s", source={**src, "stream": "stderr"})
    info = make_tools().handle("artifact_info", {"id": out}).text.splitlines()
    assert info[:7] == [
        f"id: {out}",
        "state: complete; the whole output is stored",
        "command: make test",
        "cwd: /src",
        "stream: stdout",
        "exit: code 2",
        "size: 18104 bytes stored of 18104 produced, 2000 lines",
    ]
    assert f"other stream of the same run: stderr {err} (complete, 5 bytes)" in info


def test_list_finds_the_sessions_outputs_newest_first_and_pages(
    make_tools: Tools, store: ArtifactStore
) -> None:
    ids = [
        write_artifact(store, b"x\n", session_id="conv", source={"command": f"c{i}"})
        for i in range(3)
    ]
    write_artifact(store, b"other\n", session_id="elsewhere")
    write_artifact(store, b"bob's\n", principal=BOB, session_id="conv")
    tools = make_tools(session_id="conv")
    page = tools.handle("artifact_list", {"limit": 2}).text.splitlines()
    assert page[0] == "[2 stored outputs in session conv, newest first]"
    assert [r.split()[0] for r in page[1:3]] == [ids[2], ids[1]]
    ((name, args),) = find_calls(page[-1])
    rest = tools.handle(name, args).text.splitlines()
    assert [r.split()[0] for r in rest[1:-1]] == [ids[0]] and rest[-1] == "[end of list]"
    everything = tools.handle("artifact_list", {"all_sessions": True}).text
    assert everything.startswith("[4 stored outputs in all your sessions")


# -- grep answers that are exact (issue: each once failed against GNU grep) -----------------


def test_a_long_line_row_that_starts_inside_a_character_claims_the_bytes_it_shows(
    make_tools: Tools, store: ArtifactStore
) -> None:
    data = ("é" * 40000 + "\n" + "€" * 30001).encode()
    art = write_artifact(store, data)
    text = make_tools().handle("artifact_grep", {"id": art, "pattern": "€{3}$"}).text
    m = re.search(r"shown: bytes (\d+)-(\d+)", text)
    assert m, text[-400:]
    lo, hi = int(m.group(1)), int(m.group(2))
    assert hi <= len(data) == 170_004
    shown = text.split("\n", 1)[0].split(":", 1)[1].split("… [line")[0].lstrip("…")
    assert data[lo:hi].decode() == shown


def test_grep_pages_with_context_show_every_line_gnu_grep_shows(
    make_tools: Tools, store: ArtifactStore
) -> None:
    import subprocess

    data = "".join(f"{i:05d} {'HIT' if i % 5 in (0, 1) else 'row'}\n" for i in range(1, 12001))
    art = write_artifact(store, data.encode())
    answers = follow(
        make_tools(),
        "artifact_grep",
        {"id": art, "pattern": "HIT", "context": 2, "max_matches": 500},
    )
    assert len(answers) > 1
    shown = {int(m.group(1)) for a in answers for m in re.finditer(r"(?m)^(\d+)[:-]", a)}
    gnu = subprocess.run(
        ["grep", "-n", "-C", "2", "HIT"], input=data.encode(), capture_output=True, check=True
    ).stdout.decode()
    assert shown == {int(m.group(1)) for m in re.finditer(r"(?m)^(\d+)[:-]", gnu)}
