"""Following a growing artifact: the polling rhythm, shared by every follower.

A writer may live in another process (``overspill run``), so growth is seen by
polling the metadata; the wait between polls starts short (a live command's
output shows up within a tenth of a second) and doubles while nothing changes,
so hundreds of idle followers cost a few queries a second, not thousands. The
server's follower waits on the event loop with this rhythm, never in a thread.
"""

from __future__ import annotations

POLL_MIN_S = 0.05
POLL_MAX_S = 1.0


class Backoff:
    def __init__(self) -> None:
        self._delay = POLL_MIN_S

    def reset(self) -> None:
        """Something new arrived: poll soon again."""
        self._delay = POLL_MIN_S

    def next_wait(self) -> float:
        """Seconds to wait before the next poll (doubling up to POLL_MAX_S)."""
        delay = self._delay
        self._delay = min(POLL_MAX_S, delay * 2)
        return delay
