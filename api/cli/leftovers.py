"""Where other tools leave oversized outputs on disk, and which of those files
``overspill adopt`` may take.

Each source is a tool and the places it writes (as its own code names them):

- claude-code: ``~/.claude/projects/*/*/tool-results/*`` (a session's large tool
  results; ``CLAUDE_CONFIG_DIR`` moves ``~/.claude``) and
  ``$TMPDIR/claude-*/**/tasks/*.output`` (background tasks' output).
- opencode: ``~/.local/share/opencode/tool-output/*`` (``XDG_DATA_HOME``).
- gemini-cli: ``~/.gemini/tmp/*/tool-outputs/**``.
- goose: ``$TMPDIR/goose_mcp_responses/mcp_response_*.txt``.
- legacy: ``$TMPDIR/dsh-subprocess-*/*`` and ``$TMPDIR/dsh-spill-*`` (the spill
  files of the executor overspill replaces, and of its compatibility layer).

A file is a candidate only if it is a regular file reached without following a
symlink (no link on the way is followed either), owned by the caller, and not
held open by any process (``/proc/*/fd``): a tool still writing it, or a reader
holding it, keeps it. The walk is bounded in depth and reads no file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from overspill.shell.open_files import open_files

_DEPTH = 6  # directories below a source's root


@dataclass(frozen=True)
class Leftover:
    path: str
    source: str  # the tool that left it
    size: int
    mtime: float
    device: int
    inode: int


OTHER_USER = "owned by another user"


@dataclass(frozen=True)
class Skipped:
    path: str
    why: str


@dataclass(frozen=True)
class _Place:
    root: Path
    dirs: tuple[str, ...]  # a glob per directory level below root ("" = any depth)
    files: str  # glob of the file names


def _places(env: Mapping[str, str]) -> dict[str, list[_Place]]:
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    tmp = Path(env.get("TMPDIR") or "/tmp")
    claude = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
    data = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else home / ".local/share"
    return {
        "claude-code": [
            _Place(claude / "projects", ("*", "*", "tool-results"), "*"),
            _Place(tmp, ("claude-*", "", "tasks"), "*.output"),
        ],
        "opencode": [_Place(data / "opencode" / "tool-output", (), "*")],
        "gemini-cli": [_Place(home / ".gemini" / "tmp", ("*", "tool-outputs", ""), "*")],
        "goose": [_Place(tmp / "goose_mcp_responses", (), "mcp_response_*.txt")],
        "legacy": [
            _Place(tmp, ("dsh-subprocess-*",), "*"),
            _Place(tmp, (), "dsh-spill-*"),
        ],
    }


SOURCES = ("claude-code", "opencode", "gemini-cli", "goose", "legacy")


def find(
    sources: list[str], paths: list[str], env: Mapping[str, str]
) -> Iterator[Leftover | Skipped]:
    """Every candidate file (and every file passed over, with the reason) of the
    named sources and under the given paths (``path`` as the source)."""
    held = open_files()
    uid = os.getuid()
    seen: set[tuple[int, int]] = set()
    places = _places(env)
    walks: list[tuple[str, Iterator[str]]] = []
    for source in sources:
        for place in places[source]:
            walks.append((source, _walk(place.root, place.dirs, place.files)))
    for given in paths:
        walks.append(("path", _walk_given(Path(given))))
    for source, files in walks:
        for path in files:
            found = _check(path, source, uid, held)
            if isinstance(found, Leftover):
                if (found.device, found.inode) in seen:
                    continue
                seen.add((found.device, found.inode))
            yield found


def _check(path: str, source: str, uid: int, held: set[tuple[int, int]]) -> Leftover | Skipped:
    try:
        st = os.lstat(path)
    except OSError as exc:
        return Skipped(path, exc.strerror or "cannot be read")
    if stat.S_ISLNK(st.st_mode):
        return Skipped(path, "a symlink (never followed)")
    if not stat.S_ISREG(st.st_mode):
        return Skipped(path, "not a regular file")
    if st.st_uid != uid:
        return Skipped(path, OTHER_USER)
    if (st.st_dev, st.st_ino) in held:
        return Skipped(path, "open in a running process")
    return Leftover(path, source, st.st_size, st.st_mtime, st.st_dev, st.st_ino)


def _walk(root: Path, dirs: tuple[str, ...], files: str) -> Iterator[str]:
    """Files matching ``files`` in the directories ``dirs`` names below ``root``;
    "" in ``dirs`` stands for any number of levels (up to _DEPTH)."""
    if not _is_dir(root):
        return
    yield from _descend(str(root), list(dirs), files, 0)


def _descend(at: str, dirs: list[str], files: str, depth: int) -> Iterator[str]:
    from fnmatch import fnmatchcase

    if depth > _DEPTH:
        return
    try:
        entries = sorted(os.scandir(at), key=lambda e: e.name)
    except OSError:
        return
    if not dirs:
        for e in entries:
            if fnmatchcase(e.name, files) and not e.is_dir(follow_symlinks=False):
                yield e.path
        return
    head, rest = dirs[0], dirs[1:]
    for e in entries:
        if not e.is_dir(follow_symlinks=False):
            continue
        if head == "":
            yield from _descend(e.path, dirs, files, depth + 1)  # one level deeper
        elif fnmatchcase(e.name, head):
            yield from _descend(e.path, rest, files, depth + 1)
    if head == "":
        yield from _descend(at, rest, files, depth + 1)  # zero levels


def _walk_given(path: Path) -> Iterator[str]:
    """A path on the command line: the file, or every file below the directory."""
    try:
        st = os.lstat(path)
    except OSError:
        yield str(path)  # reported as unreadable by _check
        return
    if not stat.S_ISDIR(st.st_mode):
        yield str(path)
        return
    yield from _descend(str(path), [""], "*", 0)


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
