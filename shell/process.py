"""Spawning ``bash -c`` (or a harness's shell) in its own session, pumping its pipes, ending its tree.

Termination is tree-wide (the whole process group), SIGTERM then SIGKILL after the
grace period, idempotent, and a group already gone is never signalled again (its
id could belong to someone else by then).
"""

from __future__ import annotations

import errno
import os
import select
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping

_READ = 1024 * 1024
_PIPE_SIZE = 1024 * 1024


class SpawnError(RuntimeError):
    """The command could not be started at all (missing workdir, no bash)."""


TREE_MARK = "OVERSPILL_TREE"
"""Set in every command's environment to a value of its own: a process that left
the command's session (``setsid``) still carries it, and is found by it."""

# The watchdog's whole program: wait for "ok" on stdin; anything else (EOF because
# overspill died, SIGKILL included) ends the command's group and every process that
# carries the tree's mark, TERM then KILL. One grep reads every process's
# environment: a grep per process took 1.8 ms each on an idle machine, and on a
# loaded one (a CI run, hundreds of processes) a pass outlasted the 15 s a test
# gives a process that left the session (setsid) to be gone.
_WATCHDOG = (
    "group=$1 grace=$2 mark=$3; "
    'marked() { for e in $(grep -lszx "OVERSPILL_TREE=$mark" /proc/[0-9]*/environ); do '
    'p=${e%/environ}; kill -"$1" "${p#/proc/}" 2>/dev/null; done; }; '
    'read -r x; [ "$x" = ok ] && exit 0; '
    'kill -TERM -- "-$group" 2>/dev/null; marked TERM; '
    'sleep "$grace"; kill -KILL -- "-$group" 2>/dev/null; marked KILL; exit 0'
)


class Watchdog:
    """Ends the command's process group if overspill itself dies.

    A signal overspill can catch is handled in-process (the tree is ended with
    the contract's TERM -> grace -> KILL); SIGKILL or a crash cannot be caught,
    and PR_SET_PDEATHSIG would reach only bash, not its children. So a tiny bash
    in a session of its own holds the read end of a pipe whose write end only
    overspill has: the kernel closes it when overspill dies, however it dies,
    and the watchdog then ends the group. On a normal finish overspill writes
    "ok" and the watchdog exits without touching anything."""

    def __init__(self, pgid: int, grace_s: float, mark: str) -> None:
        read, self._write = os.pipe()
        try:
            self._popen: subprocess.Popen[bytes] | None = subprocess.Popen(
                ["bash", "-c", _WATCHDOG, "overspill-watchdog", str(pgid), f"{grace_s:.3f}", mark],
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            )
        except OSError:  # no watchdog: the tree is still ended on every caught signal
            self._popen = None
        finally:
            os.close(read)

    def disarm(self) -> None:
        """The tree was dealt with here: tell the watchdog to leave it alone."""
        if self._write < 0:
            return
        fd, self._write = self._write, -1
        try:
            os.write(fd, b"ok\n")
        except OSError:
            pass
        finally:
            os.close(fd)
        if self._popen is not None:
            self._popen.wait()


class ProcessTree:
    def __init__(
        self, popen: subprocess.Popen[bytes], grace_s: float = 3.0, mark: str = ""
    ) -> None:
        self.popen = popen
        self.pgid = popen.pid  # start_new_session: the leader's pid is the group id
        self.mark = mark
        self.watchdog = Watchdog(self.pgid, grace_s, mark)
        self._gone = False
        self._lock = threading.Lock()
        self._pidfd: int | None = None
        if hasattr(os, "pidfd_open"):
            try:
                self._pidfd = os.pidfd_open(popen.pid)
            except OSError:  # an old kernel or a sandbox without pidfd: poll instead
                pass

    def wait_exit(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the command to exit; True once it has.

        A pidfd wakes us the moment the leader exits, where polling would add up to
        a poll interval to every command (a fifth of a short command's run time).
        The pidfd is only watched, never used to reap: ``Popen`` still does that."""
        if self.popen.poll() is not None:
            return True
        if self._pidfd is None:
            time.sleep(min(timeout, 0.01))
        else:
            select.select([self._pidfd], [], [], timeout)
        return self.popen.poll() is not None

    def close(self) -> None:
        self.watchdog.disarm()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def alive(self) -> bool:
        with self._lock:
            return self._alive_locked()

    def _alive_locked(self) -> bool:
        if self._gone:
            return False
        self.popen.poll()  # reap the leader so a zombie does not count as alive
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            self._gone = True
            return False
        except PermissionError:
            return True
        return True

    def signal(self, sig: int) -> bool:
        with self._lock:
            if not self._alive_locked():
                return False
            try:
                os.killpg(self.pgid, sig)
            except ProcessLookupError:
                self._gone = True
                return False
            return True

    def terminate(self, grace_s: float) -> bool:
        """SIGTERM the group, SIGKILL whatever is left after ``grace_s``.
        Returns True if a signal was sent (False: the tree was already gone)."""
        if not self.signal(signal.SIGTERM):
            return False
        self.escalate(grace_s)
        return True

    def escalate(self, grace_s: float) -> None:
        """After a SIGTERM: wait up to ``grace_s`` for the group, then SIGKILL it."""
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if not self.alive():
                return
            time.sleep(0.01)
        self.signal(signal.SIGKILL)


INHERIT = object()
"""``spawn``'s ``stdin`` for the caller's own stdin (a harness's shell keeps it)."""


def spawn(
    command: str,
    cwd: str,
    env: Mapping[str, str],
    stdin: bytes | object | None,
    grace_s: float = 3.0,
    *,
    shell: str = "bash",
    merge_streams: bool = False,
) -> ProcessTree:
    """``SHELL -c COMMAND`` in a session of its own. ``stdin``: bytes to feed,
    None for /dev/null, ``INHERIT`` for ours; ``merge_streams``: stderr into
    stdout's pipe (one stream, in the order the command wrote it)."""
    if not os.path.isdir(cwd):
        raise SpawnError(f"workdir does not exist or is not a directory: {cwd}")
    mark = os.urandom(12).hex()
    feed = stdin if isinstance(stdin, bytes) else None
    try:
        popen = subprocess.Popen(
            [shell, "-c", command],
            cwd=cwd,
            env={**env, TREE_MARK: mark},
            stdin=None
            if stdin is INHERIT
            else subprocess.PIPE
            if feed is not None
            else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_streams else subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except FileNotFoundError as exc:
        raise SpawnError(f"cannot run {shell}: {exc.strerror}") from None
    except PermissionError as exc:
        raise SpawnError(f"cannot start command in {cwd}: {exc.strerror}") from None
    for pipe in (popen.stdout, popen.stderr):
        if pipe is not None:
            _widen_pipe(pipe)
    if feed is not None:
        assert popen.stdin is not None
        threading.Thread(target=_feed_stdin, args=(popen.stdin, feed), daemon=True).start()
    return ProcessTree(popen, grace_s, mark)


def _widen_pipe(pipe: object) -> None:
    # Fewer, larger reads: a 1 MiB pipe cuts context switches on chatty commands.
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), _PIPE_SIZE)  # type: ignore[attr-defined]
    except (OSError, AttributeError, ImportError):
        pass


def _feed_stdin(pipe: object, data: bytes) -> None:
    # A child that never reads stdin must not block us: this runs in its own thread.
    try:
        pipe.write(data)  # type: ignore[attr-defined]
    except (BrokenPipeError, OSError):
        pass
    finally:
        try:
            pipe.close()  # type: ignore[attr-defined]
        except OSError:
            pass


class Pump:
    """One thread reading both pipes into their sinks until EOF, or until the
    drain deadline set after the process exits (a grandchild may hold them open)."""

    def __init__(
        self,
        tree: ProcessTree,
        on_stdout: Callable[[bytes], None],
        on_stderr: Callable[[bytes], None],
    ) -> None:
        popen = tree.popen
        assert popen.stdout is not None
        self._sel = selectors.DefaultSelector()
        self._sel.register(popen.stdout.fileno(), selectors.EVENT_READ, on_stdout)
        self._files = [popen.stdout]
        if popen.stderr is not None:  # (None: merged into stdout's pipe)
            self._sel.register(popen.stderr.fileno(), selectors.EVENT_READ, on_stderr)
            self._files.append(popen.stderr)
        self._drain_deadline: float | None = None
        # One reused read buffer: sinks copy what they keep, so nothing is allocated
        # per read and memory stays flat however much the command prints.
        self._buf = bytearray(_READ)
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pump", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while self._sel.get_map():
                deadline = self._drain_deadline
                if deadline is not None and time.monotonic() >= deadline:
                    self._take_what_is_left()
                    break
                for key, _ in self._sel.select(timeout=0.05):
                    self._read_once(key)
        finally:
            self._sel.close()
            for f in self._files:
                try:
                    f.close()
                except OSError:
                    pass
            self.done.set()

    def _read_once(self, key: selectors.SelectorKey) -> int:
        """One read into the stream's sink; unregisters the pipe at EOF. Returns the
        bytes read (0 at EOF or when nothing was there)."""
        try:
            n = os.readv(key.fd, [self._buf])
        except BlockingIOError:
            return 0
        except OSError as exc:
            if exc.errno == errno.EINTR:
                return 0
            n = 0
        if not n:
            self._sel.unregister(key.fd)
            return 0
        with memoryview(self._buf)[:n] as chunk:
            key.data(chunk)
        return n

    def _take_what_is_left(self) -> None:
        """At the drain deadline, keep what already sits in the pipes.

        The deadline exists for a grandchild that holds a pipe open; it must not
        throw away output the command finished printing while our sinks were slow
        (a remote store under load). So: read without waiting, at most one pipe's
        capacity per stream (a writer still running cannot keep us here)."""
        for key in list(self._sel.get_map().values()):
            os.set_blocking(key.fd, False)
            budget = _PIPE_SIZE
            while budget > 0 and key.fd in self._sel.get_map():
                n = self._read_once(key)
                if not n:
                    break
                budget -= n

    def drain(self, bound_s: float) -> None:
        """Wait for EOF on both pipes, at most ``bound_s`` seconds, then stop."""
        self._drain_deadline = time.monotonic() + bound_s
        self._thread.join()


def abort_on_signals() -> tuple[threading.Event, list[int]]:
    """SIGINT, SIGTERM and SIGHUP abort the command instead of killing its runner:
    its whole tree is ended (TERM, grace, KILL), the artifacts are closed with
    what was captured, and the model still gets its text. Returns the abort event
    and the signals received (the first decides the exit status, 128+N)."""
    abort = threading.Event()
    received: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        received.append(signum)
        abort.set()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    return abort, received


def signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"SIG{-returncode}"
