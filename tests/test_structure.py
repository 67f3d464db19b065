"""The store's modules import one way: each imports alone in a fresh interpreter,
the import contracts hold, and a module past ~400 lines says why in its docstring."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"


def _modules() -> list[str]:
    names = []
    for path in sorted(ARTIFACTS.rglob("*.py")):
        rel = path.relative_to(ARTIFACTS).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        names.append(".".join(["overspill", "artifacts", *parts]))
    return names


def test_every_store_module_imports_alone() -> None:
    script = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    for loaded in [m for m in sys.modules if m.startswith('overspill')]:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *_modules()], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr


def test_the_import_contracts_hold() -> None:
    """The layers, the forbidden imports and the no-cycle rule written in
    pyproject.toml ([tool.importlinter]), checked on the installed package
    (a part of the store importing the store is a cycle there)."""
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "0 broken" in done.stdout


_WHY_LONG = re.compile(r"\b[Aa]bout (\d{3,}) lines\b[^.]*\bbecause\b")


def test_a_long_module_says_how_long_it_is_and_why() -> None:
    """Past 400 lines a module's docstring gives its length (within 10%) and a
    reason ("about 460 lines because ..."): a stale figure or a missing reason fails."""
    for path in [
        *ARTIFACTS.rglob("*.py"),
        *(ROOT / "shell").rglob("*.py"),
        *(ROOT / "api").rglob("*.py"),
    ]:
        text = path.read_text()
        lines = text.count("\n")
        if lines <= 400:
            continue
        doc = " ".join((ast.get_docstring(ast.parse(text)) or "").split())
        m = _WHY_LONG.search(doc)
        assert m is not None, f"{path.name} has {lines} lines and does not say why"
        assert abs(int(m.group(1)) - lines) <= lines // 10, (path.name, lines, m.group(1))
