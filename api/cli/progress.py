"""A progress bar on stderr for long work (bytes, rate, percent where the size
is known), drawn by tqdm. Only on a terminal, not with ``--quiet``, and never
where it would mix with the data: when the data goes to the same terminal, the
bar's carriage returns would land inside the bytes on screen. A bar appears
only once the work has taken half a second, so quick verbs print nothing.

tqdm is imported only when a bar can be shown: the verbs start without it.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

_DELAY_S = 0.5  # work shorter than this shows no bar
_EVERY_S = 0.2


class Progress:
    def __init__(
        self,
        total: int | None,
        verb: str,
        *,
        data_to_stdout: bool = True,
        quiet: bool = False,
    ) -> None:
        shown = not quiet and sys.stderr.isatty() and not (data_to_stdout and sys.stdout.isatty())
        self._lock = threading.Lock()  # adopt's workers advance one bar
        self._bar: Any = None
        if shown:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                desc=verb,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                file=sys.stderr,
                delay=_DELAY_S,
                mininterval=_EVERY_S,
                leave=False,
                dynamic_ncols=True,
            )

    def advance(self, n: int) -> None:
        if self._bar is not None:
            with self._lock:
                self._bar.update(n)

    def finish(self) -> None:
        """Take the bar off the screen (the verb's own answer follows)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def add_quiet(parser: Any) -> None:
    """``--quiet`` on a verb that shows a bar."""
    parser.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
