"""The local server: started by the first verb that needs the store, shared by
the next ones, replaced when it differs, gone when idle, private, and never a
reason to lose a stored byte. Real processes on a real home."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers import Process, cli_env, local_servers, run_cli, wait_until


def _env(home: Path, **extra: object) -> dict[str, str]:
    return cli_env(OVERSPILL_HOME=home, OVERSPILL_OWNER="user:tester", **extra)


def _cli(
    home: Path, *args: str, stdin: bytes = b"", **extra: object
) -> subprocess.CompletedProcess[bytes]:
    return run_cli(_env(home, **extra), *args, stdin=stdin)


def _pids(home: Path) -> list[int]:
    return [pid for pid, _ in local_servers(str(home))]


def test_a_verb_on_a_fresh_home_starts_the_server_and_the_next_verb_reuses_it(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    run = _cli(home, "run", "--json", "--", "seq 1 30000")
    out = json.loads(run.stdout)["stdout"]
    assert run.stderr == b"" and out["storage_error"] is None
    expected = subprocess.run(["seq", "1", "30000"], capture_output=True).stdout
    assert out["artifact"]["state"] == "complete" and out["total_bytes"] == len(expected)
    assert _cli(home, "cat", out["artifact"]["id"]).stdout == expected
    art = _cli(home, "put", stdin=b"hello\n").stdout.decode().strip()
    first = _pids(home)
    assert len(first) == 1
    assert _cli(home, "cat", art).stdout == b"hello\n"
    assert _pids(home) == first  # the same process answered
    status = json.loads(_cli(home, "server", "status", "--json").stdout)
    assert status["pid"] == first[0] and status["home"] == str(home)


def test_the_socket_is_0600_and_the_home_0700(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _cli(home, "ls")
    sock = home / "server.sock"
    assert stat.S_ISSOCK(sock.stat().st_mode)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


def test_concurrent_first_calls_start_exactly_one_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda _: _cli(home, "ls"), range(6)))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    assert len(_pids(home)) == 1


_OLD_RELEASE = (
    "import overspill.api.version as v\n"
    "v.VERSION = '0.0.1'\n"
    "from overspill.api.cli import main\n"
    "main(['server', 'run'])\n"
)


def test_a_server_that_differs_is_stopped_and_replaced(tmp_path: Path) -> None:
    """Another release's server, or one with other storage settings for the home."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    old = subprocess.Popen(
        [sys.executable, "-c", _OLD_RELEASE, "server", "run"],
        cwd=home,
        env=_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert wait_until(lambda: (home / "server.sock").exists())
    hello = json.loads(_cli(home, "server", "status", "--json").stdout)
    assert hello["version"] == "0.0.1" and hello["pid"] == old.pid
    assert _cli(home, "ls").returncode == 0
    assert old.wait(timeout=30) == 0  # asked to stop, it stopped
    (new,) = _pids(home)
    assert new != old.pid
    assert json.loads(_cli(home, "server", "status", "--json").stdout)["version"] != "0.0.1"
    _cli(home, "ls", OVERSPILL_SEGMENT_BYTES="128KiB")
    assert _pids(home) == [new]  # a tuning setting is not the store's identity...
    _cli(home, "ls", OVERSPILL_BLOB_URL=(tmp_path / "elsewhere").as_uri())
    (other,) = _pids(home)
    assert other != new  # ...where the blobs live is


def test_the_idle_timeout_stops_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _cli(home, "ls", OVERSPILL_LOCAL_SERVER_IDLE_S="1")
    (pid,) = _pids(home)
    server = Process.of(pid)
    assert wait_until(server.gone), "the idle server still runs"
    assert not (home / "server.sock").exists()


def test_server_stop_stops_it_and_the_next_verb_starts_a_new_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _cli(home, "ls")
    (pid,) = _pids(home)
    server = Process.of(pid)
    stop = _cli(home, "server", "stop")
    assert stop.stdout == b"stopped the local server\n"
    assert wait_until(server.gone)
    again = _cli(home, "server", "stop")  # (its lock file stays; no server holds it)
    assert again.stdout == b"no local server was running\n"
    assert _cli(home, "server", "status").stdout.startswith(b"no local server is running")
    assert _cli(home, "ls").returncode == 0 and len(_pids(home)) == 1


def test_a_stale_socket_of_a_dead_server_is_replaced(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _cli(home, "ls")
    (pid,) = _pids(home)
    server = Process.of(pid)
    os.kill(pid, signal.SIGKILL)
    assert wait_until(server.gone)
    assert (home / "server.sock").exists()  # left behind by the dead server
    assert _cli(home, "ls").returncode == 0
    assert len(_pids(home)) == 1 and _pids(home) != [pid]


def test_local_server_off_never_starts_one_and_every_verb_still_works(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run = _cli(home, "run", "--json", "--", "seq 1 30000", OVERSPILL_LOCAL_SERVER="off")
    art = json.loads(run.stdout)["stdout"]["artifact"]
    assert art["state"] == "complete"
    put = _cli(home, "put", stdin=b"x\n", OVERSPILL_LOCAL_SERVER="off").stdout.decode().strip()
    assert _cli(home, "cat", put, OVERSPILL_LOCAL_SERVER="off").stdout == b"x\n"
    assert (
        _cli(home, "cat", art["id"], "--tail", "1", OVERSPILL_LOCAL_SERVER="off").stdout
        == b"30000\n"
    )
    assert art["id"] in _cli(home, "ls", OVERSPILL_LOCAL_SERVER="off").stdout.decode()
    assert _pids(home) == []
    assert not [p for p in home.iterdir() if p.name.endswith(".sock")]


def test_killing_the_server_during_a_run_loses_no_stored_byte_and_says_why(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    _cli(home, "ls", OVERSPILL_LEASE_SECONDS="2")  # the server's own setting
    (pid,) = _pids(home)
    # ~4 s of output, a batch a tenth of a second: the server dies in the middle.
    command = "for i in $(seq 1 40); do seq $((i*10000)) $((i*10000+9999)); sleep 0.1; done"
    run = subprocess.Popen(
        [sys.executable, "-m", "overspill.api.cli", "run", "--json", "--", command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(home),
    )
    # The server dies once it has published part of the output (not after a fixed
    # time: on a loaded machine the run had not overflowed yet at 1.5 s).
    assert wait_until(lambda: _stored_any(home), timeout=60)
    os.kill(pid, signal.SIGKILL)
    out, _ = run.communicate(timeout=120)
    result = json.loads(out)
    stdout = result["stdout"]
    assert stdout["storage_error"] and "server" in stdout["storage_error"]
    assert stdout["artifact"]["state"] == "incomplete"
    assert "[exit code" not in result["text"]  # the command itself ran to its end
    stored = stdout["artifact"]["size_bytes"]
    assert stored > 0
    # A new server serves what the dead one had published, byte for byte.
    art = stdout["artifact"]["id"]
    expected = subprocess.run(["bash", "-c", command], capture_output=True).stdout
    time.sleep(2.5)  # the writer's lease lapses
    info = json.loads(_cli(home, "info", art, "--json").stdout)
    assert info["state"] == "incomplete" and info["size_bytes"] >= stored
    assert _cli(home, "cat", art).stdout == expected[: info["size_bytes"]]


def _stored_any(home: Path) -> bool:
    """Whether some artifact of the home has bytes published (asked of its server)."""
    out = _cli(home, "ls", "--json")
    return out.returncode == 0 and any(a["size_bytes"] > 0 for a in json.loads(out.stdout)["items"])


def test_with_a_server_url_no_verb_loads_the_database_layer(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from overspill.api.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in\n"
        "      ('sqlalchemy', 'pydantic', 'fastapi', 'httpx', 'uvicorn')), file=sys.stderr)\n"
    )
    for args in (("ls",), ("cat", "art_" + "0" * 26), ("run", "--", "seq 1 30000")):
        out = subprocess.run(
            [sys.executable, "-c", probe, *args],
            capture_output=True,
            env=_env(tmp_path, OVERSPILL_URL="http://127.0.0.1:9", OVERSPILL_TOKEN="ovs_x"),
            timeout=60,
        )
        assert out.stderr.decode().strip().splitlines()[-1] == "[]", (args, out.stderr)
    assert _pids(tmp_path) == []


@pytest.mark.parametrize("verb", [("ls",), ("put",)])
def test_a_home_that_cannot_be_made_is_one_line(tmp_path: Path, verb: tuple[str, ...]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    out = _cli(blocker / "home", *verb, stdin=b"x")
    assert out.returncode == 1 and len(out.stderr.splitlines()) == 1, out.stderr
    assert b"Traceback" not in out.stderr


def _blob_files(home: Path) -> list[Path]:
    return [p for p in (home / "blobs").rglob("*") if p.is_file()]


def test_the_local_server_frees_expired_bytes_with_nobody_asking(tmp_path: Path) -> None:
    home = tmp_path / "home"
    art = (
        _cli(
            home,
            "put",
            stdin=b"x" * 100_000,
            OVERSPILL_SWEEP_INTERVAL_S="1",
            OVERSPILL_DEFAULT_RETENTION_S="2",
        )
        .stdout.decode()
        .strip()
    )
    assert _blob_files(home)
    assert wait_until(lambda: not _blob_files(home), timeout=40), "expired bytes still stored"
    info = json.loads(_cli(home, "info", art, "--json").stdout)
    assert info["state"] == "expired"


def test_the_local_server_keeps_an_output_hot_while_it_is_read_then_compacts_it(
    tmp_path: Path,
) -> None:
    """The hot tier: raw (read at file speed) while written or read within
    OVERSPILL_HOT_S, compacted by the local server once cold."""
    import time

    home = tmp_path / "home"

    def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
        return _cli(home, *args, OVERSPILL_HOT_S=4)

    done = cli("run", "--json", "--", "seq 1 300000")
    art = json.loads(done.stdout)["stdout"]["artifact"]["id"]

    def compressed() -> bool:
        return bool(json.loads(cli("info", art, "--json").stdout)["compressed"])

    deadline = time.monotonic() + 6
    while time.monotonic() < deadline:  # read every second: it stays hot
        assert cli("cat", art, "--tail", "1").stdout == b"300000\n"
        assert not compressed()
        time.sleep(1)
    assert "as printed (hot" in cli("info", art).stdout.decode()
    assert wait_until(compressed, timeout=90), "not compressed once cold"
    info = json.loads(cli("info", art, "--json").stdout)
    assert info["stored_bytes"] < info["size_bytes"] // 3
    shown = cli("info", art).stdout.decode()
    assert "on disk:" in shown and "compressed frames" in shown
    expected = "".join(f"{i}\n" for i in range(1, 300001)).encode()
    assert cli("cat", art).stdout == expected
    assert sum(f.stat().st_size for f in _blob_files(home)) == info["stored_bytes"]


def test_with_the_local_server_off_a_verb_sweeps_once_when_a_sweep_is_due(tmp_path: Path) -> None:
    home = tmp_path / "home"

    def off(*args: str, interval: str, stdin: bytes = b"") -> None:
        _cli(
            home,
            *args,
            stdin=stdin,
            OVERSPILL_LOCAL_SERVER="off",
            OVERSPILL_DEFAULT_RETENTION_S="1",
            OVERSPILL_SWEEP_INTERVAL_S=interval,
        )

    off("put", interval="3600", stdin=b"x" * 100_000)
    time.sleep(1.5)  # it expires; a sweep ran when the put opened the store, so none is due
    off("ls", interval="3600")
    assert _blob_files(home)  # not due: the bytes stay (reads already refuse them)
    off("ls", interval="1")
    assert not _blob_files(home)  # due: the verb's own pass freed them
    assert _pids(home) == []


def test_a_legacy_spill_file_follows_its_artifact(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run = json.loads(_cli(home, "run", "--json", "--", "seq 1 50000").stdout)
    stdout = run["stdout"]
    assert stdout["artifact"]["state"] == "complete" and stdout["storage_error"] is None
    spill = Path(stdout["spill_path"])
    assert spill.is_file()
    (usage,) = json.loads(_cli(home, "usage", "--json").stdout)
    assert usage["legacy_spill_bytes"] == spill.stat().st_size == stdout["total_bytes"]
    assert _cli(home, "rm", stdout["artifact"]["id"]).returncode == 0
    assert not spill.exists()
    assert not spill.parent.exists()  # the process's directory went with its last file
    (usage,) = json.loads(_cli(home, "usage", "--json").stdout)
    assert usage["legacy_spill_bytes"] == 0


def _slow_start_env(tmp_path: Path, home: Path) -> dict[str, str]:
    """The environment of a home whose server takes 3 s more to start, as on a
    loaded machine."""
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "sitecustomize.py").write_text(
        "import sys, time\nif '--hold-fd' in sys.argv or '--ready-fd' in sys.argv:\n"
        "    time.sleep(3)\n"
    )
    env = _env(home)
    env["PYTHONPATH"] = f"{slow}{os.pathsep}{env.get('PYTHONPATH', '')}"
    return env


def test_a_command_stores_without_waiting_for_the_server_it_starts_and_a_reader_waits(
    tmp_path: Path,
) -> None:
    """A home with no server up: a command's first overflow starts one for what
    follows and stores from its own process meanwhile, so the server's start
    (made 3 s slower here, as on a loaded machine) costs the command nothing. A
    reading verb right after waits for that server, starts no second one, and
    reads every byte."""
    home = tmp_path / "home"
    env = _slow_start_env(tmp_path, home)
    started = time.monotonic()
    done = run_cli(env, "run", "--json", "--", "seq 1 100000")
    took = time.monotonic() - started
    answer = json.loads(done.stdout)
    art = answer["stdout"]["artifact"]
    assert art is not None and art["state"] == "complete", answer["stdout"]
    assert done.stderr == b""  # nothing went wrong: no warning
    assert took < 3  # (it did not wait for the slow start)
    (server,) = _pids(home)  # started for what follows
    expected = "".join(f"{i}\n" for i in range(1, 100_001)).encode()
    assert run_cli(env, "cat", art["id"]).stdout == expected
    assert _pids(home) == [server]  # the reader waited for it, and it answered
    status = json.loads(run_cli(env, "server", "status", "--json").stdout)
    assert status["pid"] == server


def test_a_server_that_hangs_on_its_way_up_costs_a_waiting_verb_a_bound_not_forever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server started for later verbs holds the start lock until it is ready;
    one that never gets there (held here by the test, as a hung start would)
    makes a verb that waits give up after the start timeout, with the reason."""
    from overspill.api.client import local_server
    from overspill.api.settings import Settings

    home = tmp_path / "home"
    for name, value in _env(home).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(local_server, "START_TIMEOUT_S", 0.5)
    server = local_server.LocalServer(Settings.load())
    home.mkdir(mode=0o700)
    with local_server.flocked(str(home / local_server.START_LOCK)) as held:
        assert held
        started = time.monotonic()
        with pytest.raises(local_server.LocalServerUnavailable, match="has been starting"):
            server.client("user:tester", "admin")
        assert 0.5 <= time.monotonic() - started < 5
    assert _pids(home) == []  # nothing was started behind the lock


def test_server_stop_right_after_a_command_stops_the_server_still_starting(
    tmp_path: Path,
) -> None:
    """A command's first overflow leaves a server starting; a stop that came
    before it was up used to find no server and say so, and the server came up
    after it. The stop waits for the start and stops that server."""
    home = tmp_path / "home"
    env = _slow_start_env(tmp_path, home)
    done = run_cli(env, "run", "--json", "--", "seq 1 100000")
    assert json.loads(done.stdout)["stdout"]["artifact"]["state"] == "complete"
    assert len(_pids(home)) == 1  # starting, 3 s from ready
    stop = run_cli(env, "server", "stop")
    assert stop.returncode == 0, stop.stderr
    assert b"stopped" in stop.stdout + stop.stderr
    assert _pids(home) == []
