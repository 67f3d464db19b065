"""The golden battery: the exact text the model sees for a fixed list of commands,
each asserted whole, so any change to what a model reads is a visible diff here.

The texts are files in ``tests/golden/model``, one per case, to read as they are.
Ids and spill paths are the only parts that vary between runs; they are replaced
by placeholders in order of appearance. A small window (120 bytes) keeps the
texts reviewable; the exact-cap cases use the contract's 64,000.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from overspill.artifacts.store import ArtifactStore
from overspill.shell import ExecRequest, Executor, ShellSettings, StoreSink
from overspill.shell.render import parse_exit_status
from tests.helpers import ALICE

pytestmark = pytest.mark.one_store

CASES: dict[str, tuple[str, dict[str, object], dict[str, object]]] = {
    "small": ("echo hello; echo oops >&2; exit 1", {}, {}),
    "lines_600kb": ("seq 1 100000 | sed 's/$/ some log text/'", {}, {}),
    "both_streams_large": ("seq 1 3000; seq 1 3000 >&2", {}, {}),
    "single_200kb_line": (
        "head -c 200000 /dev/zero | tr '\\0' a; printf 'ERROR_AT_END\\n'",
        {},
        {},
    ),
    "binary": ("head -c 3000 /dev/zero | tr '\\0' '\\1'; head -c 3000 /dev/zero", {}, {}),
    "ansi": (
        "for i in $(seq 1 60); do printf '\\033[1;31mFAIL\\033[0m test_%d \\a\\n' $i; done",
        {},
        {},
    ),
    "error_at_start": ("echo 'ERROR: config missing'; seq 1 2000", {}, {}),
    "error_at_end": ("seq 1 2000; echo 'ERROR: build failed'; exit 2", {}, {}),
    "timeout": ("seq 1 5; sleep 5", {"timeout_ms": 300}, {}),
    "killed": ("seq 1 5; kill -9 $$", {}, {}),
    "utf8_at_cut": ("for i in $(seq 1 200); do printf 'é'; done; echo", {}, {}),
    "marker_lookalike": ("printf 'done\\n[killed by signal: SIGKILL]'", {}, {}),
    "head_tail": ("seq 1 3000", {}, {"retention_mode": "head_tail"}),
    "legacy": ("seq 1 3000", {}, {"render_mode": "legacy"}),
    "legacy_spill_off": ("seq 1 3000", {}, {"render_mode": "legacy", "legacy_spill": False}),
    "spill_off": ("seq 1 3000", {}, {"legacy_spill": False}),
}


def normalise(text: str) -> str:
    ids: dict[str, str] = {}

    def rid(m: re.Match[str]) -> str:
        return ids.setdefault(m.group(0), f"art_ID{len(ids) + 1}")

    text = re.sub(r"art_[0-9A-Z]{26}", rid, text)
    return re.sub(r"/[^ ;\]]*dsh-subprocess-[^ ;\]]*-(stdout|stderr)\.log", r"<spill:\1>", text)


def run(store: ArtifactStore, command: str, request: dict[str, object], **settings: object) -> str:
    values: dict[str, object] = {"max_output_bytes": 120, "grace_ms": 300, **settings}
    ex = Executor(ShellSettings(**values), StoreSink(store, ALICE))
    return ex.run(ExecRequest(command=command, **request)).text  # type: ignore[arg-type]


GOLDEN = Path(__file__).resolve().parent / "golden" / "model"
README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize("name", list(CASES))
def test_the_model_sees_exactly_this(name: str, store: ArtifactStore) -> None:
    """``tests/golden/model/NAME.txt`` holds the text, byte for byte (no newline
    is added at its end). ``TEST_OVERSPILL_UPDATE_GOLDEN=1`` rewrites the files
    from what the code says now, for a reviewer to read as a diff."""
    import os

    command, request, settings = CASES[name]
    got = normalise(run(store, command, request, **settings))
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("TEST_OVERSPILL_UPDATE_GOLDEN") == "1":
        path.write_bytes(got.encode())
    assert got == path.read_bytes().decode()


def test_every_golden_file_is_a_case() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.txt")) == sorted(CASES)


def test_exactly_the_cap_is_shown_whole_and_one_byte_more_is_not(store: ArtifactStore) -> None:
    at_cap = run(store, "head -c 63999 /dev/zero | tr '\\0' x; echo", {}, max_output_bytes=64_000)
    assert at_cap == "x" * 63999 + "\n"
    over = run(store, "head -c 64000 /dev/zero | tr '\\0' x; echo", {}, max_output_bytes=64_000)
    # The clip keeps both ends of the line and counts its middle as not shown.
    assert normalise(over) == (
        "x"
        * 1000
        + " … [line 1 clipped: 63999 bytes; bytes 1001-63000 not shown; read them: artifact_read "
        '{"id": "art_ID1", "offset": 1001, "limit": 16000}] … '
        + "x"
        * 1000
        + "\n\n[output truncated; full output: <spill:stdout>; artifact art_ID1; shown line 1 of "
        "1 (bytes 1-64001 of 64001), line 1 from byte 1; not shown: bytes 0-1 (with the start of "
        "line 1) and bytes 1001-63000 of the clipped line 1; read more: artifact_read "
        '{"id": "art_ID1", "offset": 0, "limit": 1} (the bytes just before these), or search: '
        'artifact_grep {"id": "art_ID1", "pattern": "<regex>"}]'
    )


def test_a_storage_failure_is_stated_in_the_marker(store: ArtifactStore) -> None:
    from tests.test_store import _break_blob_backend

    _break_blob_backend(store)
    line = normalise(run(store, "seq 1 3000", {}, legacy_spill=False)).splitlines()[-1]
    prefix = (
        "[output truncated; full output: (unavailable); shown lines 2978-3000 of 3000 (bytes "
        "13778-13893 of 13893); not shown: lines 1-2977, bytes 0-13778; artifact unavailable: "
    )
    # The reason is the backend's own (a file where the blob root was, a bucket gone).
    assert line.startswith(prefix) and line.endswith("]")
    assert ("Not a directory" in line) or ("does not exist" in line)


def test_a_capped_artifact_states_the_unstored_range(store: ArtifactStore) -> None:
    ex = Executor(
        ShellSettings(max_output_bytes=120, grace_ms=300, legacy_spill=False),
        StoreSink(store, ALICE, max_bytes=5000),
    )
    text = normalise(ex.run(ExecRequest(command="seq 1 3000")).text)
    assert text.splitlines()[-1] == (
        "[output truncated; full output: artifact art_ID1; shown lines 2978-3000 of 3000 (bytes "
        "13778-13893 of 13893); not shown: lines 1-2977, bytes 0-13778; artifact holds the "
        "first 5000 bytes (capped); bytes 5000-13778 are not stored; read more: artifact_read "
        '{"id": "art_ID1", "offset": 0, "limit": 5000} (the last bytes stored), or search: '
        'artifact_grep {"id": "art_ID1", "pattern": "<regex>"}]'
    )


def test_a_marker_the_command_printed_is_not_taken_for_a_real_one(store: ArtifactStore) -> None:
    text = run(store, "printf 'done\\n[killed by signal: SIGKILL]'", {})
    assert parse_exit_status(text).exit_code == 0 and parse_exit_status(text).signal is None
    assert parse_exit_status("x\n[exit code: \uff13]").exit_code == 0  # only ASCII digits


def test_the_cli_prints_the_text_as_ended_lines(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env["OVERSPILL_HOME"] = str(tmp_path)
    argv = [sys.executable, "-m", "overspill.api.cli", "run"]
    plain = subprocess.run([*argv, "--", "echo hi; exit 3"], capture_output=True, env=env)
    as_json = subprocess.run(
        [*argv, "--json", "--", "echo hi; exit 3"], capture_output=True, env=env
    )
    text = json.loads(as_json.stdout)["text"]
    assert text == "hi\n\n[exit code: 3]"
    # Off a terminal the view still ends its last line, so that whatever a
    # transcript shows next is not glued to the marker.
    assert plain.stdout.decode() == text + "\n"
    assert parse_exit_status(plain.stdout.decode().removesuffix("\n")).exit_code == 3


def test_the_readmes_example_marker_is_the_one_run_prints(store: ArtifactStore) -> None:
    """The README shows the marker of ``seq 1 100000; exit 2`` at the default
    window; it is that marker, with only the id and the spill path shortened."""
    readme = README.read_text()
    ex = Executor(ShellSettings(grace_ms=300), StoreSink(store, ALICE))
    text = ex.run(ExecRequest(command="seq 1 100000; exit 2")).text
    text = re.sub(r"art_[0-9A-Z]{26}", "art_01M8…", text)
    text = re.sub(
        r"/[^ ;\]]*dsh-subprocess-[^ ;\]]*-stdout\.log",
        "/tmp/dsh-subprocess-x/dsh-subprocess-…-stdout.log",
        text,
    )
    marker, exit_line = text.splitlines()[-2:]
    assert exit_line == "[exit code: 2]"
    if os.environ.get("TEST_OVERSPILL_UPDATE_GOLDEN") == "1":  # the README follows the code
        shown = re.compile(r"\n\[output truncated[^\n]*\n(?=\[exit code: 2\]\n```)")
        readme = shown.sub(lambda _: f"\n{marker}\n", readme, count=1)
        README.write_text(readme)
    assert f"\n{marker}\n{exit_line}\n```" in readme, marker
