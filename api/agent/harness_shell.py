"""``overspill-shell COMMAND``: a harness's own shell, through overspill, changing
nothing the person chose.

Claude Code runs each Bash command as ``SHELL -c -l "PREFIX 'COMMAND'"`` when
``CLAUDE_CODE_SHELL_PREFIX`` is set, which ``overspill install --shell
claude-code`` sets to the ``overspill-shell`` script (``scripts/``). Claude Code
also starts its MCP servers and hooks through the prefix; the script runs those
unchanged, with no Python, and hands Bash calls to ``entry`` here. By then
the harness has decided on the command -- its permission rules, modes and flags
saw the command exactly as the model wrote it -- and its sandbox, if on, holds
this process too. So this only runs what was let through, as the harness would
have: the same shell (the one its snapshot is for), its environment and stdin as
given, its deadline (none of overspill's), both streams into the one file it
reads them from, in the order written. What differs is only what a long output
does: the first bytes are written as they come, and past the harness's cut the
rest is stored as an artifact (inside a sandbox: handed out to the harness's
hook, ``api.client.handoff``) and the model reads the gap, the tail and the
call that reads on (``shell.live_head``).

If anything fails before the command starts (a broken install, a bad setting),
the command runs as the harness would have run it, without overspill.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from overspill.api.settings import Settings
    from overspill.shell.sink import OutputSink


class HarnessShellSpec:
    """What one harness's shell needs: where its session id is, and the cut."""

    def __init__(self, session_env: str, head: int, tail: int) -> None:
        self.session_env = session_env
        self.head = head
        self.tail = tail


def spec_of(harness: str) -> HarnessShellSpec:
    from overspill.api.agent.harnesses import SHELL_VIEWS

    view = SHELL_VIEWS.get(harness)
    if view is None:
        raise ValueError(f"no harness shell {harness!r} (known: {', '.join(SHELL_VIEWS)})")
    return HarnessShellSpec(view.session_env, view.head, view.tail)


def shell_of(command: str) -> str:
    """The shell the harness built ``command`` for: Claude Code sources a
    snapshot of the person's shell first, named for it (``snapshot-zsh-…``)."""
    return "zsh" if "/shell-snapshots/snapshot-zsh-" in command else "bash"


_EVAL = r" && eval ('(?:[^']|'\\'')*')(?: < /dev/null)? && pwd -P >\| "


def label_of(command: str) -> str | None:
    """The model's command inside Claude Code's wrapping (``… && eval 'CMD' &&
    pwd -P >| FILE``), for the artifact's source; None where it is not found."""
    import re
    import shlex

    m = re.search(_EVAL, command)
    if m is None:
        return None
    try:
        words = shlex.split(m.group(1))
    except ValueError:
        return None
    return words[0] if len(words) == 1 else None


HARNESS = "claude-code"
"""The harness that runs its shell through a prefix (the others: ``api.agent.hooks``)."""


def main(argv: list[str]) -> int:
    """``argv``: the one command string the harness passes."""
    command = argv[-1] if argv else ""
    shell = shell_of(command)
    try:
        prepared = _prepare(HARNESS, command, shell)
    except Exception as exc:  # the command has not started: it runs without us
        print(f"overspill: {exc}; the command runs without overspill", file=sys.stderr)
        sys.stderr.flush()
        os.execvp(shell, [shell, "-c", command])
    return prepared()


def entry() -> None:
    """The console script ``overspill-shell``."""
    from overspill.shell.stdio import blocking_output

    blocking_output()
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _prepare(harness: str, command: str, shell: str) -> Callable[[], int]:
    """Everything that can fail before the command starts; returns the run."""
    from overspill.api.settings import Settings
    from overspill.shell import ExecRequest, Executor
    from overspill.shell.live_head import LiveHead
    from overspill.shell.process import abort_on_signals
    from overspill.shell.results import exit_status
    from overspill.shell.spec import HarnessShell

    spec = spec_of(harness)
    if not command.strip():
        raise ValueError("no command string was given")
    settings = Settings.load()
    session = os.environ.get(spec.session_env) or settings.client.session_id
    settings = settings._replace(client=settings.client.replace(session_id=session))
    window = spec.head + spec.tail
    # No legacy spill file: the harness reads no spill path, and a copy in the temp
    # dir of every long output is what overspill is here to end.
    shell_settings = settings.shell.replace(max_output_bytes=window, legacy_spill=False)
    merged = _same_file(1, 2)
    echoes = {"stdout": LiveHead(1, spec.head, spec.tail)}
    if not merged:
        echoes["stderr"] = LiveHead(2, spec.head, spec.tail)
    executor = Executor(shell_settings, _sink(settings), sweep_spill_files=False)
    request = ExecRequest(
        command=command,
        max_output_bytes=window,
        harness=HarnessShell(shell=shell, merge_streams=merged, label=label_of(command)),
    )
    abort, received = abort_on_signals()

    def run() -> int:
        result = executor.run(request, abort=abort, echo=echoes)
        for name, echo in echoes.items():
            out = result.stdout if name == "stdout" else result.stderr
            rest = echo.remainder(out)
            fd = 1 if name == "stdout" else 2
            try:
                while rest:
                    rest = rest[os.write(fd, rest) :]
            except OSError:  # the harness stopped reading: nothing more to say
                pass
        return exit_status(result, received)

    return run


def _same_file(a: int, b: int) -> bool:
    """Whether two descriptors write to one file (the harness reads both there)."""
    try:
        sa, sb = os.fstat(a), os.fstat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def sandboxed(settings: Settings) -> bool:
    """Whether this process is confined away from the store: Claude Code's sandbox
    says so (``SANDBOX_RUNTIME``), or the home cannot be written here."""
    if os.environ.get("SANDBOX_RUNTIME"):
        return True
    if settings.client.url:
        return False
    home = settings.store.home
    probe = home if os.path.isdir(home) else os.path.dirname(home)
    return not os.access(probe, os.W_OK)


def _sink(settings: Settings) -> OutputSink:
    if sandboxed(settings):
        from overspill.api.client.handoff import HandoffSink, handoff_root

        tmp = os.environ.get("CLAUDE_TMPDIR") or os.environ.get("TMPDIR") or "/tmp"
        root = handoff_root(tmp)
        c = settings.client
        max_bytes = settings.shell.stream_max_bytes
        return HandoffSink(root, session_id=c.session_id, max_bytes=max_bytes)
    from overspill.api.client.output_sink import output_sink

    def warn(message: str) -> None:
        print(f"overspill: warning: {message}", file=sys.stderr)

    return output_sink(settings, warn)


if __name__ == "__main__":
    entry()
