"""The data directory of the embedded default (``OVERSPILL_HOME``): the SQLite
file, ``blobs/`` and the local server's socket live inside it.

It is private: made 0700, or tightened if it is ours and looser (a home made by
hand, or by an older release); one that is not ours is refused. Directories are
only ever created for it: a SQLite path elsewhere must already have its parent
(a typo in ``OVERSPILL_DATABASE_URL`` must not quietly start an empty store).
Standard library only.
"""

from __future__ import annotations

import errno
import os
import stat

from overspill.artifacts.errors import ConfigurationError, StorageUnavailable


def ensure_home(path: str | os.PathLike[str]) -> str:
    """``path`` as a private directory of this user (created with its parents)."""
    path = os.path.abspath(path)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise StorageUnavailable(
            f"cannot create data directory {path}: {describe_os_error(exc)}"
        ) from exc
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise ConfigurationError(
            f"data directory {path} is not a directory owned by this user; "
            "set OVERSPILL_HOME to one that is"
        )
    if not os.access(path, os.W_OK):  # a read-only mount, or no write bit for us
        probe = os.statvfs(path)
        why = "the file system is read-only" if probe.f_flag & os.ST_RDONLY else "not writable"
        raise StorageUnavailable(
            f"data directory {path}: {why}; set OVERSPILL_HOME to a writable directory"
        )
    if st.st_mode & 0o077:
        try:
            os.chmod(path, 0o700)
        except OSError as exc:
            raise ConfigurationError(
                f"data directory {path} is readable by others and cannot be made private: "
                f"{describe_os_error(exc)}"
            ) from exc
    return path


def describe_os_error(exc: OSError) -> str:
    """The reason as a person reads it: a read-only or full file system is named."""
    if exc.errno == errno.EROFS:
        return "the file system is read-only"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full"
    return exc.strerror or str(exc)
