"""The distribution installs one namespace, ``overspill.*``, and nothing generic.

A harness with its own ``api`` or ``shell`` package must be able to install
overspill beside it; so the wheel is built from this checkout and inspected, and
imported from a directory of its own with the editable install switched off.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (found,) = out.glob("overspill-*.whl")
    return found


def test_the_wheel_holds_only_the_overspill_namespace(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert {t for t in tops if not t.endswith((".dist-info", ".data"))} == {"overspill"}
    # The one file outside the package: the harness shell, installed as a script
    # because a harness starts it once per command (no Python start-up there).
    assert [n for n in names if ".data/" in n] == [
        next(t for t in tops if t.endswith(".data")) + "/scripts/overspill-shell"
    ]
    for expected in (
        "overspill/artifacts/store.py",
        "overspill/shell/executor.py",
        "overspill/api/cli/__init__.py",
        "overspill/api/py.typed",
        "overspill/artifacts/py.typed",
        "overspill/shell/py.typed",
        "overspill/api/server/static/app.js",
        "overspill/migrations/env.py",
        "overspill/migrations/script.py.mako",
        "overspill/migrations/versions/0001_initial_schema.py",
    ):
        assert expected in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "overspill = overspill.api.cli:entry" in zipfile.ZipFile(wheel).read(entry).decode()


_PROBE = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower()
                    and "editable" not in getattr(f, "__name__", "").lower()]
sys.path.insert(0, sys.argv[1])
import overspill.artifacts, overspill.shell, overspill.api, overspill.api.cli
assert overspill.api.__file__.startswith(sys.argv[1]), overspill.api.__file__
for generic in ("api", "shell", "artifacts", "migrations"):
    try:
        __import__(generic)
    except ModuleNotFoundError:
        continue
    raise SystemExit(f"{generic} is importable")
import os
from overspill.artifacts.db.engine import migrations_dir
assert os.path.isfile(os.path.join(migrations_dir(), "env.py")), migrations_dir()
assert migrations_dir().startswith(sys.argv[1]), migrations_dir()
from overspill.api.server.app import create_app
create_app()  # the UI's assets and the MCP endpoint resolve inside the package
print("ok")
"""


def test_an_installed_wheel_imports_as_overspill_and_nothing_else(
    wheel: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), wheel],
        check=True,
        capture_output=True,
    )
    probe = subprocess.run(
        [sys.executable, "-I", "-c", _PROBE, str(site)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "ok"
