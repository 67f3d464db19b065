"""Bounds per principal on what holds the server's resources, so one caller
cannot degrade everyone else: followers (``?follow=true`` holds a connection for
as long as an artifact is written) and expensive reads (a grep, a large range
or download: each keeps a worker thread busy). Past a bound the request is
refused at once with 429 and ``Retry-After``, before any work starts, never
queued behind the others (a queue would park threads waiting on time).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from overspill.artifacts.errors import TooManyRequests

DEFAULT_FOLLOWERS = 32
DEFAULT_EXPENSIVE = 4
# A read of more than this many bytes counts as expensive.
LARGE_READ_BYTES = 1024 * 1024


class PrincipalLimit:
    def __init__(self, per_principal: int, what: str, *, retry_after_s: int = 1) -> None:
        self.per_principal = per_principal
        self._what = what  # "follows {n} artifacts", for the refusal
        self._retry_after = retry_after_s
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def acquire(self, principal: str) -> Callable[[], None]:
        """Take a slot; returns the function that gives it back (idempotent)."""
        with self._lock:
            held = self._held.get(principal, 0)
            if held >= self.per_principal:
                raise TooManyRequests(
                    f"{principal} already has {held} {self._what} running, the most allowed "
                    "at once; retry when one has finished",
                    retry_after_s=self._retry_after,
                )
            self._held[principal] = held + 1
        released = False

        def release() -> None:
            nonlocal released
            with self._lock:
                if released:
                    return
                released = True
                left = self._held[principal] - 1
                if left:
                    self._held[principal] = left
                else:
                    del self._held[principal]

        return release

    def held(self, principal: str) -> int:
        with self._lock:
            return self._held.get(principal, 0)
