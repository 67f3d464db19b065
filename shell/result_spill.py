"""The compatibility layer's legacy tool-result spill files.

The replaced system spills any tool's oversized result through
``saveText({owner: {sessionId}, source, suggestedName, content})`` into
``<root>/session-<sha256(sessionId)[:12]>/<12 hex>-<safe name>`` and shows the
model that path. Consumers that read the path keep working while this layer is
on: the same layout, a private (0700) root made lazily under the temp dir
(``dsh-spill-XXXXXX``) unless one is configured, files created exclusively with
mode 0600 and never through a link, and a start-up sweep that only deletes
regular files in ``session-<12 hex>`` directories it can prove are its own.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import stat
import string
import tempfile
import threading
import time
from pathlib import Path

from .spill import CappedFile, sweep_dir

log = logging.getLogger(__name__)

ROOT_PREFIX = "dsh-spill-"
LEGACY_HINT = "Read it in pages with offset/limit, or search it with grep."
_ROOT_RE = re.compile(r"dsh-spill-[A-Za-z0-9]{6}\Z")
_SESSION_RE = re.compile(r"session-[0-9a-f]{12}\Z")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
RESULT_NAME = re.compile(r"[0-9a-f]{12}-[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}\Z")
_ALNUM = string.ascii_letters + string.digits


def safe_name(suggested: str | None) -> str:
    """The suggested name reduced to one harmless path segment."""
    base = (suggested or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = _UNSAFE.sub("_", base).lstrip(".")[:100]
    return base or "result.txt"


def session_dir_name(session_id: str | None) -> str:
    return "session-" + hashlib.sha256((session_id or "").encode()).hexdigest()[:12]


class LegacyResultRoot:
    """The root directory: configured, or one private temp dir per process."""

    _lock = threading.Lock()
    _made: Path | None = None

    _inside: dict[Path, Path] = {}

    def __init__(self, configured: str | None = None) -> None:
        self._configured = Path(configured) if configured else None

    def path(self) -> Path:
        """The configured directory when it is private and ours (made 0700 if it
        did not exist); a private ``dsh-spill-XXXXXX`` made inside it when it is
        shared (0755, a sticky 1777 like the temp dir): a directory overspill did
        not create never has its mode changed."""
        with LegacyResultRoot._lock:
            if self._configured is not None:
                if _private_dir(self._configured, shared_ok=True):
                    return self._configured
                made = LegacyResultRoot._inside.get(self._configured)
                if made is None or not made.is_dir():
                    made = LegacyResultRoot._inside[self._configured] = _make_root(self._configured)
                return made
            made = LegacyResultRoot._made
            if made is None or not made.is_dir():
                made = LegacyResultRoot._made = _make_root(Path(tempfile.gettempdir()))
            return made


def _make_root(tmp: Path) -> Path:
    for _ in range(20):
        path = tmp / (ROOT_PREFIX + "".join(secrets.choice(_ALNUM) for _ in range(6)))
        try:
            os.mkdir(path, 0o700)  # fails on any existing name, links included
            return path
        except FileExistsError:
            continue
    raise OSError("could not create a private spill directory")


def _private_dir(path: Path, *, shared_ok: bool = False) -> bool:
    """Create ``path`` 0700 and answer True, or True if it already is a private
    directory of ours. A real directory open to others answers False when
    ``shared_ok`` (the caller makes a private one inside); anything else raises
    with a message naming the path. The mode of an existing directory is never
    changed."""
    try:
        os.mkdir(path, 0o700)
        return True
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(f"{path} is not a directory (a link or a file); not writing there")
    if st.st_uid == os.geteuid() and not st.st_mode & 0o077:
        return True
    if shared_ok:
        return False
    raise OSError(
        f"{path} is open to other users (mode {stat.S_IMODE(st.st_mode):04o}, "
        f"owner uid {st.st_uid}); not writing there"
    )


class LegacyResultFile(CappedFile):
    """One result's legacy file: ``<root>/session-<hash>/<12 hex>-<safe name>``."""

    what = "legacy result file"

    def __init__(self, root: LegacyResultRoot, session_id: str | None, name: str | None, cap: int):
        def make_path() -> Path:
            session = root.path() / session_dir_name(session_id)
            _private_dir(session)
            return session / f"{secrets.token_hex(6)}-{safe_name(name)}"

        super().__init__(make_path, cap)


def sweep_old_result_files(
    max_age_days: float,
    root: str | None = None,
    tmpdir: str | None = None,
    *,
    now: float | None = None,
) -> int:
    """Delete legacy result files older than the cutoff (never one a running
    process holds open), under the configured root and every ``dsh-spill-XXXXXX``
    root of ours in the temp dir. Never raises."""
    if max_age_days <= 0:
        return 0
    cutoff = (time.time() if now is None else now) - max_age_days * 86400
    roots: list[str] = [root] if root else []
    for base in [tmpdir or tempfile.gettempdir(), *roots]:
        try:
            roots += [e.path for e in os.scandir(base) if _ROOT_RE.match(e.name)]
        except FileNotFoundError:
            continue  # a configured root not made yet
        except OSError as exc:
            log.warning("result sweep: cannot list %s: %s", base, exc.strerror)
    from .open_files import open_files

    held = open_files()
    removed = 0
    for path in roots:
        if not _ours(path):
            continue
        try:
            sessions = [e.path for e in os.scandir(path) if _SESSION_RE.match(e.name)]
        except OSError as exc:
            log.warning("result sweep: cannot list %s: %s", path, exc.strerror)
            continue
        for session in sessions:
            if not _ours(session):
                continue
            removed += sweep_dir(session, cutoff, RESULT_NAME, held)
            try:
                os.rmdir(session)  # only succeeds when empty
            except OSError:
                pass
    return removed


def _ours(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        log.warning("result sweep: skipping %s: not a plain directory", path)
        return False
    if st.st_uid != os.geteuid():
        return False  # another user's, on a shared temp dir: theirs to sweep, quietly
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        log.warning("result sweep: skipping %s: writable by others", path)
        return False
    return True
