"""Executor rules that need no subprocess: spec resolution, capture windows, spill
files, rendering and parse_exit_status."""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overspill.artifacts.errors import ConfigurationError
from overspill.shell import spill as spill_mod
from overspill.shell.capture import OutputCollector
from overspill.shell.config import ShellSettings
from overspill.shell.environment import child_environment
from overspill.shell.render import parse_exit_status, render_result, stream_text
from overspill.shell.results import ArtifactRef, CollectedOutput, StreamView
from overspill.shell.spec import ExecRequest, InvalidRequest, resolve
from overspill.shell.spill import SpillFile, sweep_old_spill_files
from overspill.shell.view import stream_view
from overspill.shell.wording import truncation_line

# -- defaults, caps, validation ---------------------------------------------------------


def test_defaults_match_the_contract() -> None:
    s = ShellSettings()
    assert (s.timeout_ms, s.max_timeout_ms, s.max_output_bytes) == (120_000, 600_000, 64_000)
    assert (s.max_spill_bytes, s.grace_ms, s.legacy_spill) == (67_108_864, 3_000, True)
    spec = resolve(ExecRequest(command="true"), s, background=False)
    assert spec.timeout_ms == 120_000 and spec.cwd == os.getcwd()
    assert spec.stdout_window == spec.stderr_window == 64_000


def test_a_per_call_timeout_is_capped_at_the_max() -> None:
    spec = resolve(ExecRequest(command="true", timeout_ms=10**9), ShellSettings(), background=False)
    assert spec.timeout_ms == 600_000


@pytest.mark.parametrize("bad", [0, -5, float("inf"), float("nan")])
def test_non_positive_or_non_finite_timeouts_are_rejected(bad: float) -> None:
    with pytest.raises(InvalidRequest, match="timeout_ms: must be a positive finite number"):
        resolve(ExecRequest(command="true", timeout_ms=bad), ShellSettings(), background=False)


def test_only_a_foreground_call_may_raise_stdouts_window() -> None:
    s = ShellSettings()
    fg = resolve(ExecRequest(command="x", max_output_bytes=200_000), s, background=False)
    assert (fg.stdout_window, fg.stderr_window) == (200_000, 64_000)
    bg = resolve(ExecRequest(command="x", max_output_bytes=200_000), s, background=True)
    assert (bg.stdout_window, bg.stderr_window, bg.timeout_ms) == (64_000, 64_000, None)
    with pytest.raises(InvalidRequest, match="max_output_bytes"):
        resolve(ExecRequest(command="x", max_output_bytes=0), s, background=False)


def test_an_empty_command_is_rejected() -> None:
    with pytest.raises(InvalidRequest, match="command"):
        resolve(ExecRequest(command="  "), ShellSettings(), background=False)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TIMEOUT_MS", "0"),
        ("MAX_OUTPUT_BYTES", "-1"),
        ("GRACE_MS", "inf"),
        ("MAX_SPILL_BYTES", "x"),
    ],
)
def test_bad_configuration_is_rejected_at_load_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(f"OVERSPILL_{name}", value)
    with pytest.raises(ConfigurationError, match=f"OVERSPILL_{name}"):
        ShellSettings.load()


def test_child_environment_drops_credentials_and_reserved_names() -> None:
    parent = {
        "PATH": "/bin",
        "AWS_SECRET_ACCESS_KEY": "s",
        "github_token": "t",
        "DB_PASSWORD": "p",
        "MY_API_KEY": "k",
        "KEYRING": "x",
        "OVERSPILL_TOKEN": "o",
        "TERM": "xterm",
        "HOME": "/h",
    }
    env = child_environment(parent, {"DEPLOY_TOKEN": "on-purpose", "NO_COLOR": "0"}, "OVERSPILL_")
    assert env == {
        "PATH": "/bin",
        "HOME": "/h",
        "DEPLOY_TOKEN": "on-purpose",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
    }


# -- capture windows --------------------------------------------------------------------


@given(
    data=st.binary(max_size=5000),
    sizes=st.lists(st.integers(1, 700), max_size=40),
    window=st.integers(1, 600),
)
def test_memory_holds_exactly_the_last_window_bytes_for_any_chunking(
    data: bytes, sizes: list[int], window: int
) -> None:
    c = OutputCollector("stdout", window)
    pos = 0
    for n in [*sizes, len(data)]:
        c.feed(data[pos : pos + n])
        pos += n
    assert c.read_from(max(0, len(data) - window)).data == data[-window:] if data else True
    assert c.total_bytes == len(data)
    assert c.truncated == (len(data) > window)


def test_output_exactly_at_the_cap_is_not_truncated() -> None:
    opened: list[int] = []
    c = OutputCollector("stdout", 10, open_sink=lambda: opened.append(1))  # type: ignore[arg-type,return-value]
    c.feed(b"12345")
    c.feed(b"67890")
    assert not c.truncated and opened == []
    assert c.shown_text() == "1234567890"


class _ListSink:
    def __init__(self) -> None:
        self.data = bytearray()

    @property
    def artifact_id(self) -> str:
        return "art_TEST"

    def write(self, data: bytes | memoryview, newlines: int | None = None) -> None:
        self.data += data

    def progress(self) -> int:
        return len(self.data)

    def known_id(self) -> str:
        return "art_TEST"

    def would_wait(self, n: int) -> bool:
        return False

    def close(
        self, source_update: dict[str, Any], total_bytes: int | None = None
    ) -> tuple[ArtifactRef | None, str | None]:
        return ArtifactRef(
            id="art_TEST",
            state="complete",
            size_bytes=len(self.data),
            total_bytes=len(self.data),
            sha256=None,
        ), None


def test_the_first_overflow_sends_the_stream_from_byte_zero() -> None:
    sink = _ListSink()
    c = OutputCollector("stdout", 8, open_sink=lambda: sink)
    for chunk in (b"abc", b"defgh", b"i", b"jklmnopqrstuvwxyz"):
        c.feed(chunk)
    assert bytes(sink.data) == b"abcdefghijklmnopqrstuvwxyz"
    assert c.shown_text() == "stuvwxyz"


def test_the_tail_is_cut_on_a_utf8_boundary() -> None:
    c = OutputCollector("stdout", 5)
    c.feed("a€€".encode())  # 7 bytes; the last 5 start inside the first €
    assert c.shown_text() == "€"


def test_head_tail_mode_keeps_the_start_and_the_end() -> None:
    c = OutputCollector("stdout", 10, mode="head_tail")
    c.feed(b"HEAD-" + b"x" * 100 + b"-TAIL")
    assert c.shown_text() == "HEAD-\n[... 100 bytes omitted ...]\n-TAIL"


def test_reading_past_the_tail_window_is_lossy_and_offsets_are_whole_stream() -> None:
    c = OutputCollector("stdout", 4)
    c.feed(b"0123456789")
    d = c.read_from(2)
    assert (d.data, d.lossy, d.missing, d.next_offset) == (b"6789", True, (2, 6), 10)
    d2 = c.read_from(8)
    assert (d2.data, d2.lossy, d2.next_offset) == (b"89", False, 10)
    assert c.read_from(10).data == b""


# -- legacy spill files -----------------------------------------------------------------


def test_spill_files_are_private_and_named_as_before() -> None:
    f = SpillFile("stdout", 1000)
    f.write(b"data")
    path = f.close()
    assert path is not None
    p = Path(path)
    assert re.fullmatch(rf"dsh-subprocess-{os.getpid()}-\d+-[0-9a-f]{{12}}-stdout\.log", p.name)
    assert p.parent.name.startswith("dsh-subprocess-")
    assert stat.S_IMODE(p.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert p.read_bytes() == b"data"
    p.unlink()


def test_a_spill_file_past_the_cap_is_deleted_and_never_reported() -> None:
    f = SpillFile("stderr", 10)
    f.write(b"12345678")
    path = f.path
    assert path and os.path.exists(path)
    f.write(b"too much")
    assert not os.path.exists(path)
    assert f.close() is None and "cap" in (f.error or "")


def test_a_failed_close_is_not_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    f = SpillFile("stdout", 100)
    f.write(b"x")

    def failing_close(fd: int) -> None:
        os.close(fd)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(spill_mod, "close_fd", failing_close)
    assert f.close() is None and "close failed" in (f.error or "")


def test_spill_creation_never_follows_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "victim"
    d = Path(spill_mod.SpillDirectory.path())
    name = spill_mod.SpillDirectory.next_name("stdout")
    os.symlink(target, d / name)
    # Force the same name: the exclusive create must refuse the planted link.
    orig = spill_mod.SpillDirectory.next_name
    try:
        spill_mod.SpillDirectory.next_name = classmethod(lambda cls, stream: name)  # type: ignore[method-assign,assignment]
        f = SpillFile("stdout", 100)
    finally:
        spill_mod.SpillDirectory.next_name = orig  # type: ignore[method-assign]
    assert f.path is None and f.error and not target.exists()
    os.unlink(d / name)


def test_the_sweep_deletes_only_old_files_of_ours_in_private_dirs(tmp_path: Path) -> None:
    # A file's age is from the newer of its mtime and ctime, and no one can set a
    # ctime back: so the sweep runs 40 days from now, and the files meant to be
    # new carry an mtime of then.
    later = time.time() + 40 * 86400

    def name(n: int) -> str:
        return f"dsh-subprocess-{4000 + n}-{n}-{n:012x}-stdout.log"

    good = tmp_path / "dsh-subprocess-good"
    good.mkdir(mode=0o700)
    (good / name(1)).write_bytes(b"x")
    (good / name(2)).write_bytes(b"y")
    (good / "notes.txt").write_bytes(b"not named as a spill file: never touched")
    (good / name(3)).write_bytes(b"someone else's")
    os.symlink("/etc/passwd", good / name(4))
    os.utime(good / name(2), (later, later))  # written "then": not old
    if os.geteuid() == 0:
        os.chown(good / name(3), 65534, 65534)
    shared = tmp_path / "dsh-subprocess-shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / name(5)).write_bytes(b"z")
    linked = tmp_path / "dsh-subprocess-linked"
    os.symlink(good, linked)
    assert sweep_old_spill_files(30, str(tmp_path), now=later) == (1 if os.geteuid() == 0 else 2)
    assert not (good / name(1)).exists()
    assert (good / name(2)).exists() and os.path.islink(good / name(4))
    assert (good / "notes.txt").exists() and (shared / name(5)).exists()
    if os.geteuid() == 0:
        assert (good / name(3)).exists()  # owned by another user
    assert sweep_old_spill_files(0, str(tmp_path)) == 0
    assert sweep_old_spill_files(30, str(tmp_path / "missing")) == 0


def test_a_spill_file_with_a_back_dated_mtime_or_held_open_is_not_old(tmp_path: Path) -> None:
    """``touch -d``, ``cp -p`` or an unpacked archive set an mtime back, never a
    ctime: a file made today is not swept as a month old; and a file a process
    still holds open is never swept, however old."""
    from tests.helpers import held_open

    own = tmp_path / "dsh-subprocess-own"
    own.mkdir(mode=0o700)
    made_today = own / "dsh-subprocess-4001-1-00000000000a-stdout.log"
    made_today.write_bytes(b"today")
    month_ago = time.time() - 40 * 86400
    os.utime(made_today, (month_ago, month_ago))
    assert sweep_old_spill_files(30, str(tmp_path)) == 0 and made_today.exists()
    held = own / "dsh-subprocess-4002-2-00000000000b-stdout.log"
    held.write_bytes(b"still written")
    with held_open(held):
        later = time.time() + 40 * 86400
        assert sweep_old_spill_files(30, str(tmp_path), now=later) == 1  # made_today only
        assert held.exists() and not made_today.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="making another user's directory needs root")
def test_another_users_spill_directory_on_a_shared_temp_dir_is_passed_over_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    theirs = tmp_path / "dsh-subprocess-theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)
    with caplog.at_level("DEBUG"):
        assert sweep_old_spill_files(30, str(tmp_path)) == 0
    assert theirs.exists()
    assert not [r for r in caplog.records if r.levelno >= 30], caplog.text


def test_the_spill_name_pattern_matches_the_names_the_executor_makes() -> None:
    from overspill.shell.spill import SPILL_NAME, SpillDirectory

    for stream in ("stdout", "stderr"):
        assert SPILL_NAME.match(SpillDirectory.next_name(stream))


# -- rendering --------------------------------------------------------------------------


def _out(text: str, total: int, **kw: object) -> CollectedOutput:
    return CollectedOutput(text=text, truncated=total > len(text), total_bytes=total, **kw)  # type: ignore[arg-type]


def _view(tail: bytes, total: int, newlines: int, art: str | None = None) -> StreamView:
    return stream_view(b"", tail, total, newlines, truncated=True, artifact_id=art)


def test_legacy_truncation_line_is_exact() -> None:
    out = _out("tail", 100, spill_path="/tmp/d/f.log")
    assert stream_text(out, None, "legacy") == "tail\n[output truncated; full output: /tmp/d/f.log]"
    assert (
        truncation_line(_out("t", 9), None, "legacy")
        == "[output truncated; full output: (unavailable)]"
    )


def test_legacy_mode_names_a_stored_artifact_where_it_had_no_spill_file() -> None:
    ref = ArtifactRef(id="art_X", state="complete", size_bytes=100, total_bytes=100, sha256="s")
    line = truncation_line(_out("t", 100, artifact=ref), None, "legacy")
    assert line == "[output truncated; full output: artifact://art_X]"


def test_artifact_truncation_line_names_id_lines_bytes_and_keeps_the_spill_path() -> None:
    ref = ArtifactRef(id="art_X", state="complete", size_bytes=100, total_bytes=100, sha256="s")
    view = _view(b"9\n10\n", 100, 10, "art_X")
    line = truncation_line(
        _out("9\n10\n", 100, spill_path="/tmp/d/f.log", artifact=ref), view, "artifact"
    )
    assert line == (
        "[output truncated; full output: /tmp/d/f.log; artifact art_X; shown line 10 of 10 "
        "(bytes 97-100 of 100); not shown: lines 1-9, bytes 0-97; read more: artifact_read "
        '{"id": "art_X", "offset": 0, "limit": 97} (the bytes just before these), or search: '
        'artifact_grep {"id": "art_X", "pattern": "<regex>"}]'
    )
    no_spill = truncation_line(_out("tail", 100, artifact=ref), view, "artifact")
    assert no_spill.startswith("[output truncated; full output: artifact art_X;")


def test_storage_errors_say_the_full_output_is_unavailable_and_why() -> None:
    line = truncation_line(
        _out("t", 50, storage_error="quota exceeded for agent:x"), _view(b"t", 50, 0), "artifact"
    )
    assert line == (
        "[output truncated; full output: (unavailable); shown line 1 of 1 (bytes 49-50 of 50), "
        "line 1 from byte 49; not shown: bytes 0-49 (with the start of line 1); artifact "
        "unavailable: quota exceeded for agent:x]"
    )


def test_result_rendering_matches_the_contract() -> None:
    def r(out: str, err: str, **kw: object) -> str:
        args: dict[str, object] = {
            "exit_code": 0,
            "signal": None,
            "timed_out": False,
            "timeout_ms": 1000,
            **kw,
        }
        return render_result(out, err, **args)  # type: ignore[arg-type]

    assert r("", "") == "(no output)"
    assert r("out", "err") == "out\n[stderr]\nerr"
    assert r("out\n", "err") == "out\n[stderr]\nerr"
    assert r("", "err") == "[stderr]\nerr"
    assert r("x", "", exit_code=2) == "x\n[exit code: 2]"
    assert r("x", "", exit_code=None, signal="SIGKILL") == "x\n[killed by signal: SIGKILL]"
    assert r("x", "", exit_code=None, signal="SIGTERM", timed_out=True, timeout_ms=500) == (
        "x\n[timed out after 500ms]\n[killed by signal: SIGTERM]"
    )


@pytest.mark.parametrize(
    ("text", "body", "code", "sig"),
    [
        ("out\n[exit code: 3]", "out", 3, None),
        ("out\n[killed by signal: SIGTERM]", "out", None, "SIGTERM"),
        ("[exit code: 3]", "[exit code: 3]", 0, None),  # no newline before: output
        ("out\n[exit code: 3]\n", "out\n[exit code: 3]\n", 0, None),  # trailing newline
        ("a\n[exit code: 1]\n[killed by signal: SIGKILL]", "a\n[exit code: 1]", None, "SIGKILL"),
        ("plain output", "plain output", 0, None),
        ("x\n[exit code: 2] trailing", "x\n[exit code: 2] trailing", 0, None),
    ],
)
def test_parse_exit_status_edge_cases(
    text: str, body: str, code: int | None, sig: str | None
) -> None:
    st_ = parse_exit_status(text)
    assert (st_.body, st_.exit_code, st_.signal) == (body, code, sig)


# -- settings: environment over the TOML file over the defaults ------------------------


def test_settings_read_the_toml_file_and_the_environment_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "overspill.toml"
    config.write_text(
        'max_output_bytes = 1000\nretention_mode = "head_tail"\nlegacy_spill = false\n'
        "grace_ms = 250\n"
    )
    for name in list(os.environ):
        if name.upper().startswith("OVERSPILL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OVERSPILL_CONFIG", str(config))
    monkeypatch.setenv("overspill_grace_ms", "400")  # names match in any case
    s = ShellSettings.load()
    assert (s.max_output_bytes, s.retention_mode, s.legacy_spill) == (1000, "head_tail", False)
    assert s.grace_ms == 400.0 and s.timeout_ms == 120_000
    assert s.replace(grace_ms=10).grace_ms == 10 and s.grace_ms == 400.0
    with pytest.raises(AttributeError):
        s.grace_ms = 1


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("RETENTION_MODE", "middle", "Input should be 'tail' or 'head_tail'"),
        ("LEGACY_SPILL", "maybe", "Input should be a valid boolean"),
        (
            "MAX_OUTPUT_BYTES",
            "1.5",
            "'1.5' is not a whole number of bytes (e.g. 500000, 10MB, 1.5GiB, 1e9)",
        ),
        (
            "MAX_OUTPUT_BYTES",
            "10 parsecs",
            "'10 parsecs' is not a size (e.g. 500000, 10MB, 1.5GiB, 1e9)",
        ),
        ("SPILL_SWEEP_DAYS", "-1", "Input should be greater than or equal to 0"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(f"OVERSPILL_{name}", value)
    with pytest.raises(ConfigurationError) as e:
        ShellSettings.load()
    assert str(e.value) == f"invalid setting OVERSPILL_{name}: {message}"


def test_a_missing_config_file_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OVERSPILL_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigurationError, match="OVERSPILL_CONFIG: no such file"):
        ShellSettings.load()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [b"a", b"\xc3\xa9", b"\n", b"\r", b"\r\n", b"\x1b[31m", b"\t", b"\x07", b"\xff", b" "]
        ),
        max_size=60,
    ),
    st.sampled_from([None, "art_" + "0" * 26]),
)
def test_the_whole_block_view_equals_the_line_by_line_view(
    pieces: list[bytes], artifact: str | None
) -> None:
    from overspill.shell.view import render_each_line, render_lines

    data = b"".join(pieces)
    assert render_lines(data, 0, 1, line_cap=8, artifact_id=artifact) == render_each_line(
        data, 0, 1, line_cap=8, artifact_id=artifact
    )


@settings(max_examples=60, deadline=None)
@given(
    cut=st.lists(st.integers(min_value=1, max_value=3000), min_size=1, max_size=40),
    window=st.integers(min_value=50, max_value=2000),
)
def test_the_json_text_of_a_truncated_tail_starts_at_a_line_start(
    cut: list[int], window: int
) -> None:
    """Whatever the chunking and the window: ``skipped_bytes`` is exactly the
    partial line the kept tail begins with (0 when it begins at a line start),
    and the ``run --json`` text is the rest, ending where the stream does."""
    data = b"".join(b"%d\n" % i for i in range(1, 3000))
    collector = OutputCollector("stdout", window)
    pos = 0
    for n in cut * (len(data) // max(sum(cut), 1) + 1):
        if pos >= len(data):
            break
        collector.feed(data[pos : pos + n])
        pos += n
    out = collector.finish({})
    tail_start = len(data) - window
    starts_mid_line = data[tail_start - 1] != 10
    expected_skip = data.index(b"\n", tail_start) + 1 - tail_start if starts_mid_line else 0
    assert out.truncated and out.skipped_bytes == expected_skip
    from overspill.shell.results import ExecResult

    result = ExecResult(0, None, False, False, None, out, out, "", "r", 0.0)
    text = result.contract_json()["stdout"]["text"]
    assert text.encode() == data[tail_start + expected_skip :]
    assert out.text.encode() == data[tail_start:]  # the legacy form keeps the tail as it is


class _QuietStream:
    """A sink stream whose close takes ``close_s`` and shows no headway."""

    def __init__(self, close_s: float, artifact: str | None) -> None:
        self._close_s, self._artifact = close_s, artifact

    def close(
        self, source_update: dict[str, object], total_bytes: int | None = None
    ) -> tuple[Any, str | None]:
        from overspill.shell.results import ArtifactRef

        time.sleep(self._close_s)
        return ArtifactRef("art_DONE", "complete", 10, 10, None), None

    def progress(self) -> int:
        return 0

    def known_id(self) -> str | None:
        return self._artifact


def test_storage_still_opening_is_given_longer_than_storage_that_stalled() -> None:
    """No artifact yet (a store importing, a server starting): quiet up to the
    open bound is waited for; an artifact that exists and goes quiet is given up
    on after the end bound, with the reason."""
    from typing import cast

    from overspill.shell.sink import SinkStream, close_bounded

    opening = cast(SinkStream, _QuietStream(0.6, None))
    done, error = close_bounded(opening, {}, 10, quiet_s=0.2, open_quiet_s=2.0)
    assert done is not None and done.id == "art_DONE" and error is None
    started = time.monotonic()
    stalled = cast(SinkStream, _QuietStream(5, "art_X"))
    art, why = close_bounded(stalled, {}, 10, quiet_s=0.2, open_quiet_s=2.0)
    assert time.monotonic() - started < 1.5
    assert art is not None and art.state == "failed"
    assert why is not None and why.startswith("storage made no headway for 0.2 s")


class _SlowFile:
    """Stands for the legacy file: records what it is given, slowly, and can fail."""

    def __init__(self, delay: float = 0.0, fail_at: int | None = None) -> None:
        self.got: list[bytes] = []
        self.delay = delay
        self.fail_at = fail_at

    def write(self, data: bytes) -> None:
        if self.fail_at is not None and len(self.got) == self.fail_at:
            raise RuntimeError("the copy broke")
        time.sleep(self.delay)
        self.got.append(bytes(data))


def test_the_copies_beside_the_pump_get_every_chunk_in_order_within_their_bound() -> None:
    """The legacy copy and the failure scan run on a thread of their own: every
    chunk reaches them in order, however the pump reuses its buffer, and no more
    than PENDING bytes wait at once (a slow disk holds the pump back, not memory)."""
    from typing import Any, cast

    from overspill.shell import beside

    slow = _SlowFile(delay=0.002)
    side = beside.Beside(None, cast(Any, slow))
    size = beside.PENDING // 8
    buffer = bytearray(size)
    most = 0
    for i in range(60):
        buffer[:4] = b"%04d" % i
        side.put(memoryview(buffer), 0)
        most = max(most, side._held)
    side.close()
    assert [chunk[:4] for chunk in slow.got] == [b"%04d" % i for i in range(60)]
    assert 0 < most <= beside.PENDING


def test_a_copy_that_fails_beside_the_pump_is_raised_when_the_stream_closes() -> None:
    from typing import Any, cast

    from overspill.shell.beside import Beside

    broken = _SlowFile(fail_at=3)
    side = Beside(None, cast(Any, broken))
    for _ in range(100):  # the pump goes on: nothing blocks it once the copy stopped
        side.put(b"x", 0)
    with pytest.raises(RuntimeError, match="the copy broke"):
        side.close()
