"""The compatibility layer's legacy spill files, with the old guarantees.

Consumers that still read ``spill_path`` get exactly what they had: one private
0700 directory per process under the temp dir, 0600 files created exclusively
(never through a symlink), discarded rather than advertised when incomplete, and a
start-up sweep that only ever deletes what is clearly ours.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
import threading
import time
from collections.abc import Callable
from typing import Any

# Imported where used (tempfile, logging): a command that never overflows makes
# no spill file, and ``overspill run`` must not pay ~10 ms to import them.


def _log() -> Any:
    import logging

    return logging.getLogger(__name__)


def temp_dir() -> str:
    import tempfile

    return tempfile.gettempdir()


PREFIX = "dsh-subprocess-"


class SpillDirectory:
    """The per-process private directory, made on first use."""

    _lock = threading.Lock()
    _path: str | None = None
    _counter = itertools.count(1)

    @classmethod
    def path(cls) -> str:
        with cls._lock:
            if cls._path is None or not os.path.isdir(cls._path):
                import tempfile

                cls._path = tempfile.mkdtemp(prefix=PREFIX)  # mkdtemp: mode 0700
            return cls._path

    @classmethod
    def next_name(cls, stream: str) -> str:
        n = next(cls._counter)
        return f"{PREFIX}{os.getpid()}-{n}-{os.urandom(6).hex()}-{stream}.log"


class CappedFile:
    """A private file that holds a whole stream or nothing: created exclusively
    (mode 0600, never through a link), discarded rather than reported once the
    stream passes ``cap`` or a write fails. Never raises: trouble disables it and
    ``error`` says why."""

    what = "spill file"

    def __init__(self, make_path: Callable[[], str | os.PathLike[str]], cap: int) -> None:
        self._cap = cap
        self._written = 0
        self._fd: int | None = None
        self.path: str | None = None
        self.error: str | None = None
        try:
            path = make_path()
            self._fd = os.open(
                path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
            )
            self.path = os.fspath(path)
        except OSError as exc:
            self.error = f"{self.what} not created: {exc.strerror or exc}"

    @property
    def active(self) -> bool:
        return self._fd is not None

    def write(self, data: bytes | memoryview) -> None:
        if self._fd is None:
            return
        if self._written + len(data) > self._cap:
            # Past the cap the file would be incomplete: it is never advertised.
            self._discard(f"stream exceeded the {self.what} cap")
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            self._written += len(data)
        except OSError as exc:
            self._discard(f"{self.what} write failed: {exc.strerror}")

    def close(self) -> str | None:
        """Close and return the path to report, or None if it must not be reported."""
        if self._fd is None:
            return None
        fd, self._fd = self._fd, None
        try:
            close_fd(fd)
        except OSError as exc:
            self.error = f"{self.what} close failed: {exc.strerror}"
            self.path = None
            return None
        return self.path

    def _discard(self, why: str) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        if self.path:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        self.path = None
        self.error = why


class SpillFile(CappedFile):
    """One stream's legacy spill file in the per-process directory."""

    def __init__(self, stream: str, cap: int) -> None:
        super().__init__(
            lambda: os.path.join(SpillDirectory.path(), SpillDirectory.next_name(stream)), cap
        )


def close_fd(fd: int) -> None:
    """os.close, kept separate so tests can make a close fail as a full disk does."""
    os.close(fd)


def sweep_old_spill_files(
    max_age_days: float, tmpdir: str | None = None, *, now: float | None = None
) -> int:
    """Delete legacy spill files older than the cutoff, never one a running process
    holds open. Never raises; returns count. ``now``: the clock (tests)."""
    if max_age_days <= 0:
        return 0
    from .open_files import open_files

    held = open_files()
    removed = 0
    cutoff = (time.time() if now is None else now) - max_age_days * 86400
    base = tmpdir or temp_dir()
    try:
        entries = list(os.scandir(base))
    except OSError as exc:
        _log().warning("spill sweep: cannot list %s: %s", base, exc.strerror)
        return 0
    uid = os.geteuid()
    own_dir = SpillDirectory._path
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        try:
            st = os.lstat(entry.path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            _log().warning("spill sweep: skipping %s: not a plain directory", entry.path)
            continue
        if st.st_uid != uid:
            continue  # another user's, on a shared temp dir: theirs to sweep, quietly
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            _log().warning("spill sweep: skipping %s: writable by others", entry.path)
            continue
        removed += sweep_dir(entry.path, cutoff, SPILL_NAME, held)
        if own_dir is None or entry.path != own_dir:
            try:
                os.rmdir(entry.path)  # only succeeds when empty
            except OSError:
                pass
    return removed


SPILL_NAME = re.compile(rf"{PREFIX}[0-9]+-[0-9]+-[0-9a-f]{{12}}-[a-z]+\.log\Z")


def sweep_dir(
    path: str, cutoff: float, shaped: re.Pattern[str], held: set[tuple[int, int]] | None = None
) -> int:
    """Delete regular files in ``path`` older than ``cutoff`` — only those named as
    overspill names them (``shaped``) and owned by the effective user: a directory
    that looks like ours may still hold someone else's file; never one in ``held``
    (open in a running process). A file's age is from the newer of its
    modification and change times: ``touch -d``, ``cp -p`` or an unpacked archive
    can set the first back, never the second, so a file made today is never
    taken for an old one."""
    removed = 0
    euid = os.geteuid()
    try:
        dfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        _log().warning("spill sweep: cannot open %s: %s", path, exc.strerror)
        return 0
    try:
        for name in os.listdir(dfd):
            if not shaped.match(name):
                continue
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode) or st.st_uid != euid:
                    _log().warning(
                        "spill sweep: skipping %s/%s: not a regular file of ours", path, name
                    )
                    continue
                if held and (st.st_dev, st.st_ino) in held:
                    continue  # a process still has it open
                if max(st.st_mtime, st.st_ctime) < cutoff:
                    os.unlink(name, dir_fd=dfd)
                    removed += 1
            except OSError as exc:
                _log().warning("spill sweep: skipping %s/%s: %s", path, name, exc.strerror)
    except OSError as exc:
        _log().warning("spill sweep: cannot list %s: %s", path, exc.strerror)
    finally:
        os.close(dfd)
    return removed
