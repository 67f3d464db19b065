"""Signs that storage is getting on, though no byte has moved yet.

A command's result waits on its storage for a bounded quiet time once the
command has ended (``shell.sink.close_bounded``): storage that makes no
headway for that long is taken to be stuck. Some work makes no visible
headway while it is plainly not stuck: a write retried through a database
restart (``artifacts.writing.db_retry``), the local server starting up for
the first overflow of a home (a second of imports, more on a loaded machine).
Each notes it here; a waiter counts the notes as headway.

A process-wide counter, read without a lock (an int read is atomic): only
whether it moved matters.
"""

from __future__ import annotations

_notes = 0


def note() -> None:
    """Storage is busy and alive (a retry, a server still starting)."""
    global _notes
    _notes += 1


def notes() -> int:
    """How many times it was noted in this process so far."""
    return _notes
