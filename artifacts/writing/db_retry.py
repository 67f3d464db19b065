"""A write retried while the database is briefly away.

A PostgreSQL restart or failover refuses connections for a second or so, and
drops the ones in use: a write in that window fails with ``DatabaseUnavailable``
although the database is back a moment later. A producer (a command's writer,
never a server's request thread, which must not wait on time) calls its
idempotent writes through ``retrying`` so that such a window costs a short,
bounded delay instead of the output. Only calls that are safe to repeat go
through it: a publish of the same batch (the store answers a batch it already
has as published) or an append at an explicit offset.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from overspill.artifacts import headway
from overspill.artifacts.errors import DatabaseUnavailable

T = TypeVar("T")

PRODUCER_RETRY_S = 5.0
"""How long a command's writer keeps retrying: a fast restart here is ~1 s
unloaded and took over 2 s with the suite running beside it; the command's
result waits on its end at most this much longer."""

FIRST_PAUSE_S = 0.05
LONGEST_PAUSE_S = 0.5


def retrying(
    call: Callable[[], T], within_s: float, give_up: Callable[[], bool] | None = None
) -> T:
    """``call()``, again after a growing pause while it fails with
    DatabaseUnavailable, until ``within_s`` seconds have passed (then its error
    stands) or ``give_up()`` says the caller stopped waiting."""
    deadline = time.monotonic() + within_s
    pause = FIRST_PAUSE_S
    while True:
        try:
            return call()
        except DatabaseUnavailable:
            if time.monotonic() + pause > deadline or (give_up is not None and give_up()):
                raise
            headway.note()  # a retry is storage working, not storage stuck
            time.sleep(pause)
            pause = min(pause * 2, LONGEST_PAUSE_S)
