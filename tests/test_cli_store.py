"""The store verbs of the CLI, run as a real subprocess against a temp home."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(home: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env["OVERSPILL_HOME"] = str(home)
    env["OVERSPILL_OWNER"] = "user:tester"
    return subprocess.run(
        [sys.executable, "-m", "overspill.api.cli", *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=Path(__file__).resolve().parents[1],
        check=False,
    )


def test_put_then_cat_round_trips_stdin(tmp_path: Path) -> None:
    data = b"".join(b"line %d\n" % i for i in range(1, 20001))
    put = _run(tmp_path, "put", "--name", "numbers", stdin=data)
    assert put.returncode == 0, put.stderr
    art = put.stdout.decode().strip()
    assert art.startswith("art_")
    assert _run(tmp_path, "cat", art).stdout == data
    assert _run(tmp_path, "cat", art, "--range", "0-7").stdout == b"line 1\n"
    assert _run(tmp_path, "cat", art, "--lines", "100:2").stdout == b"line 100\nline 101\n"
    assert _run(tmp_path, "cat", art, "--tail", "1").stdout == b"line 20000\n"
    grep = _run(tmp_path, "grep", art, "^line 1999[0-9]$")
    assert grep.stdout.decode().splitlines()[0] == "19990:line 19990"
    listing = _run(tmp_path, "ls").stdout.decode()
    assert art in listing and "user:tester" in listing
    assert _run(tmp_path, "rm", art).returncode == 0
    gone = _run(tmp_path, "cat", art)
    assert gone.returncode == 1 and b"deleted" in gone.stderr


def test_the_data_directory_is_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _run(home, "put", stdin=b"x")
    assert oct(home.stat().st_mode & 0o777) == "0o700"
    assert oct((home / "overspill.db").stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("cat", "art_nope"), b"invalid artifact id"),
        (("cat", "art_" + "0" * 26), b"not found"),
        (("cat", "art_" + "0" * 26, "--range", "9-3"), b"--range"),
        (("cat", "art_" + "0" * 26, "--lines", "x"), b"--lines"),
    ],
)
def test_bad_input_is_one_line_on_stderr(
    tmp_path: Path, args: tuple[str, ...], message: bytes
) -> None:
    out = _run(tmp_path, *args)
    assert out.returncode != 0
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert b"Traceback" not in out.stderr


def test_invalid_regex_and_backend_errors_are_one_line(tmp_path: Path) -> None:
    art = _run(tmp_path, "put", stdin=b"abc\n").stdout.decode().strip()
    bad = _run(tmp_path, "grep", art, "(")
    assert bad.returncode == 1 and bad.stderr.startswith(b"overspill: invalid regular expression")
    env_bad = subprocess.run(
        [sys.executable, "-m", "overspill.api.cli", "ls"],
        capture_output=True,
        check=False,
        env={**os.environ, "OVERSPILL_HOME": str(tmp_path), "OVERSPILL_BLOB_URL": "ftp://x/y"},
        cwd=Path(__file__).resolve().parents[1],
    )
    assert env_bad.returncode == 1
    assert env_bad.stderr.strip().splitlines() == [
        b"overspill: unknown blob backend 'ftp://x/y': known schemes are file://, s3://"
    ]


_LOADED = (
    "import sys, runpy\n"
    "sys.argv = ['overspill', 'run', '--', sys.argv[1]]\n"
    "try:\n"
    "    runpy.run_module('overspill.api.cli', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "heavy = ('sqlalchemy', 'boto3', 'numpy', 'overspill.artifacts.store')\n"
    "print(sorted({m.split('.')[0] if m != 'overspill.artifacts.store' else m\n"
    "              for m in sys.modules if m.startswith(heavy)}), file=sys.stderr)\n"
)


@pytest.mark.parametrize(
    ("command", "loaded"),
    [("echo small", "[]"), ("seq 1 100000", "['overspill.artifacts.store', 'sqlalchemy']")],
)
def test_run_loads_the_store_only_when_a_stream_overflows(
    tmp_path: Path, command: str, loaded: str
) -> None:
    """Most commands fit the window; they must not pay for the store's imports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env.update(OVERSPILL_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", _LOADED, command],
        capture_output=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert out.stderr.decode().strip().splitlines()[-1] == loaded, out.stderr
