"""This process's own standard streams. Standard library ``os`` only: every verb
calls it at its start, before it knows whether it will run a command."""

from __future__ import annotations

import os


def blocking_output() -> None:
    """Our output is written whole, whatever the parent handed us: on a pipe set
    non-blocking (O_NONBLOCK is the pipe's, shared with whoever else holds it) a
    write the reader was not ready for raised, and the exit's flush dropped the
    rest -- `run --json` printed 64 KiB of its answer and exited 0."""
    for fd in (1, 2):
        try:
            if not os.get_blocking(fd):
                os.set_blocking(fd, True)
        except OSError:  # closed, or not a file: nothing to write whole
            pass
