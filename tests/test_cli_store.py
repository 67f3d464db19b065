"""The store verbs of the CLI, run as a real subprocess against a temp home."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(
    home: Path, *args: str, stdin: bytes = b"", env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env["OVERSPILL_HOME"] = str(home)
    env["OVERSPILL_OWNER"] = "user:tester"
    env.update(env_extra or {})
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
    listing = _run(tmp_path, "ls", env_extra={"COLUMNS": "160"}).stdout.decode()
    assert art in listing and "user:tester" in listing  # the owner, where there is room
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
        (("cat", "art_nope"), b"is not an artifact id"),
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
    # grep's status for trouble is 2 (1 means: no line selected).
    assert bad.returncode == 2 and bad.stderr.startswith(b"overspill: invalid regular expression")
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
    "import sys\n"
    "from overspill.api.cli import main\n"
    "main(sys.argv[1:])\n"
    "heavy = ('sqlalchemy', 'boto3', 'numpy', 'overspill.artifacts.store', 'pydantic',\n"
    "         'fastapi', 'httpx', 'uvicorn', 'asyncio', 'dataclasses', 'pathlib')\n"
    "print(sorted({m.split('.')[0] if m != 'overspill.artifacts.store' else m\n"
    "              for m in sys.modules if m.startswith(heavy)}), file=sys.stderr)\n"
)


@pytest.mark.parametrize(
    ("args", "local_server", "loads"),
    [
        (("run", "--", "echo small"), "on", "[]"),
        (("run", "--", "seq 1 100000"), "on", "[]"),  # the local server stores it
        (("ls",), "on", "[]"),
        (("run", "--", "seq 1 100000"), "off", "store"),  # stored from this process
        # No server up yet: stored from this process while one starts.
        (("run", "--", "seq 1 100000"), "starting", "store"),
    ],
)
def test_a_verb_loads_neither_the_store_nor_pydantic_unless_it_stores_in_process(
    tmp_path: Path, args: tuple[str, ...], local_server: str, loads: str
) -> None:
    """A verb runs once per agent command: the store, SQLAlchemy, pydantic and
    the server live in the local server, not in the verb's process."""
    from tests.helpers import cli_env, run_cli

    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env.update(
        OVERSPILL_HOME=str(tmp_path / "home"),
        OVERSPILL_LOCAL_SERVER="off" if local_server == "off" else "on",
    )
    if local_server == "on":  # (a reading verb waits for the server it starts)
        assert run_cli(cli_env(OVERSPILL_HOME=tmp_path / "home"), "ls").returncode == 0
    out = subprocess.run(
        [sys.executable, "-c", _LOADED, *args],
        capture_output=True,
        env=env,
        check=False,
        timeout=120,
    )
    loaded = out.stderr.decode().strip().splitlines()[-1]
    if loads == "store":
        assert "'overspill.artifacts.store'" in loaded and "'sqlalchemy'" in loaded, out.stderr
    else:
        assert loaded == "[]", out.stderr


def test_every_option_of_every_verb_has_help_text() -> None:
    import argparse

    from overspill.api.cli import build_parser

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for verb, sub in action.choices.items():
                    walk(sub, f"{name} {verb}")
            elif not isinstance(action, argparse._HelpAction):
                assert action.help, f"{name}: {action.option_strings or action.dest} has no help"

    walk(build_parser(), "overspill")


def test_bare_overspill_prints_help_and_version_prints_the_version(tmp_path: Path) -> None:
    bare = _run(tmp_path)
    assert bare.returncode == 0 and b"usage: overspill" in bare.stdout
    assert b"examples:" in bare.stdout and b"OVERSPILL_" in bare.stdout
    version = _run(tmp_path, "--version")
    assert version.returncode == 0 and version.stdout.startswith(b"overspill ")


def test_sizes_read_as_people_write_them() -> None:
    from overspill.artifacts.units import parse_size

    assert parse_size("10MB") == 10_000_000 and parse_size("1.5GiB") == 1.5 * 2**30
    assert parse_size("1e9") == 10**9 and parse_size("512") == 512
    with pytest.raises(ValueError, match="not a size"):
        parse_size("10 parsecs")


def test_selections_past_the_end_and_missing_ids_are_errors(tmp_path: Path) -> None:
    art = _run(tmp_path, "put", stdin=b"one\ntwo\n").stdout.decode().strip()
    lines = _run(tmp_path, "cat", art, "--lines", "9999999999:2")
    assert lines.returncode == 1 and lines.stderr.decode() == (
        f"overspill: {art} has no line 9999999999: it has 2 lines\n"
    )
    rng = _run(tmp_path, "cat", art, "--range", "99999999999-")
    assert rng.returncode == 1 and b"past the 8 bytes" in rng.stderr
    audit = _run(tmp_path, "audit", "--artifact", "art_" + "0" * 26)
    assert audit.returncode == 1 and b"not found" in audit.stderr
    assert _run(tmp_path, "ls", "--min-size", "1kB").returncode == 0


def test_grep_groups_are_separated_as_gnu_grep_does(tmp_path: Path) -> None:
    data = b"".join(b"%d%s\n" % (i, b" hit" if i in (5, 50) else b"") for i in range(100))
    art = _run(tmp_path, "put", stdin=data).stdout.decode().strip()
    out = _run(tmp_path, "grep", art, "hit", "-C", "1").stdout.decode().splitlines()
    assert out == ["5-4", "6:5 hit", "7-6", "--", "50-49", "51:50 hit", "52-51"]


def test_settings_are_checked_for_every_verb_and_misspellings_are_named(tmp_path: Path) -> None:
    def run_with(**env: str) -> subprocess.CompletedProcess[bytes]:
        full = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
        full.update(OVERSPILL_HOME=str(tmp_path), **env)
        return subprocess.run(
            [sys.executable, "-m", "overspill.api.cli", "run", "--", "echo hi"],
            capture_output=True,
            env=full,
        )

    bad = run_with(OVERSPILL_SEGMENT_BYTES="0")
    assert bad.returncode == 1 and bad.stdout == b""
    assert bad.stderr.decode().splitlines() == [
        "overspill: invalid setting OVERSPILL_SEGMENT_BYTES: Input should be greater than 0"
    ]
    typo = run_with(OVERSPILL_MAX_OUTPUT_BYTE="5")
    assert typo.returncode == 0 and typo.stdout == b"hi\n"
    assert (
        b"OVERSPILL_MAX_OUTPUT_BYTE is not a setting; did you mean OVERSPILL_MAX_OUTPUT_BYTES?"
        in typo.stderr
    )


def test_serve_says_in_one_line_when_it_cannot_listen(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        busy = _run(tmp_path, "serve", "--port", str(port))
    assert busy.returncode == 1
    assert busy.stderr.decode().splitlines() == [
        f"overspill: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]
    bad = _run(tmp_path, "serve", "--port", "99999")
    assert bad.returncode == 2 and len(bad.stderr.decode().splitlines()) == 1


def test_serve_names_an_owner_no_token_can_be_issued_to_in_one_line(tmp_path: Path) -> None:
    from tests.helpers import free_port

    bad = _run(
        tmp_path, "serve", "--port", str(free_port()), env_extra={"OVERSPILL_OWNER": "bad owner"}
    )
    assert bad.returncode == 1
    assert bad.stderr.decode().splitlines() == [
        "overspill: token principal 'bad owner': 1-200 characters without spaces, "
        "e.g. agent:ci-bot or user:alice"
    ]


def test_run_warns_on_stderr_when_the_full_output_could_not_be_stored(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env.update(
        OVERSPILL_HOME=str(tmp_path),
        OVERSPILL_DATABASE_URL="postgresql+psycopg://x@127.0.0.1:1/x",
        OVERSPILL_MAX_OUTPUT_BYTES="100",
    )
    r = subprocess.run(
        [sys.executable, "-m", "overspill.api.cli", "run", "--", "seq 1 1000"],
        capture_output=True,
        env=env,
    )
    assert r.returncode == 0 and r.stdout.decode().endswith("]\n")  # the model's text alone
    # The local server cannot open that database and says why; the verb passes
    # the reason on (its own process could do no better), once.
    (warning,) = r.stderr.decode().splitlines()
    assert warning.startswith("overspill: warning: full output not stored: database ")
    assert "unreachable" in warning


def test_ls_fits_an_80_column_terminal_and_prints_the_next_page_command(tmp_path: Path) -> None:
    for i in range(3):
        _run(
            tmp_path, "put", "--name", f"a rather long name for output number {i} " * 3, stdin=b"x"
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env.update(OVERSPILL_HOME=str(tmp_path), COLUMNS="80")
    out = subprocess.run(
        [sys.executable, "-m", "overspill.api.cli", "ls", "--limit", "2"],
        capture_output=True,
        env=env,
    ).stdout.decode()
    rows = out.splitlines()
    assert rows[0].split() == ["ID", "SIZE", "STATE", "EXIT", "CREATED", "SOURCE"]
    assert all(len(r) <= 80 for r in rows[:-1]), rows
    assert rows[-2] == "2 shown of 3 matching, 3 B in all"
    more = rows[-1].removeprefix("more: overspill ").split()
    rest = subprocess.run(
        [sys.executable, "-m", "overspill.api.cli", *more], capture_output=True, env=env
    ).stdout.decode()
    assert len(rest.splitlines()) == 3 and "1 shown" in rest  # the third one, no more line


def test_no_progress_bytes_mix_into_data_on_a_terminal(tmp_path: Path) -> None:
    import pty

    data = b"0123456789abcdef" * (9 * 1024 * 1024 // 16)  # past the 8 MiB meter threshold
    art = _run(tmp_path, "put", stdin=data).stdout.decode().strip()
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env["OVERSPILL_HOME"] = str(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "overspill.api.cli", "cat", art, "--range", "0-9000000"],
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    got = bytearray()
    while True:
        try:
            piece = os.read(master, 1 << 16)
        except OSError:  # EIO: the other side closed
            break
        if not piece:
            break
        got += piece
    proc.wait(timeout=60)
    os.close(master)
    assert b"MiB /" not in got and b"\r" not in got.replace(b"\r\n", b"")
    assert len(got.replace(b"\r\n", b"\n")) == 9_000_000


def test_the_bash_completion_offers_verbs_and_each_verbs_options(tmp_path: Path) -> None:
    script = _run(tmp_path, "completion", "bash").stdout.decode()
    probe = (
        script
        + 'COMP_WORDS=(overspill g); COMP_CWORD=1; _overspill; echo "${COMPREPLY[*]}"\n'
        + 'COMP_WORDS=(overspill grep --ig); COMP_CWORD=2; _overspill; echo "${COMPREPLY[*]}"\n'
    )
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True).stdout.splitlines()
    assert out == ["grep", "--ignore-case"]
    for shell in ("zsh", "fish"):
        assert _run(tmp_path, "completion", shell).returncode == 0


def test_the_bash_completion_offers_option_values_and_artifact_ids_newest_first(
    tmp_path: Path,
) -> None:
    made = [_run(tmp_path, "put", stdin=b"%d\n" % i).stdout.decode().strip() for i in range(3)]
    script = _run(tmp_path, "completion", "bash").stdout.decode()
    bindir = Path(sys.executable).parent  # the script calls `overspill completion ids`
    probe = (
        f'export PATH="{bindir}:$PATH" OVERSPILL_HOME="{tmp_path}" OVERSPILL_OWNER=user:tester\n'
        + script
        + 'COMP_WORDS=(overspill adopt --from cl); COMP_CWORD=3; _overspill; echo "${COMPREPLY[*]}"\n'
        + 'COMP_WORDS=(overspill ls --sort ""); COMP_CWORD=3; _overspill; echo "${COMPREPLY[*]}"\n'
        + 'COMP_WORDS=(overspill cat ""); COMP_CWORD=2; _overspill; echo "${COMPREPLY[*]}"\n'
        + f"COMP_WORDS=(overspill info {made[1][:-3]}); COMP_CWORD=2; _overspill; "
        + 'echo "${COMPREPLY[*]}"\n'
    )
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True).stdout.splitlines()
    assert out[0] == "claude-code" and out[1] == "created size"
    assert out[2].split() == made[::-1]  # newest first
    assert out[3] == made[1]
    fish = _run(tmp_path, "completion", "fish").stdout.decode()
    assert "overspill completion ids" in fish and "-l from -xa 'claude-code" in fish


def test_verbs_that_print_data_speak_json_when_asked(tmp_path: Path) -> None:
    import json

    art = _run(tmp_path, "put", stdin=b"x\n").stdout.decode().strip()
    assert json.loads(_run(tmp_path, "pin", art, "--reason", "r", "--json").stdout)["pinned"]
    assert json.loads(_run(tmp_path, "retain", art, "1d", "--json").stdout)["id"] == art
    events = [json.loads(line) for line in _run(tmp_path, "audit", "--json").stdout.splitlines()]
    assert {"pin", "retention", "create"} <= {e["action"] for e in events}
    assert "default_retention_s" in json.loads(_run(tmp_path, "retention", "show", "--json").stdout)
    assert json.loads(_run(tmp_path, "rm", art, "--json").stdout)["state"] == "deleted"


def test_a_negative_retention_is_named_not_taken_for_an_option(tmp_path: Path) -> None:
    from tests.helpers import cli_env, run_cli

    out = run_cli(cli_env(OVERSPILL_HOME=str(tmp_path)), "retain", "art_x", "-5d")
    assert out.returncode != 0 and out.stdout == b""
    assert out.stderr.decode() == (
        "overspill: retain: a retention is a positive duration (7d, 12h) or forever, got -5d\n"
    )


def _put_through_a_slow_pipe(home: Path, *flags: str, watch_s: float) -> tuple[bytes, bytes]:
    """``put`` reading a pipe the test feeds for ``watch_s`` seconds, its stderr
    on a terminal and its stdout a pipe; what the terminal showed, and stdout."""
    master, slave = pty.openpty()
    # A terminal of 100 columns (a new pseudo-terminal has none: nothing fits).
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
    env["OVERSPILL_HOME"] = str(home)
    proc = subprocess.Popen(
        [sys.executable, "-m", "overspill.api.cli", "put", *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    assert proc.stdin is not None and proc.stdout is not None
    seen = bytearray()
    deadline = time.monotonic() + watch_s
    while time.monotonic() < deadline and b"stored" not in seen:
        proc.stdin.write(b"x" * 65536 + b"\n")
        proc.stdin.flush()
        if select.select([master], [], [], 0.1)[0]:
            seen += os.read(master, 1 << 16)
    proc.stdin.close()
    out = proc.stdout.read()
    proc.wait(timeout=60)
    while select.select([master], [], [], 0.2)[0]:
        try:
            piece = os.read(master, 1 << 16)
        except OSError:
            break
        if not piece:
            break
        seen += piece
    os.close(master)
    return bytes(seen), out


def test_a_long_put_shows_a_progress_bar_on_the_terminal_and_none_with_quiet(
    tmp_path: Path,
) -> None:
    shown, out = _put_through_a_slow_pipe(tmp_path, watch_s=30)
    assert out.startswith(b"art_")
    bar = shown.decode(errors="replace")
    assert "stored" in bar and re.search(r"\d+(\.\d+)?[kMG]?B/s", bar), bar
    quiet, out = _put_through_a_slow_pipe(tmp_path, "--quiet", watch_s=2)
    assert out.startswith(b"art_") and quiet == b""


def test_a_verb_writes_its_whole_answer_to_a_pipe_its_parent_made_non_blocking(
    tmp_path: Path,
) -> None:
    """A parent may hand a verb a non-blocking pipe and read it late: the answer
    still arrives whole (it was cut at the pipe's capacity, with exit status 0)."""
    import json

    from tests.helpers import cli_env

    read, write = os.pipe()
    os.set_blocking(write, False)
    env = cli_env(OVERSPILL_HOME=tmp_path / "home", OVERSPILL_LOCAL_SERVER="off")
    proc = subprocess.Popen(
        [sys.executable, "-m", "overspill.api.cli", "run", "--json", "--", "seq 1 300000"],
        stdout=write,
        env=env,
    )
    os.close(write)
    try:
        time.sleep(1.0)  # the reader comes late: the pipe fills first
        data = b""
        while chunk := os.read(read, 1 << 20):
            data += chunk
    finally:
        os.close(read)
        proc.wait(timeout=60)
    assert proc.returncode == 0
    answer = json.loads(data)
    assert answer["stdout"]["text"].endswith("299999\n300000\n")
