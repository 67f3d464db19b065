"""``overspill adopt``: other tools' leftovers taken in as the caller's artifacts,
with their path, tool and time; originals removed only once stored and checked;
never a symlink, another user's file, or a file a process holds open. Real CLI
processes on a fake home laid out as each tool lays out its own."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli_env, held_open, run_cli


class Home:
    """A machine's worth of leftovers under ``root`` (HOME, TMPDIR, the store)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.tmp = root / "tmp"
        self.tmp.mkdir(parents=True)
        self.env = cli_env(
            HOME=self.home,
            TMPDIR=self.tmp,
            OVERSPILL_HOME=root / "store",
            OVERSPILL_OWNER="user:me",
        )
        self.env.pop("XDG_DATA_HOME", None)
        self.env.pop("CLAUDE_CONFIG_DIR", None)

    def put(self, where: str, data: bytes, *, age_days: float = 0) -> Path:
        path = self.root / where
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if age_days:
            old = path.stat().st_mtime - age_days * 86400
            os.utime(path, (old, old))
        return path

    def adopt(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return run_cli(self.env, "adopt", *args)

    def info(self, artifact_id: str) -> dict[str, object]:
        done = run_cli(self.env, "info", artifact_id, "--json")
        assert done.returncode == 0, done.stderr
        info: dict[str, object] = json.loads(done.stdout)
        return info

    def cat(self, artifact_id: str) -> bytes:
        return run_cli(self.env, "cat", artifact_id).stdout


@pytest.fixture
def machine(tmp_path: Path) -> Home:
    return Home(tmp_path)


def _rows(out: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


LEFTOVERS = {
    "claude-code": "home/.claude/projects/-work-app/0b7f/tool-results/toolu_01.txt",
    "claude-code task": "tmp/claude-0/-work-app/0b7f/tasks/b1.output",
    "opencode": "home/.local/share/opencode/tool-output/tool_01JX",
    "gemini-cli": "home/.gemini/tmp/3fa2/tool-outputs/session-9/shell_1.txt",
    "goose": "tmp/goose_mcp_responses/mcp_response_20261206_101010.txt",
    "legacy": "tmp/dsh-subprocess-ab12cd/dsh-subprocess-77-1-0123456789ab-stdout.log",
}


def test_every_tools_leftovers_are_stored_with_their_origin_then_removed(machine: Home) -> None:
    made = {
        name: machine.put(where, f"{name}\n".encode() * 5000, age_days=3)
        for name, where in LEFTOVERS.items()
    }
    done = machine.adopt("--remove", "--json")
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout)
    total = rows.pop()["total"]
    by_path = {row["path"]: row for row in rows}
    assert set(by_path) == {str(p) for p in made.values()}
    for name, path in made.items():
        row = by_path[str(path)]
        assert row["removed"] is True and not path.exists()
        assert row["source"] == name.split()[0]
        info = machine.info(str(row["id"]))
        source = info["source"]
        assert isinstance(source, dict)
        assert source["path"] == str(path) and source["adopted_from"] == name.split()[0]
        created = datetime.fromisoformat(str(info["created_at"]))
        assert (datetime.now(UTC) - created).days == 3  # its own time, not the adoption
        assert info["state"] == "complete" and info["expires_at"] is not None
        assert machine.cat(str(row["id"])) == f"{name}\n".encode() * 5000
    assert total["adopted"] == len(made) and total["failed"] == 0
    assert total["bytes_freed"] == sum(len(f"{n}\n") * 5000 for n in made)


def test_a_dry_run_lists_what_would_be_taken_and_touches_nothing(machine: Home) -> None:
    path = machine.put(LEFTOVERS["goose"], b"x" * 1000)
    done = machine.adopt("--dry-run", "--remove", "--json")
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout)
    assert rows[0] == {"path": str(path), "source": "goose", "bytes": 1000}
    assert rows[-1] == {"total": {"files": 1, "bytes": 1000, "bytes_freed": 1000}}
    assert path.exists()
    assert json.loads(run_cli(machine.env, "ls", "--json").stdout)["items"] == []


def test_without_remove_the_originals_stay(machine: Home) -> None:
    path = machine.put(LEFTOVERS["opencode"], b"kept\n")
    done = machine.adopt("--json")
    assert done.returncode == 0 and path.exists()
    assert machine.cat(str(_rows(done.stdout)[0]["id"])) == b"kept\n"


def test_a_file_a_process_holds_open_is_passed_over(machine: Home) -> None:
    path = machine.put(LEFTOVERS["claude-code"], b"still being written\n")
    with held_open(path):
        done = machine.adopt("--remove", "--dry-run", "--json")
        assert {"path": str(path), "skipped": "open in a running process"} in _rows(done.stdout)
        done = machine.adopt("--remove")
        assert done.returncode == 0 and path.exists()
    assert "adopted 1 file " in machine.adopt("--remove").stderr.decode() and not path.exists()


def test_symlinks_and_other_users_files_are_never_taken(machine: Home, tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_bytes(b"not a leftover\n")
    link = machine.root / LEFTOVERS["goose"]
    link.parent.mkdir(parents=True)
    link.symlink_to(secret)
    theirs = machine.put(LEFTOVERS["opencode"], b"someone else's\n")
    os.chown(theirs, 65534, 65534)  # nobody
    linked_dir = machine.root / "home/.gemini/tmp/3fa2"
    linked_dir.parent.mkdir(parents=True)
    linked_dir.symlink_to(secret.parent, target_is_directory=True)
    done = machine.adopt("--remove", "--json")
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout)
    assert rows[-1]["total"]["adopted"] == 0
    assert secret.read_bytes() == b"not a leftover\n" and link.is_symlink()
    assert theirs.read_bytes() == b"someone else's\n"
    dry = _rows(machine.adopt("--dry-run", "--json").stdout)
    assert {"path": str(link), "skipped": "a symlink (never followed)"} in dry
    # The usual places' scan leaves other users' files out; named, one says why.
    assert str(theirs) not in json.dumps(dry)
    named = _rows(machine.adopt(str(theirs), "--dry-run", "--json").stdout)
    assert {"path": str(theirs), "skipped": "owned by another user"} in named


def test_a_path_given_is_adopted_whole_and_nothing_else(machine: Home) -> None:
    own = [machine.put(f"logs/build/{i}.log", b"line %d\n" % i) for i in range(3)]
    other = machine.put(LEFTOVERS["goose"], b"not asked for\n")
    done = machine.adopt(str(machine.root / "logs"), "--json")
    rows = _rows(done.stdout)
    assert sorted(str(r["path"]) for r in rows[:-1]) == sorted(str(p) for p in own)
    assert all(r["source"] == "path" for r in rows[:-1]) and other.exists()


def test_the_legacy_spill_file_of_a_stored_output_is_not_stored_twice(machine: Home) -> None:
    """The scan leaves it out, dry run and run alike; named, it is passed over
    with the artifact that holds it, by the dry run and the run alike."""
    run = run_cli(machine.env, "run", "--json", "--", "seq 1 100000")
    out = json.loads(run.stdout)["stdout"]
    spill, art = out["spill_path"], out["artifact"]["id"]
    assert spill and Path(spill).exists()
    for flags in ((), ("--dry-run",)):
        rows = _rows(machine.adopt("--from", "legacy", "--json", *flags).stdout)
        assert spill not in json.dumps(rows)
        total = rows[-1]["total"]
        assert total.get("adopted", total.get("files")) == 0, rows
    why = f"the legacy spill file of {art}, stored already"
    dry = machine.adopt(spill, "--dry-run")
    done = machine.adopt(spill)
    assert f"passing over  {spill}: {why}".encode() in dry.stdout
    assert f"passing over  {spill}: {why}".encode() in done.stdout
    assert b"would adopt 0 files" in dry.stderr and b"adopted 0 files" in done.stderr
    assert b"pass over 1" in dry.stderr and b"passed over 1" in done.stderr
    rows = _rows(machine.adopt(spill, "--json").stdout)
    assert {"path": spill, "skipped": why} in rows and rows[-1]["total"]["skipped"] == 1
    assert Path(spill).exists()


def test_a_store_that_cannot_be_reached_removes_nothing(machine: Home) -> None:
    path = machine.put(LEFTOVERS["goose"], b"precious\n")
    machine.env["OVERSPILL_URL"] = "http://127.0.0.1:9"  # nothing listens there
    machine.env["OVERSPILL_TOKEN"] = "x"
    done = machine.adopt("--remove")
    assert done.returncode != 0 and path.read_bytes() == b"precious\n"
    assert b"Traceback" not in done.stderr
