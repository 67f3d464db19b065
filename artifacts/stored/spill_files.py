"""The legacy spill file of an artifact: a private copy of a command stream that
the compatibility layer writes beside the artifact (``shell.spill``), recorded
on the artifact by a writer on the store's own machine so it follows the
artifact's life: deleted with its bytes (expiry, delete, eviction), counted in
its owner's usage meanwhile.

Deleting a path taken from a row must never delete the wrong file, so the file
is checked where it is removed: a regular file (lstat, never through a link),
owned by this user, named as the compatibility layer names them, in a
directory of this user's that no one else can write to. Anything else is left.
"""

from __future__ import annotations

import os
import re
import stat

# shell.spill's names: dsh-subprocess-<pid>-<n>-<12 hex>-<stream>.log in a
# dsh-subprocess-XXXXXXXX directory (the store cannot import the shell).
_NAME = re.compile(r"dsh-subprocess-[0-9]+-[0-9]+-[0-9a-f]{12}-(?:stdout|stderr)\.log\Z")
_DIR = re.compile(r"dsh-subprocess-[A-Za-z0-9_]+\Z")


def is_spill_path(path: str) -> bool:
    head, name = os.path.split(path)
    return (
        os.path.isabs(path) and bool(_NAME.match(name)) and bool(_DIR.match(os.path.basename(head)))
    )


def delete_spill_file(path: str) -> int:
    """Remove the spill file at ``path`` if it is one of ours; the bytes freed
    (0 if it was gone, or not ours to remove). Never raises."""
    if not is_spill_path(path):
        return 0
    uid = os.geteuid()
    parent = os.path.dirname(path)
    try:
        pst = os.lstat(parent)
        if not stat.S_ISDIR(pst.st_mode) or pst.st_uid != uid or pst.st_mode & 0o022:
            return 0
        dfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return 0
    try:
        name = os.path.basename(path)
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
            return 0
        os.unlink(name, dir_fd=dfd)
        return st.st_size
    except OSError:
        return 0
    finally:
        os.close(dfd)
        try:
            os.rmdir(parent)  # the process's directory, once its last file is gone
        except OSError:
            pass
