"""A bound on concurrent followers (``?follow=true``) per principal.

A follower holds a connection open for as long as an artifact is written; one
principal must not be able to hold all of the server's. Past the bound the
request is refused at once with 429, before any streaming starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from overspill.artifacts.errors import TooManyRequests

DEFAULT_PER_PRINCIPAL = 32


class FollowerLimit:
    def __init__(self, per_principal: int = DEFAULT_PER_PRINCIPAL) -> None:
        self.per_principal = per_principal
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def acquire(self, principal: str) -> Callable[[], None]:
        """Take a slot; returns the function that gives it back (idempotent)."""
        with self._lock:
            held = self._held.get(principal, 0)
            if held >= self.per_principal:
                raise TooManyRequests(
                    f"{principal} already follows {held} artifacts, the most allowed at once; "
                    "close one, or read without follow=true"
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
