"""Which files some running process holds open: a cleanup or an adoption never
takes a file a tool is still writing (or a reader still holds)."""

from __future__ import annotations

import os
import stat


def open_files() -> set[tuple[int, int]]:
    """(device, inode) of every regular file some process other than this one
    holds open (processes whose fds cannot be read are not seen)."""
    me = str(os.getpid())
    held: set[tuple[int, int]] = set()
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit() and p != me]
    except OSError:
        return held
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                held.add((st.st_dev, st.st_ino))
    return held
