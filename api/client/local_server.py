"""The local server: one ``overspill serve`` per data directory, listening on a
Unix socket inside it, started by the first verb that needs the store and gone
when idle (as the build servers of Bazel and Gradle are). A command's output
(``overspill run``, a harness's shell) does not wait for it: the first overflow
of a home with no server up starts one for what follows and stores from its own
process meanwhile, which opens the store alone in ~0.4 s where the server's start
takes ~0.8 s. A reading verb waits for it (in its own process it would import
the same stack and take as long).

Why: a verb runs once per agent command, and opening the store in it (SQLAlchemy,
pydantic, the schema check) costs ~0.5 s of CPU before any work; the server pays
that once and a verb costs little more than the interpreter's start. The server
also runs the sweeper, so retention frees the disk with nobody starting anything.

This side is the client's and uses the standard library only. Files, all in the
home (0700) and all 0600:

- ``server.sock``: the socket. Whoever can open it acts as the home's owner,
  which is who could open the SQLite file anyway; so requests on it name the
  principal they act for (``X-Overspill-Principal``) instead of a token.
- ``server.lock``: held (``flock``) by the running server for its whole life. A
  socket whose lock can be taken belongs to a dead server and is removed.
- ``server.start``: held while a server starts, so clients racing to start one
  end with one: by the verb that starts it and waits, or -- started for later
  verbs -- by the server itself until it is ready.
- ``server.log``: what the server printed.

On connect a handshake (``GET /v1/local/hello``) checks the server's version,
home and storage settings; a server that differs is asked to stop and replaced.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from overspill.artifacts import headway
from overspill.artifacts.errors import BY_CODE, OverspillError, StorageUnavailable
from overspill.artifacts.home import ensure_home

from ..version import VERSION
from .wire import Endpoint, Unreachable, WireClient

if TYPE_CHECKING:
    import subprocess

    from ..settings import Settings

SOCKET = "server.sock"
RUN_LOCK = "server.lock"
START_LOCK = "server.start"
LOG = "server.log"
PRINCIPAL_HEADER = "X-Overspill-Principal"
ROLE_HEADER = "X-Overspill-Role"
START_TIMEOUT_S = 20.0
_SUN_PATH_MAX = 100  # sockaddr_un holds 108 bytes on Linux, 104 on macOS


class LocalServerUnavailable(StorageUnavailable):
    """No local server could be reached or started (the reason says why)."""


class ServerStarting(LocalServerUnavailable):
    """No local server answers yet and one is starting: this call does its work
    in its own process instead of waiting (nothing is wrong; nothing to warn of)."""


def fingerprint(settings: Settings) -> str:
    """What a server's store is: a server of the same home with other storage
    settings (another database, another blob URL), or masking with other
    redaction rules than this verb's, is not the one to use. A 64-bit FNV-1a of
    the settings: equal settings, equal prints (and no password in the clear),
    without importing hashlib into every verb."""
    s, r = settings.store, settings.shell
    what = "\n".join(
        (
            os.path.abspath(s.home),
            s.database_url or "",
            s.blob_url or "",
            s.s3_endpoint_url or "",
            str(r.redact),
            r.redact_disable,
            r.redact_patterns,
        )
    )
    h = 0xCBF29CE484222325
    for byte in what.encode():
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def socket_path(home: str, name: str = SOCKET) -> str:
    """``<home>/<name>``, or, when that path is too long for a socket address, a
    name derived from it in a private directory of this user under the runtime
    (or temp) directory, as tmux does."""
    path = os.path.join(os.path.abspath(home), name)
    if len(os.fsencode(path)) <= _SUN_PATH_MAX:
        return path
    base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
    private = os.path.join(base, f"overspill-{os.getuid()}")
    try:
        os.makedirs(private, mode=0o700, exist_ok=True)
        st = os.lstat(private)
    except OSError as exc:
        raise LocalServerUnavailable(f"cannot make {private}: {exc.strerror}") from exc
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise LocalServerUnavailable(f"{private} is not a private directory of this user")
    import hashlib

    digest = hashlib.sha256(os.fsencode(path)).hexdigest()[:24]
    return os.path.join(private, f"{digest}.sock")


@contextmanager
def flocked(path: str, *, wait: bool = True, within_s: float | None = None) -> Iterator[bool]:
    """An exclusive ``flock`` on ``path`` (made 0600); yields False when ``wait``
    is off and another process holds it, or still holds it after ``within_s``.
    Waiting, it tries every 10 ms and notes headway meanwhile: another process
    is starting the server, which is storage getting on (``artifacts.headway``),
    not storage stuck."""
    with _locked_fd(path, wait, within_s) as fd:
        yield fd is not None


@contextmanager
def _locked_fd(path: str, wait: bool, within_s: float | None) -> Iterator[int | None]:
    """``flocked``, yielding the locked descriptor (None when not taken): a
    server started for later verbs is handed it, and holds the lock on."""
    import fcntl

    deadline = None if within_s is None else time.monotonic() + within_s
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not wait or (deadline is not None and time.monotonic() > deadline):
                    yield None
                    return
                headway.note()
                time.sleep(0.01)
        yield fd
    finally:
        os.close(fd)


class LocalServer:
    """The local server of one home, as a client sees it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self.home = os.path.abspath(settings.store.home)
        self._expected = {"version": VERSION, "home": self.home, "store": fingerprint(settings)}

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint.unix(socket_path(self.home))

    def client(
        self, principal: str, role: str, *, start: bool = True, wait: bool = True
    ) -> WireClient:
        """A client acting as ``principal`` with ``role``, on a server that is up
        (started now if it is not and ``start``). With ``wait`` off, a server that
        is not up is started for the calls that follow, and this one raises
        ServerStarting at once instead of waiting for it."""
        headers = {PRINCIPAL_HEADER: principal, ROLE_HEADER: role}
        client = WireClient(self.endpoint, headers=headers, timeout=300)
        if self._handshake(client) is None:
            client.close()
            if not start:
                raise LocalServerUnavailable(f"no local server is running for {self.home}")
            if not wait:
                self._start_detached()
                raise ServerStarting(f"the local server of {self.home} is starting")
            self._start()
            client = WireClient(self.endpoint, headers=headers, timeout=300)
            if self._handshake(client) is None:
                raise LocalServerUnavailable("the local server started but does not answer")
        return client

    def hello(self) -> dict[str, Any] | None:
        """The running server's handshake answer, or None if none answers."""
        with WireClient(self.endpoint, timeout=5) as client:
            try:
                answer: dict[str, Any] = client.json("GET", "/v1/local/hello")
            except OverspillError:
                return None
        return answer

    def _handshake(self, client: WireClient) -> dict[str, Any] | None:
        """The server's identity if it is the right one, else None (and a wrong
        one is asked to stop)."""
        try:
            answer: dict[str, Any] = client.json("GET", "/v1/local/hello")
        except Unreachable:
            return None
        except OverspillError:
            self.stop()
            return None
        if any(answer.get(k) != v for k, v in self._expected.items()):
            self.stop()
            return None
        return answer

    def stop(self, timeout: float = 10.0) -> bool:
        """Ask the running server to exit and wait until it has (its lock is
        free). True if one was running. A server still starting (one a command's
        first overflow started for the verbs after it) holds the start lock until
        it is ready: it is waited for and stopped, not missed and left to come up
        after the stop has said there was none."""
        if os.path.exists(os.path.join(self.home, START_LOCK)):
            with self._start_lock():
                pass
        # (The lock's file outlives its server: only a held lock is one running.)
        if not os.path.exists(os.path.join(self.home, RUN_LOCK)) or self._run_lock_free():
            return False
        with WireClient(self.endpoint, timeout=5) as client:
            try:
                client.json("POST", "/v1/local/stop")
            except OverspillError:
                pass
        if self._wait_for_lock(timeout):
            return True
        raise LocalServerUnavailable(f"the local server of {self.home} did not stop")

    @contextmanager
    def _start_lock(self) -> Iterator[None]:
        """The start lock, waited for at most the start timeout: a server started
        for later verbs holds it until it is ready, and one that hangs on its way
        up costs a waiting verb this long, not forever."""
        with flocked(os.path.join(self.home, START_LOCK), within_s=START_TIMEOUT_S) as got:
            if not got:
                raise LocalServerUnavailable(
                    f"a local server of {self.home} has been starting for {START_TIMEOUT_S:g} s"
                )
            yield

    def _start(self) -> None:
        ensure_home(self.home)
        with self._start_lock():
            if self._answers():
                return  # another client started it while this one waited
            if not self._wait_for_lock(10.0):
                raise LocalServerUnavailable(
                    f"a local server of {self.home} holds its lock but does not answer"
                )
            self._drop_dead_socket()
            self._spawn()

    def _start_detached(self) -> None:
        """Start the server and return without waiting for it: the server holds
        the start lock (inherited) until it is ready, so a verb that does wait
        (``_start``) waits for this one instead of starting another, and one that
        does not finds the lock taken and leaves it be."""
        ensure_home(self.home)
        with _locked_fd(os.path.join(self.home, START_LOCK), False, None) as lock:
            # Not taken: another verb is starting it. Answering: it came up
            # meanwhile. A run lock held: one runs, or is stopping. Either way
            # the next call finds it or sees to it.
            if lock is None or self._answers() or not self._drop_dead_socket():
                return
            self._popen(["--hold-fd", str(lock)], lock)  # (its copy holds the lock on)

    def _answers(self) -> bool:
        """Whether the right server answers now (a wrong one is asked to stop)."""
        probe = WireClient(self.endpoint, timeout=5)
        try:
            return self._handshake(probe) is not None
        finally:
            probe.close()

    def _drop_dead_socket(self) -> bool:
        """Remove the socket of a server that is gone; False, removing nothing,
        while a server holds the run lock (running, or stopping)."""
        with flocked(os.path.join(self.home, RUN_LOCK), wait=False) as free:
            if free:
                try:
                    os.unlink(socket_path(self.home))
                except FileNotFoundError:
                    pass
        return free

    def _run_lock_free(self) -> bool:
        """No server holds the run lock: none runs (or the last one has exited)."""
        with flocked(os.path.join(self.home, RUN_LOCK), wait=False) as free:
            return free

    def _wait_for_lock(self, timeout: float) -> bool:
        """Wait for the run lock to be free (a server that is stopping)."""
        deadline = time.monotonic() + timeout
        while not self._run_lock_free():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def _spawn(self) -> None:
        read, write = os.pipe()
        try:
            try:
                proc = self._popen(["--ready-fd", str(write)], write)
            finally:
                os.close(write)
            answer = _wait_ready(read, START_TIMEOUT_S)
        finally:
            os.close(read)
        if answer == "ready":
            return
        if proc.poll() is None:
            proc.kill()
        code, _, message = answer.partition(" ")
        if code in BY_CODE and message:
            # The store itself refused (a bad setting, a database that is down):
            # this process could do no better, so that is the answer.
            raise BY_CODE[code](message)
        raise LocalServerUnavailable(f"the local server did not start: {self._last_log_line()}")

    def _popen(self, extra: list[str], fd: int) -> subprocess.Popen[bytes]:
        """``server run`` detached from this verb, its output to the log; ``fd`` is
        the one it is handed (``extra`` names it)."""
        import subprocess

        log = os.open(
            os.path.join(self.home, LOG),
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
            0o600,
        )
        # glibc gives every thread that allocates an arena of its own; a server's
        # worker threads then hold tens of MB of half-used arenas while it idles.
        env = {"MALLOC_ARENA_MAX": "2", **os.environ}
        argv = [sys.executable, "-m", "overspill.api.cli", "server", "run", *extra]
        try:
            return subprocess.Popen(
                argv,
                env=env,
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=self.home,
                start_new_session=True,  # the verb's signals and terminal are not its own
            )
        except OSError as exc:
            raise LocalServerUnavailable(f"cannot start the local server: {exc.strerror}") from exc
        finally:
            os.close(log)

    def _last_log_line(self) -> str:
        try:
            with open(os.path.join(self.home, LOG), "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 4096))
                lines = [ln for ln in f.read().decode(errors="replace").splitlines() if ln.strip()]
        except OSError:
            lines = []
        return lines[-1].strip() if lines else f"see {os.path.join(self.home, LOG)}"


def _wait_ready(fd: int, timeout: float) -> str:
    """What the server wrote on ``fd``: ``ready``, or ``<code> <message>`` of the
    store error that stopped it; "" if it died silently or the time ran out."""
    import select

    deadline = time.monotonic() + timeout
    got = b""
    while time.monotonic() < deadline:
        tick = min(0.1, max(0.0, deadline - time.monotonic()))
        readable, _, _ = select.select([fd], [], [], tick)
        if not readable:
            # Still starting (its end of the pipe is open while it lives): for a
            # command waiting on its first overflow's storage, that is headway.
            headway.note()
            continue
        data = os.read(fd, 4096)
        if not data:
            break
        got += data
        if got.endswith(b"\n"):
            break
    return got.decode(errors="replace").strip()
