"""Docstrings name modules and files that exist: a module moved or renamed
leaves no pointer to nowhere behind (``api/wire.py``, a ``saved`` module).

Checked, in every module, class and function docstring of the three packages:
a ``path/like.py`` (relative to the repository or to the module's folder), a
dotted ``api.x.y`` / ``artifacts.x`` / ``shell.x`` (a module, or a name in one),
and in a package's ``__init__`` the bare ``names`` it lists as its modules (or
as the packages beside it that it may import)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("api", "artifacts", "shell")
# Bare words an ``__init__`` docstring quotes that are not its modules: a tool's
# name, the command's, the top-level packages.
NOT_MODULES = {"bash", "overspill", "api", "artifacts", "shell"}

_PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)*(?:\.(?:py|js|md|toml|txt|css|html)|/)")
_DOTTED = re.compile(r"(?:overspill\.)?(?:api|artifacts|shell|migrations)(?:\.\w+)+")


def _docstrings(path: Path) -> list[tuple[ast.AST, str]]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    out: list[tuple[ast.AST, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, kinds) and (doc := ast.get_docstring(node, clean=False)):
            out.append((node, doc))
    return out


def _resolves(dotted: str) -> bool:
    parts = dotted.removeprefix("overspill.").split(".")
    for i in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module("overspill." + ".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(found, attr):
                return False
            found = getattr(found, attr)
        return True
    return False


def _defined_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _dangling(path: Path) -> list[str]:
    found = []
    for node, doc in _docstrings(path):
        for ref in re.findall(r"``([^`\s]+)``", doc):
            ref = ref.removesuffix("()")
            if (_PATH.fullmatch(ref) and "/" in ref) or ref.endswith(".py"):
                if not ((ROOT / ref).exists() or (path.parent / ref).exists()):
                    found.append(ref)
            elif _DOTTED.fullmatch(ref):
                if not _resolves(ref):
                    found.append(ref)
            elif (
                path.name == "__init__.py"
                and isinstance(node, ast.Module)
                and re.fullmatch(r"[a-z][a-z_]*", ref)
                and ref not in NOT_MODULES
            ):
                # its own modules, or its siblings' (a package names what it may import)
                module = any(
                    (here / f"{ref}.py").exists() or (here / ref).is_dir()
                    for here in (path.parent, path.parent.parent)
                )
                if not module and ref not in _defined_in(path):
                    found.append(ref)
    return found


def test_docstrings_name_only_modules_and_files_that_exist() -> None:
    dangling = {
        str(path.relative_to(ROOT)): refs
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if (refs := _dangling(path))
    }
    assert dangling == {}


def test_the_check_finds_a_pointer_to_nowhere(tmp_path: Path) -> None:
    bad = tmp_path / "__init__.py"
    bad.write_text(
        '"""Holds ``gone`` and ``api.client.wire``; errors in ``api/wire.py``,\n'
        'a map in ``api.wire``, a name ``shell.config.NO_SUCH``."""\n'
    )
    assert _dangling(bad) == ["gone", "api/wire.py", "api.wire", "shell.config.NO_SUCH"]
