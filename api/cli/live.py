"""``overspill run`` on a terminal: the command's output as it is written, then
a short trailer instead of the model's view.

A person at a terminal wants to watch a build, not wait for its tail. The
executor hands each chunk (masked, as the store keeps it) to ``LiveTerminal``;
the streams stay pipes, so a command colours its output only when told to
(``--color=always``). Once the command ends, what the person has not seen on
screen is said in one line per stream: how much there was, and where the whole
of it is stored. An agent's harness that gives its commands a terminal would
otherwise read the whole output live, so ``auto`` stays off under a known
harness (its variables in ``HARNESS_VARIABLES``) and ``--no-live`` turns it off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import partial

from overspill.shell.capture import Echo

# Set by the harnesses in their commands' environment (Claude Code; Gemini CLI,
# which runs commands on a pty; Codex 0.171 sets CODEX_THREAD_ID and CODEX_CI, seen
# through the harness; CODEX_SANDBOX on macOS): a terminal there is the model's.
HARNESS_VARIABLES = ("CLAUDECODE", "GEMINI_CLI", "CODEX_THREAD_ID", "CODEX_CI", "CODEX_SANDBOX")


def wanted(choice: str, *, json_out: bool, env: Mapping[str, str]) -> bool:
    """Whether ``run`` streams live: ``on``/``off`` as set; ``auto`` when its
    stdout is a terminal no harness gave it. Never with ``--json``."""
    if json_out or choice == "off":
        return False
    if choice == "on":
        return True
    return os.isatty(1) and not any(env.get(name) for name in HARNESS_VARIABLES)


class LiveTerminal:
    """Writes both streams' chunks to the terminal as they come (stdout to fd 1,
    stderr to fd 2; one pump thread calls both). A terminal that goes away (EIO,
    EPIPE) ends the echo of that stream, never the command."""

    def __init__(self) -> None:
        self.ended_line = True  # whether the last byte written was a newline
        self._broken: set[int] = set()

    def echoes(self) -> dict[str, Echo]:
        return {"stdout": partial(self._write, 1), "stderr": partial(self._write, 2)}

    def _write(self, fd: int, chunk: bytes | memoryview) -> None:
        if fd in self._broken:
            return
        view = memoryview(chunk)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            self._broken.add(fd)
            return
        self.ended_line = chunk[-1] == 10
