"""What a person types at the CLI out of habit or by copying what overspill
printed: ids in every form, grep's options, a view that ends its last line.
Each case runs the CLI as a real process against a temp home."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from overspill.shell.wording import find_calls
from tests.helpers import cli_env, run_cli


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli(cli_env(OVERSPILL_HOME=home, OVERSPILL_OWNER="user:tester"), *args)


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, str, str]:
    """A truncated run: its home, its artifact id and the spill path its marker printed."""
    out = _run(tmp_path, "run", "--", "seq 1 100000").stdout.decode()
    marker = out.rstrip("\n").rsplit("\n", 1)[-1]
    art = re.search(r"artifact (art_\w{26})", marker)
    path = re.search(r"full output: (\S+);", marker)
    assert art and path, marker
    return tmp_path, art.group(1), path.group(1)


def test_every_form_of_an_id_that_overspill_prints_reads_the_same_output(
    stored: tuple[Path, str, str],
) -> None:
    home, art, spill = stored
    want = _run(home, "cat", art, "--tail", "1").stdout
    assert want == b"100000\n"
    for form in (f"artifact://{art}", art.lower(), f"[{art}]", f"{art};", spill):
        got = _run(home, "cat", form, "--tail", "1")
        assert (got.returncode, got.stdout) == (0, want), (form, got.stderr)
    info = _run(home, "info", f"artifact://{art}")
    assert info.returncode == 0 and art in info.stdout.decode()
    assert _run(home, "grep", art.lower(), "^99999$").stdout == b"99999:99999\n"


def test_a_path_no_output_holds_or_a_malformed_id_says_what_an_id_looks_like(
    stored: tuple[Path, str, str],
) -> None:
    home, _, spill = stored
    for arg in (spill + ".other", "/etc/passwd"):
        r = _run(home, "cat", arg)
        assert r.returncode == 1 and r.stdout == b""
        (line,) = r.stderr.decode().splitlines()
        assert line == (
            f"overspill: no stored output holds the spill file {arg} "
            "(or give its id: art_ and 26 letters and digits)"
        )
    r = _run(home, "cat", "art_short")
    (line,) = r.stderr.decode().splitlines()
    assert "'art_short' is not an artifact id: art_ and 26 letters and digits" in line


def test_grep_takes_dash_n_and_options_anywhere(stored: tuple[Path, str, str]) -> None:
    home, art, _ = stored
    plain = _run(home, "grep", art, "^1234[0-9]$")
    assert plain.returncode == 0 and plain.stdout.decode().splitlines()[0] == "12340:12340"
    for args in (
        ("-n", art, "^1234[0-9]$"),
        (art, "-n", "^1234[0-9]$"),
        (art, "^1234[0-9]$", "-n"),
    ):
        r = _run(home, "grep", *args)
        assert (r.returncode, r.stdout) == (0, plain.stdout), (args, r.stderr)


def test_grep_usage_errors_name_what_is_missing_and_the_verbs_own_help(
    stored: tuple[Path, str, str],
) -> None:
    home, art, _ = stored
    missing = _run(home, "grep", art)
    assert missing.returncode == 2
    assert missing.stderr.decode() == (
        "overspill: the following arguments are required: pattern (see overspill grep --help)\n"
    )
    unknown = _run(home, "grep", art, "x", "--colour")
    assert unknown.returncode == 2
    assert unknown.stderr.decode() == (
        "overspill grep: unrecognized arguments: --colour (see overspill grep --help)\n"
    )


def test_a_bad_regex_is_exit_2_in_grep_and_search_and_quotes_the_pattern_as_typed(
    stored: tuple[Path, str, str],
) -> None:
    home, art, _ = stored
    for verb in (("grep", art), ("search",)):
        r = _run(home, *verb, "a(b")
        assert r.returncode == 2, (verb, r.stderr)
        (line,) = r.stderr.decode().splitlines()
        assert line.startswith("overspill: invalid regular expression 'a(b': ")
        assert "(?m)" not in line, line


def test_off_a_terminal_the_view_ends_its_last_line(tmp_path: Path) -> None:
    for command, tail in (("echo hi; exit 3", "\n[exit code: 3]\n"), ("printf x", "x\n")):
        out = _run(tmp_path, "run", "--", command).stdout.decode()
        assert out.endswith(tail) and not out.endswith("\n\n"), out
    # Output that ends its own line gets no blank line added.
    assert _run(tmp_path, "run", "--", "echo hi").stdout == b"hi\n"


def test_a_quota_with_room_left_stores_the_prefix_that_fits_and_says_so(tmp_path: Path) -> None:
    """2 MB quota, 1.3 MB used: a 2.7 MB output keeps its first 687,001 bytes
    (what was free), says exactly that, offers the call that reads them, and
    the legacy spill file still holds the whole output."""
    env = cli_env(OVERSPILL_HOME=tmp_path, OVERSPILL_OWNER="user:q")
    assert run_cli(env, "retention", "set", "--owner", "user:q", "--quota", "2MB").returncode == 0
    assert run_cli(env, "put", stdin=b"a" * 99 + b"\n" + b"b" * 1_312_899).returncode == 0
    out = run_cli(env, "run", "--", "seq 1 400000").stdout.decode()
    marker = out.rstrip("\n").rsplit("\n", 1)[-1]
    art = re.search(r"artifact (art_\w{26})", marker)
    spill = re.search(r"full output: (\S+);", marker)
    assert art and spill, marker
    assert (
        "artifact holds the first 687001 bytes (capped: quota exceeded for user:q: 1312999 of "
        "2000000 bytes used" in marker
    )
    assert "artifact unavailable" not in marker
    whole = b"".join(b"%d\n" % n for n in range(1, 400_001))
    assert run_cli(env, "cat", art.group(1)).stdout == whole[:687_001]
    assert Path(spill.group(1)).read_bytes() == whole
    (_, args), *_ = [c for c in find_calls(marker) if c[0] == "artifact_read"]
    assert args["offset"] + args["limit"] == 687_001  # the last bytes stored


def test_info_on_an_expired_output_not_yet_swept_says_one_true_thing(tmp_path: Path) -> None:
    import json
    import time

    env = cli_env(OVERSPILL_HOME=tmp_path, OVERSPILL_OWNER="user:tester", OVERSPILL_HOT_S=0)
    art = run_cli(env, "put", stdin=b"".join(b"%d\n" % n for n in range(20_000))).stdout
    art_id = art.decode().strip()
    deadline = time.monotonic() + 20
    while not json.loads(run_cli(env, "info", art_id, "--json").stdout).get("compressed"):
        assert time.monotonic() < deadline, "the local server never compacted it"
        time.sleep(0.2)
    assert b"on disk:" in run_cli(env, "info", art_id).stdout  # its frames, while it lives
    assert run_cli(env, "retain", art_id, "1s").returncode == 0
    time.sleep(1.2)
    rows = dict(
        line.split(":", 1) for line in run_cli(env, "info", art_id).stdout.decode().splitlines()
    )
    assert rows["state"].strip() == "expired"
    assert (
        rows["size"].strip() == "106.3 KiB printed (108890 bytes); none of it can be read any more"
    )
    assert "on disk" not in rows and "expires" not in rows and "expired" in rows
