"""grep over bytes finds exactly what a line-by-line grep finds, whatever the
chunking: long lines, lines across segment and chunk edges, CRLF, no final
newline, anchors, and a search resumed from every next_offset it printed."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

import pytest

from overspill.artifacts.errors import InvalidArgument
from overspill.artifacts.grep.grep import OVERLAP
from overspill.artifacts.queries import GrepQuery
from overspill.artifacts.store import ArtifactStore
from tests.helpers import ALICE, write_artifact

PATTERNS = ["ERROR", "^warn", "done$", "x{3}y", "ERROR|^warn", "é+z", "[0-9]{5} ok$"]


def _content(seed: int) -> bytes:
    rng = random.Random(seed)
    parts = []
    for i in range(rng.randrange(50, 400)):
        kind = rng.random()
        if kind < 0.02:
            body = "a" * rng.randrange(OVERLAP, 3 * OVERLAP) + rng.choice(["ERROR", "done", ""])
        elif kind < 0.3:
            body = rng.choice(["warn: disk", "x warn", "all done", "xxxy", "éééz", "ERROR here"])
        else:
            body = f"{i:05d} ok" if rng.random() < 0.5 else "noise " * rng.randrange(0, 30)
        parts.append(body + rng.choice(["\n", "\n", "\r\n"]))
    if rng.random() < 0.5:
        parts[-1] = parts[-1].rstrip("\r\n")
    return "".join(parts).encode()


def _expected(data: bytes, pattern: str) -> list[int]:
    rx = re.compile(pattern)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [
        n
        for n, raw in enumerate(lines, 1)
        if rx.search(raw.decode("utf-8", errors="replace"))  # as GNU grep: CR is data
    ]


def _all_matches(
    store: ArtifactStore, art: str, pattern: str, *, scan_bytes: int = 2**28, max_matches: int = 100
) -> list[int]:
    found, offset = [], 0
    for _ in range(100_000):
        query = GrepQuery(pattern=pattern, offset=offset, max_matches=max_matches)
        res = store.grep(ALICE, art, query, scan_bytes=scan_bytes)
        found += [m.line.number for m in res.matches]
        if not res.truncated:
            assert res.eof
            return found
        assert res.next_offset > offset or res.matches
        offset = res.next_offset
    raise AssertionError("grep never finished")


@pytest.mark.parametrize("seed", range(4))
def test_grep_matches_a_line_by_line_grep_across_every_edge(
    store: ArtifactStore, seed: int
) -> None:
    data = _content(seed)
    art = write_artifact(store, data, chunks=[7, 70_001, 1, 5000])
    for pattern in PATTERNS:
        assert _all_matches(store, art, pattern) == _expected(data, pattern), pattern
        assert _all_matches(store, art, pattern, max_matches=3) == _expected(data, pattern)


def test_small_scan_budgets_resume_at_line_starts_and_lose_nothing(store: ArtifactStore) -> None:
    data = _content(11)
    art = write_artifact(store, data)
    got = _all_matches(store, art, "ERROR|^warn", scan_bytes=1)
    assert got == _expected(data, "ERROR|^warn")


def test_a_match_on_a_giant_line_is_shown_as_a_window_around_it(store: ArtifactStore) -> None:
    line = b"a" * 300_000 + b"NEEDLE" + b"b" * 300_000
    art = write_artifact(store, b"head\n" + line + b"\ntail\n")
    res = store.grep(ALICE, art, GrepQuery(pattern="NEEDLE"), max_bytes=4000)
    (m,) = res.matches
    assert m.line.number == 2 and m.line.offset == 5 and m.line.truncated
    start = m.line.window_offset
    assert start is not None and 5 < start <= 5 + 300_000
    assert len(m.line.text) <= 4000 and "NEEDLE" in m.line.text
    lo, hi = m.spans[0]
    assert m.line.text[lo:hi] == "NEEDLE"


def test_context_lines_come_from_either_side_of_a_chunk_edge(store: ArtifactStore) -> None:
    data = b"".join(b"line %06d\n" % i for i in range(30_000))
    art = write_artifact(store, data)
    res = store.grep(ALICE, art, GrepQuery(pattern="^line 02000[05]$", context=2))
    assert [
        (m.line.number, [b.number for b in m.before], [a.number for a in m.after])
        for m in res.matches
    ] == [
        (20001, [19999, 20000], [20002, 20003]),
        (20006, [20004, 20005], [20007, 20008]),
    ]
    assert res.matches[0].before[0].text == "line 019998"


def test_a_pattern_too_costly_to_run_is_refused(store: ArtifactStore) -> None:
    art = write_artifact(store, b"x\n")
    with pytest.raises(InvalidArgument, match="too complex"):
        store.grep(ALICE, art, GrepQuery(pattern="(.*){1000}"))


def test_the_gc_pause_restores_the_collector_and_leaves_nothing_frozen() -> None:
    """The pause ends with a freeze/unfreeze (so the collector does not walk the
    records just built); it must leave the collector as it found it, and never
    undo a freeze that someone else made."""
    import gc

    from overspill.artifacts.gc_pause import cyclic_gc_paused

    assert gc.isenabled() and gc.get_freeze_count() == 0
    with cyclic_gc_paused():
        kept = [{"n": i} for i in range(1000)]
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == 0 and len(kept) == 1000
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()  # a caller's own disable stays
    finally:
        gc.enable()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with cyclic_gc_paused():
            more = [{"n": i} for i in range(1000)]
        # Someone else's freeze stands (an unfreeze would leave 0), and nothing of
        # ours joined it (a freeze would add the 1,000 records). Frozen objects
        # can still be freed meanwhile, so the count may only have dropped.
        assert 0 < gc.get_freeze_count() <= frozen and len(more) == 1000
    finally:
        gc.unfreeze()


@pytest.fixture(scope="module")
def one_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArtifactStore]:
    """The engine's tests need a store, not every backend: SQLite and files."""
    from overspill.artifacts.config import StoreSettings

    home = tmp_path_factory.mktemp("grep")
    s = ArtifactStore.open(StoreSettings(home=str(home), segment_bytes=16, flush_interval_s=30))
    yield s
    s.close()


@pytest.mark.parametrize("context", [0, 1, 2])
def test_grep_agrees_with_gnu_grep_on_awkward_bytes_and_every_page_size(
    one_store: ArtifactStore, context: int
) -> None:
    """Empty lines, a first line that is empty, no final newline, ^$ and a
    page that stops on max_matches inside a match's context, across tiny
    segments: followed page by page, the matches are GNU grep -n's, each once."""
    import subprocess

    store = one_store
    rng = random.Random(context)
    for _ in range(25):
        data = bytes(rng.choice(b"ab\n\n") for _ in range(rng.randrange(1, 60)))
        art = write_artifact(store, data)
        for pattern in ("^$", "a", "^a", "b$", "^ab", "a|b"):
            gnu = subprocess.run(["grep", "-nE", pattern], input=data, capture_output=True).stdout
            want = [int(line.split(b":", 1)[0]) for line in gnu.splitlines()]
            for page in (1, 3, 100):
                got: list[int] = []
                offset = 0
                while True:
                    q = GrepQuery(pattern=pattern, context=context, max_matches=page, offset=offset)
                    res = store.grep(ALICE, art, q)
                    got += [m.line.number for m in res.matches]
                    if res.eof:
                        break
                    offset = res.next_offset
                assert got == want, (data, pattern, page)


def test_grep_rows_of_an_output_of_many_segments_are_gnu_greps_across_segment_edges(
    tmp_path: object,
) -> None:
    """More segments than a read keeps (paged from the database), stored as
    written, and matching lines that span segments: each such row is read again
    by offset, from the page of segments already fetched."""
    import subprocess
    from pathlib import Path

    from overspill.artifacts.config import StoreSettings
    from overspill.artifacts.grep.grep_text import STATUS
    from overspill.artifacts.queries import GrepLinesQuery

    store = ArtifactStore.open(
        StoreSettings(home=str(Path(str(tmp_path))), segment_bytes=1000, compression_level=0)
    )
    try:
        data = b"".join(b"%d %s\n" % (i, b"hit" * (i % 7) or b"miss") for i in range(40_000))
        art = write_artifact(store, data)
        assert store.get(ALICE, art).size_bytes == len(data) > 600 * 1000  # > 600 segments
        _, rows = store.grep_lines(ALICE, art, GrepLinesQuery(pattern="hit"))
        body = b"".join(rows)
        got = body[: body.rindex(STATUS)]
        gnu = subprocess.run(["grep", "-n", "hit"], input=data, capture_output=True).stdout
        assert got == gnu
    finally:
        store.close()


def test_grep_m_shows_trailing_context_that_matches_as_gnu_grep_does(tmp_path: object) -> None:
    import subprocess
    from pathlib import Path

    from tests.helpers import cli_env, run_cli

    data = b"HIT1\nHIT2\nHIT3\nx4\nHIT5\n"
    env = cli_env(OVERSPILL_HOME=Path(str(tmp_path)) / "home")
    put = run_cli(env, "put", "--name", "hits", stdin=data)
    (art,) = re.findall(rb"art_\w{26}", put.stdout + put.stderr)
    for flags in (["-m", "1", "-C", "2"], ["-m", "2", "-C", "1"], ["-m", "1", "-C", "3"]):
        ours = run_cli(env, "grep", art.decode(), "HIT", *flags)
        gnu = subprocess.run(["grep", "-n", *flags, "HIT"], input=data, capture_output=True)
        assert ours.stdout == gnu.stdout, flags


GREP_FLAGS = [
    [],
    ["-c"],
    ["-v"],
    ["-v", "-c"],
    ["-A", "2"],
    ["-B", "3"],
    ["-A", "1", "-B", "2"],
    ["-C", "1", "-m", "3"],
    ["-i"],
    ["-F"],
    ["-m", "2", "-v"],
]


def test_the_cli_takes_greps_options_and_prints_what_gnu_grep_prints(tmp_path: object) -> None:
    import subprocess
    from pathlib import Path

    from tests.helpers import cli_env, run_cli

    data = "".join(
        f"{i:04d} {'ERROR boom' if i % 9 == 0 else 'error low' if i % 13 == 0 else 'ok'}\r\n"
        if i % 17 == 0
        else f"{i:04d} {'ERROR boom' if i % 9 == 0 else 'error low' if i % 13 == 0 else 'ok'}\n"
        for i in range(1, 600)
    ).encode()
    env = cli_env(OVERSPILL_HOME=Path(str(tmp_path)) / "home")
    put = run_cli(env, "put", "--name", "log", stdin=data)
    (art,) = re.findall(rb"art_\w{26}", put.stdout + put.stderr)
    for flags in GREP_FLAGS:
        ours = run_cli(env, "grep", art.decode(), "ERROR", *flags)
        gnu = subprocess.run(["grep", "-n", *flags, "ERROR"], input=data, capture_output=True)
        if "-c" in flags:  # a count is the count, with no line numbers
            gnu = subprocess.run(["grep", *flags, "ERROR"], input=data, capture_output=True)
        assert ours.stdout == gnu.stdout, flags
        assert ours.returncode == gnu.returncode, flags
    none = run_cli(env, "grep", art.decode(), "NOWHERE")
    assert none.returncode == 1 and none.stdout == b""


def test_l_and_big_l_list_ids_and_several_ids_prefix_their_rows(tmp_path: object) -> None:
    from pathlib import Path

    from tests.helpers import cli_env, run_cli

    env = cli_env(OVERSPILL_HOME=Path(str(tmp_path)) / "home")
    ids = []
    for text in (b"a\nERROR 1\n", b"nothing here\n", b"ERROR 2\nERROR 3\n"):
        put = run_cli(env, "put", stdin=text)
        ids.append(re.findall(rb"art_\w{26}", put.stdout + put.stderr)[0].decode())
    with_match = run_cli(env, "grep", *ids, "ERROR", "-l")
    assert with_match.stdout.decode().split() == [ids[0], ids[2]] and with_match.returncode == 0
    without = run_cli(env, "grep", *ids, "ERROR", "-L")
    assert without.stdout.decode().split() == [ids[1]] and without.returncode == 0
    rows = run_cli(env, "grep", *ids, "ERROR")
    assert rows.stdout.decode().splitlines() == [
        f"{ids[0]}:2:ERROR 1",
        f"{ids[2]}:1:ERROR 2",
        f"{ids[2]}:2:ERROR 3",
    ]
    counts = run_cli(env, "grep", *ids, "ERROR", "-c")
    assert counts.stdout.decode().splitlines() == [f"{ids[0]}:1", f"{ids[1]}:0", f"{ids[2]}:2"]
    assert counts.returncode == 0


def _awkward_log(lines: int) -> bytes:
    """Many matching lines among CRLF ends, NULs, bytes that are no UTF-8, a
    100 KB line and no final newline: what the native engine must print as
    the Python scan does."""
    rng = random.Random(11)
    parts = []
    for i in range(lines):
        r = rng.random()
        if r < 0.3:
            parts.append(b"2026 INFO worker-%d ok\n" % i)
        elif r < 0.32:
            parts.append(b"INFO\r\n")
        elif r < 0.33:
            parts.append(b"bin\0ary INFO \xff\xfe\n")
        elif r < 0.3305:
            parts.append(b"x" * 100_000 + b"INFO-x" + b"\n")
        else:
            parts.append(b"debug line %d\n" % i)
    return b"".join(parts) + b"last INFO-x line without newline"


def _rows_and_status(store: ArtifactStore, art: str, **query: object) -> tuple[bytes, bytes]:
    from overspill.artifacts.grep.grep_text import STATUS
    from overspill.artifacts.queries import GrepLinesQuery

    _, rows = store.grep_lines(ALICE, art, GrepLinesQuery(**query))  # type: ignore[arg-type]
    body = b"".join(rows)
    return body[: body.rindex(STATUS)], body[body.rindex(STATUS) :]


@pytest.mark.one_store
def test_the_native_engine_prints_exactly_gnu_greps_rows(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    """ripgrep (the PyPI wheel beside the interpreter) for a plain string with
    many matches: the same rows and status as the Python scan and GNU grep -a
    -n -F, a pattern that starts with a dash included; the engine off
    (OVERSPILL_NATIVE_GREP=0), the Python scan."""
    import subprocess

    from overspill.artifacts.grep import native

    assert native.ripgrep() is not None, "the test extra installs ripgrep"
    data = _awkward_log(200_000)
    assert len(data) > native.MIN_BYTES
    art = write_artifact(store, data)
    started: list[list[str]] = []
    real_popen = subprocess.Popen

    def popen(argv: list[str], **kw: object) -> object:
        started.append(argv)
        return real_popen(argv, **kw)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "Popen", popen)
    for pattern in ("INFO", "-x", "worker-12345 "):
        store.ctx.settings = store.ctx.settings.replace(native_grep=True)
        before = len(started)
        fast = _rows_and_status(store, art, pattern=pattern)
        used = len(started) > before
        store.ctx.settings = store.ctx.settings.replace(native_grep=False)
        slow = _rows_and_status(store, art, pattern=pattern)
        gnu = subprocess.run(
            ["grep", "-a", "-n", "-F", "--", pattern], input=data, capture_output=True
        ).stdout
        assert fast == slow, pattern
        assert fast[0] == gnu, pattern
        # Many matches of INFO in the first MiB: ripgrep; the others are rare.
        assert used == (pattern == "INFO"), pattern
    assert started and started[0][0].endswith("rg")


@pytest.mark.one_store
def test_the_native_engine_stopped_by_its_time_budget_resumes_after_its_last_row(
    store: ArtifactStore,
) -> None:
    """Past the budget ripgrep is stopped; the status resumes at the line after
    the last whole row, and the rest from there completes GNU grep's rows."""
    import json
    import subprocess

    from overspill.artifacts.grep import grep_text
    from overspill.artifacts.queries import GrepLinesQuery

    data = _awkward_log(300_000)
    art = write_artifact(store, data)
    _, content = store.reader._readable(ALICE, art)
    body = b"".join(grep_text.grep_lines(content, GrepLinesQuery(pattern="INFO"), time_budget_s=0))
    cut = body.rindex(grep_text.STATUS)
    status = json.loads(body[cut + 1 :])
    assert status["stopped"] == "time_budget" and not status["eof"]
    first = body[:cut]
    assert status["matches"] == first.count(b"\n") > 0
    rest = b"".join(
        grep_text.grep_lines(content, GrepLinesQuery(pattern="INFO", offset=status["next_offset"]))
    )
    gnu = subprocess.run(["grep", "-a", "-n", "-F", "INFO"], input=data, capture_output=True)
    assert first + rest[: rest.rindex(grep_text.STATUS)] == gnu.stdout
