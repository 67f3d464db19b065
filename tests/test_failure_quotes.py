"""Failure-like lines of the part a model is not shown: counted exactly whatever
the chunking, quoted within the view's budget with their numbers, and listed in
full by the printed ``artifact_grep`` call, followed here as a model would.
The rendered texts are pinned whole."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from overspill.api.agent.tools import ArtifactTools
from overspill.api.client.in_process import InProcessClient
from overspill.api.results import PreviewBuffer
from overspill.artifacts.errors import ConfigurationError
from overspill.artifacts.store import ArtifactStore
from overspill.shell import ExecRequest, Executor, ShellSettings, StoreSink, failures
from overspill.shell.failures import FailureScan, default_matcher
from overspill.shell.wording import find_calls
from tests.helpers import ALICE
from tests.test_render_golden import normalise

pytestmark = pytest.mark.one_store

MATCHER = default_matcher()


def reference(data: bytes) -> list[int]:
    """Numbers of the lines the patterns match, one line at a time."""
    return [n for n, line in enumerate(data.split(b"\n"), 1) if MATCHER.regex.search(line)]


def scan_in_chunks(data: bytes, sizes: list[int]) -> FailureScan:
    scan = FailureScan(MATCHER)
    pos, i = 0, 0
    while pos < len(data):
        size = sizes[i % len(sizes)]
        scan.feed(data[pos : pos + size])
        pos, i = pos + size, i + 1
    scan.finish()
    return scan


def _log(rng: random.Random, lines: int) -> bytes:
    words = [
        b"ok",
        b"error:",
        b"Werror",
        b"-Werror",
        b"stderr",
        b"FAILED",
        b"TypeError",
        b"x" * 300,
    ]
    out = []
    for _ in range(lines):
        out.append(b" ".join(rng.choice(words) for _ in range(rng.randint(0, 4))))
    return b"\n".join(out) + (b"\n" if rng.random() < 0.5 else b"")


@pytest.mark.parametrize("seed", range(6))
def test_the_count_and_the_line_numbers_do_not_depend_on_the_chunking(seed: int) -> None:
    rng = random.Random(seed)
    data = _log(rng, 800)
    want = reference(data)
    for sizes in ([1, 2, 3], [7], [4096], [len(data)], [rng.randint(1, 900) for _ in range(50)]):
        scan = scan_in_chunks(data, sizes)
        assert scan.count == len(want)
        assert [h.line for h in scan.hits] == want[: failures.KEEP]
        for hit in scan.hits:  # each hit's start is its line's start
            assert hit.start == 0 or data[hit.start - 1 : hit.start] == b"\n"


def test_a_line_longer_than_the_open_line_bound_counts_once() -> None:
    long_line = b"x" * 200_000 + b" [ERROR] disk full " + b"y" * 200_000 + b" [ERROR] again\n"
    data = b"ok\n" + long_line + b"panic: x\n"
    scan = scan_in_chunks(data, [65_536])
    assert scan.count == 2
    assert [(h.line, h.start) for h in scan.hits] == [(2, 3), (3, len(data) - 9)]
    first = scan.hits[0].text
    assert "[ERROR] disk full" in first and first.startswith("…") and first.endswith("…")
    assert len(first.encode()) <= failures.EXCERPT + 6


def test_words_that_only_contain_a_failure_word_are_not_failures() -> None:
    data = b"gcc -Werror -c a.c\nwriting to stderr\nerrorless\nTypeError: x\nFAILED t::a\n"
    assert reference(data) == [4, 5]
    assert scan_in_chunks(data, [5]).count == 2


def test_the_count_stops_at_its_bound_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failures, "MAX_COUNTED", 50)
    scan = scan_in_chunks(b"error: x\n" * 500, [1000])
    assert scan.capped and scan.count == 50


def test_a_bad_pattern_is_refused_at_load_naming_the_setting() -> None:
    with pytest.raises(ConfigurationError) as info:
        Executor(ShellSettings(failure_patterns="error\n(unclosed"))
    assert "OVERSPILL_FAILURE_PATTERNS" in str(info.value)


# -- what the model sees --------------------------------------------------------------------

BUILD = (
    "echo 'src/a.c:12:5: error: unknown type name foo'; seq 1 800; "
    "echo 'FAILED tests/test_x.py::test_y - AssertionError'; seq 801 1500; "
    "echo 'Traceback (most recent call last):'; seq 1501 3000"
)


def run(store: ArtifactStore, command: str, **settings: Any) -> str:
    values: dict[str, Any] = {"max_output_bytes": 2_000, "grace_ms": 300, **settings}
    ex = Executor(ShellSettings(**values), StoreSink(store, ALICE))
    return ex.run(ExecRequest(command=command)).text


GOLDEN_BUILD = (
    "[failure-like lines in the part not shown (bytes 0-12389): 3, quoted below; every such "
    'line: artifact_grep {"id": "art_ID1", "failures": true}]\n'
    "line 1: src/a.c:12:5: error: unknown type name foo\n"
    "line 802: FAILED tests/test_x.py::test_y - AssertionError\n"
    "line 1503: Traceback (most recent call last):\n"
    "[end of the quoted lines; the output goes on]\n"
)


def test_failures_of_the_part_not_shown_are_quoted_before_the_tail(store: ArtifactStore) -> None:
    text = normalise(run(store, BUILD, legacy_spill=False))
    body, _, marker = text.rpartition("\n")
    assert body.startswith(GOLDEN_BUILD)
    tail = body[len(GOLDEN_BUILD) :]
    assert tail.startswith("2675\n") and tail.endswith("2999\n3000\n")
    assert marker == (
        "[output truncated; full output: artifact art_ID1; shown lines 2678-3003 of 3003 (bytes "
        "12389-14019 of 14019); not shown: lines 1-2677, bytes 0-12389; quoted before them: "
        "failure-like lines 1, 802, 1503 of the part not shown; read more: artifact_read "
        '{"id": "art_ID1", "offset": 0, "limit": 12389} (the bytes just before these), or '
        'search: artifact_grep {"id": "art_ID1", "pattern": "<regex>"}]'
    )
    assert len(body.encode()) <= 2_000  # the quotes come out of the view's budget


def test_the_printed_grep_lists_every_failure_line_as_counted(store: ArtifactStore) -> None:
    command = BUILD + '; for i in $(seq 1 40); do echo "panic: at $i"; done; seq 1 2000'
    text = run(store, command, legacy_spill=False, max_output_bytes=8_000)
    grep_calls = [c for c in find_calls(text) if c[0] == "artifact_grep" and "<" not in str(c[1])]
    name, args = grep_calls[0]
    tools = ArtifactTools(InProcessClient(store, ALICE))
    found: list[int] = []
    for _ in range(100):
        answer = tools.handle(name, args)
        assert not answer.is_error, answer.text
        rows, _, footer = str(answer.text).rpartition("\n")
        found += [int(m.group(1)) for m in re.finditer(r"^(\d+):", rows, re.M)]
        more = find_calls(footer)
        if not more:
            break
        name, args = more[0]
    head = re.search(r"in the part not shown \(bytes 0-\d+\): (\d+), the first 5 quoted", text)
    assert head, text[:600]
    assert len(found) == 43
    assert int(head.group(1)) == 43  # all of them lie before the shown tail
    quoted = [int(n) for n in re.findall(r"^line (\d+): ", text, re.M)]
    assert quoted == found[:5]


def test_a_stream_whose_failures_are_all_shown_quotes_nothing(store: ArtifactStore) -> None:
    text = run(store, "seq 1 3000; echo 'error: at the end'")
    assert "failure-like" not in text


def test_quotes_are_off_when_the_setting_is_empty(store: ArtifactStore) -> None:
    text = run(store, BUILD, failure_patterns="")
    assert "failure-like" not in text and text.splitlines()[0] != GOLDEN_BUILD.splitlines()[0]


def test_a_setting_of_ones_own_patterns_is_what_is_counted(store: ArtifactStore) -> None:
    text = normalise(run(store, BUILD, failure_patterns="^8\\d\\d$", legacy_spill=False))
    assert text.startswith(
        "[failure-like lines in the part not shown (bytes 0-12329): 100, the first 5 quoted "
        'below; every such line: artifact_grep {"id": "art_ID1", "pattern": "(?:^8\\\\d\\\\d$)"}]\n'
        "line 801: 800\nline 803: 801\n"
    )


def test_a_window_too_small_for_the_quotes_shows_none(store: ArtifactStore) -> None:
    assert "failure-like" not in run(store, BUILD, max_output_bytes=400)


# -- saved results -----------------------------------------------------------------------------


def test_a_saved_results_preview_quotes_the_failures_of_its_omitted_middle() -> None:
    content = (
        b"".join(b"row %d\n" % i for i in range(1, 2000))
        + b"fatal: lost the connection\n"
        + b"".join(b"row %d\n" % i for i in range(2000, 4000))
    )
    buf = PreviewBuffer(4_000)
    buf.feed(content)
    text, _ = buf.preview(lambda omitted, at: f"(Omitted {omitted} bytes at {at}.)", 4_000, "art_X")
    head, _, rest = text.partition("(Omitted")
    assert head.endswith("\n") and "fatal" not in head
    quotes, _, tail = rest.partition("[end of the quoted lines; the output goes on]\n")
    assert quotes.split("\n", 1)[1] == (
        "[failure-like lines in the omitted part (bytes 1396-33516): 1, quoted below; every "
        'such line: artifact_grep {"id": "art_X", "failures": true}]\n'
        "line 2000: fatal: lost the connection\n"
    )
    assert tail.endswith("row 3999\n") and len(text.encode()) <= 4_000


@pytest.mark.parametrize("engine", ["hyperscan", "stringzilla"])
def test_the_literal_prefilter_finds_what_re2_ignoring_case_finds(engine: str) -> None:
    """The literal check that lets a chunk skip the scan answers yes wherever
    RE2's (?i) would find a literal: any case, the Kelvin sign for k and the
    long s for s (the only non-ASCII folds of a-z); no otherwise."""
    import re2

    from overspill.shell.failure_literals import HyperscanFinder, StringZillaFinder

    if engine == "hyperscan":
        pytest.importorskip("hyperscan")
    literals = ("rror", "traceback", "class")
    finder = (HyperscanFinder if engine == "hyperscan" else StringZillaFinder)(literals)
    regex = re2.compile("(?i)" + "|".join(literals))
    cases = [
        "ERROR: x",
        "TraceBac\u212a (most recent call last)",
        "\u017fubclass",
        "cla\u017fs",
        "fatal",
        "err or",
        "tracebac",
        "",
        "\u212a" * 10,
        bytes(65536).decode(),
        "x" * 70000 + "Error",
    ]
    for text in cases:
        want = regex.search(text) is not None
        assert finder.found(text.encode()) == want, text[:40]
        assert finder.found(memoryview(text.encode())) == want


# -- what is quoted, on real outputs marked by hand ------------------------------------------


def _bench() -> Any:
    """The bench module, loaded without leaving ``bench/`` on ``sys.path`` (where
    ``bench/api.py`` would shadow the bare name ``api`` for later tests)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "failure_quotes.py"
    spec = importlib.util.spec_from_file_location("failure_quotes_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = list(sys.path)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    return module


def test_the_default_patterns_quote_the_lines_people_marked_and_no_file_names() -> None:
    """tests/failure_corpus: compilers, test runners, package managers, find,
    ls -R, git; precision at least 0.95 and recall no lower than the earlier
    patterns' (which quoted ``cffi/error.py`` and ``libgpg-error.so``)."""
    bench = _bench()
    now = bench.measure(bench.DEFAULT_FAILURE_PATTERNS)
    earlier = bench.measure(bench.EARLIER)
    assert now["precision"] >= 0.95 and now["recall"] >= earlier["recall"], (now, earlier)
    for name in ("compileall.txt", "find-so.txt", "ls-R.txt", "git-log-p.txt", "make-clean.txt"):
        assert now["files"][name][1] == 0, name  # nothing quoted where nothing failed
    assert earlier["files"]["compileall.txt"][1] > 0  # (the corpus holds the old mistakes)
