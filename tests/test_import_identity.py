"""One import identity: the folders install as ``overspill.*`` and nothing else,
in the test environment as in a user's."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_bare_folder_names_are_not_importable_in_the_tests() -> None:
    for generic in ("artifacts", "shell", "api", "migrations"):
        assert importlib.util.find_spec(generic) is None, f"{generic} is importable"


def test_overspill_modules_are_one_module_each() -> None:
    import overspill.artifacts.errors as a

    b = importlib.import_module("overspill.artifacts.errors")
    assert a is b and a.NotFound is b.NotFound


def test_a_verb_started_from_the_repository_root_loads_overspill_from_the_install() -> None:
    probe = (
        "import overspill.api.cli, sys; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('api','shell','artifacts')))"
    )
    out = subprocess.run(
        [sys.executable, "-P", "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_folder_imported_by_its_bare_name_refuses_and_names_the_right_one() -> None:
    for generic in ("api", "shell", "artifacts"):
        out = subprocess.run(
            [sys.executable, "-c", f"import {generic}"], cwd=ROOT, capture_output=True, text=True
        )
        assert out.returncode != 0
        assert f"import it as overspill.{generic}" in out.stderr.splitlines()[-1]
