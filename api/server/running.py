"""Running the app: ``overspill serve`` on TCP, the local server on the home's
Unix socket (detached, started by a verb, gone when idle), and the same local
server in a thread of the verb's own process when no detached one can run.

``serve`` on a fresh home (no active token at all) issues an admin token and
prints a ready-to-open URL, as notebook servers do; the token travels in the
URL fragment, which browsers never send to the server, so it does not land in
access logs. Every server runs the sweeper on its interval.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

import uvicorn

from overspill.artifacts.catalog.tokens import NewToken
from overspill.artifacts.errors import ConfigurationError, OverspillError
from overspill.artifacts.home import ensure_home
from overspill.artifacts.store import ArtifactStore

from ..cleanup import BackgroundCompactor, PeriodicSweeper, sweep_soon
from ..client.local_server import RUN_LOCK, fingerprint, flocked, socket_path
from ..client.wire import Endpoint
from ..settings import Settings
from ..version import VERSION
from .app import create_app

log = logging.getLogger(__name__)


def tcp_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket. Made with IPPROTO_TCP, not protocol 0: asyncio
    sets TCP_NODELAY on accepted sockets only when the listener's protocol says
    TCP, and without it every keep-alive request waited ~40 ms on Nagle and
    delayed ACKs."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.listen(2048)
    return sock


def serve(settings: Settings, host: str, port: int, *, sign_in_link: bool = False) -> int:
    # Bind before saying where we serve: a port in use is one clear line, and the
    # URL printed is one that answers.
    sock = tcp_socket(host, port)
    store = ArtifactStore.open(settings.store)
    owner = settings.client.owner
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    base = f"http://{shown_host}:{sock.getsockname()[1]}/"
    if store.tokens.count_active() == 0 or sign_in_link:
        label = "created by overspill serve" + (" --sign-in-link" if sign_in_link else "")
        expires = 24 * 3600 if sign_in_link else None
        issued = store.tokens.create(
            NewToken.checked(principal=owner, role="admin", label=label, expires_in_s=expires)
        )
        what = "a sign-in token (valid 24 h)" if sign_in_link else "admin token"
        print(f"overspill: created {what} {issued.info.id} for {owner}", file=sys.stderr)
        print(f"overspill: open {base}#token={issued.token}", file=sys.stderr)
        print(
            f"overspill: or use it from a shell: export OVERSPILL_URL={base} "
            f"OVERSPILL_TOKEN={issued.token}",
            file=sys.stderr,
        )
    else:
        print(
            f"overspill: serving {base} (a new sign-in link: overspill serve --sign-in-link; "
            "or a token: overspill token create --principal NAME --role admin)",
            file=sys.stderr,
        )
    app = create_app(store, settings, bound_host=host)
    try:
        _run(app, sock, settings, store)
    finally:
        store.close()
    return 0


class _Server(uvicorn.Server):
    """uvicorn with two additions: a callback once it listens (the local server
    tells the verb that started it), and an exit when idle or told to stop."""

    def __init__(
        self,
        config: uvicorn.Config,
        *,
        on_ready: Callable[[], None] | None = None,
        idle_s: float | None = None,
        activity: Any = None,
        still_ours: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(config)
        self._on_ready = on_ready
        self._idle_s = idle_s
        self._activity = activity
        self._still_ours = still_ours
        self._trimmed_at: float | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self._on_ready is not None:
            self._on_ready()

    async def on_tick(self, counter: int) -> bool:
        if await super().on_tick(counter):
            return True
        if counter % 10:
            return False
        if self._idle_s is not None:
            idle = self._activity.idle_for()
            if idle > self._idle_s:
                log.info("idle for %.0f s: stopping", self._idle_s)
                return True
            if idle > _TRIM_AFTER_S and self._trimmed_at != self._activity.last:
                self._trimmed_at = self._activity.last
                _give_memory_back()
        if self._still_ours is not None and not self._still_ours():
            log.info("the socket was removed or replaced: stopping")
            return True
        return False


_TRIM_AFTER_S = 5.0


def _give_memory_back() -> None:
    """A server that waits for its next verb holds no more memory than it needs:
    collect, then hand glibc's free pages back to the system (what serving a
    burst of requests left in the heap is otherwise kept for good). The decoded
    frames kept for the next read go too."""
    import gc

    from overspill.artifacts.stored.frame_cache import clear_read_caches

    clear_read_caches()
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the collection is all there is
        pass


def _run(
    app: Any,
    sock: socket.socket,
    settings: Settings,
    store: ArtifactStore,
    **extra: Any,
) -> None:
    interval = settings.server.sweep_interval_s
    sweeper = PeriodicSweeper(store, settings.shell, interval) if interval > 0 else None
    config = uvicorn.Config(app, log_level="info", access_log=False, timeout_keep_alive=30)
    server = _Server(config, **extra)
    # A thread that waits for the GIL waits up to the switch interval each time:
    # 5 ms by default, paid again at every handoff of a small request (the loop,
    # a worker, the database driver) while long reads keep the other threads
    # busy. 1 ms keeps one caller's greps from setting everyone's latency.
    sys.setswitchinterval(0.001)
    app.state.stop_server = lambda: setattr(server, "should_exit", True)
    compactor = BackgroundCompactor(store)
    compactor.start()
    if sweeper:
        sweeper.start()
    try:
        server.run(sockets=[sock])
    finally:
        if sweeper:
            sweeper.stop()
        compactor.stop()


def _unix_socket(path: str) -> socket.socket:
    """A listening Unix socket at ``path``, 0600 from its creation (umask)."""
    try:
        os.unlink(path)  # a dead server's; the caller holds the run lock
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(path)
    except OSError as exc:
        sock.close()
        raise ConfigurationError(f"cannot listen on {path}: {exc.strerror}") from exc
    finally:
        os.umask(old)
    sock.listen(512)
    return sock


def _identity(settings: Settings, home: str) -> dict[str, Any]:
    return {
        "version": VERSION,
        "home": home,
        "store": fingerprint(settings),
        "pid": os.getpid(),
        "socket": socket_path(home),
    }


def serve_local(settings: Settings, ready_fd: int | None = None, hold_fd: int | None = None) -> int:
    """The detached local server of ``settings.store.home`` (``server run``).
    ``ready_fd``: told ``ready`` (or the store's error) by a verb that waits;
    ``hold_fd``: the start lock of a verb that did not wait, held until ready."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        home = ensure_home(settings.store.home)
        with flocked(os.path.join(home, RUN_LOCK), wait=False) as mine:
            if not mine:
                print(f"overspill: a local server of {home} is already running", file=sys.stderr)
                return 1
            return _serve_local(settings, home, ready_fd, hold_fd)
    except OverspillError as exc:
        # Tell the verb waiting for us why, so it can say it (and not try the
        # same store in its own process).
        if ready_fd is not None:
            os.write(ready_fd, f"{exc.code} {exc.message}\n".encode())
        raise


def _serve_local(settings: Settings, home: str, ready_fd: int | None, hold_fd: int | None) -> int:
    store = ArtifactStore.open(settings.store)
    path = socket_path(home)
    sock = _unix_socket(path)
    inode = os.stat(path).st_ino
    app = create_app(store, settings, local=True)
    app.state.local_identity = _identity(settings, home)

    def ready() -> None:
        if ready_fd is not None:
            os.write(ready_fd, b"ready\n")
            os.close(ready_fd)
        if hold_fd is not None:
            os.close(hold_fd)  # the start lock: a verb waiting on it finds us up

    def still_ours() -> bool:
        try:
            return os.stat(path).st_ino == inode
        except OSError:
            return False

    try:
        _run(
            app,
            sock,
            settings,
            store,
            on_ready=ready,
            idle_s=settings.server.local_server_idle_s,
            activity=app.state.activity,
            still_ours=still_ours,
        )
    finally:
        if still_ours():
            os.unlink(path)
        store.close()
    return 0


def start_in_thread(settings: Settings) -> tuple[Endpoint, Callable[[], None]]:
    """The local server in a thread of this process, on a private socket of its
    own (``OVERSPILL_LOCAL_SERVER=off``, or no detached server could start):
    the same app and the same client path, without a process of its own.
    Returns its endpoint and the function that stops it."""
    home = ensure_home(settings.store.home)
    store = ArtifactStore.open(settings.store)
    sweep_soon(store, settings.shell, settings.server.sweep_interval_s)
    path = socket_path(home, f"inproc-{os.getpid()}.sock")
    sock = _unix_socket(path)
    app = create_app(store, settings, local=True)
    app.state.local_identity = _identity(settings, home)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    started = threading.Event()
    server = _Server(config, on_ready=started.set)
    app.state.stop_server = lambda: setattr(server, "should_exit", True)

    def run() -> None:
        try:
            asyncio.run(server.serve(sockets=[sock]))
        finally:
            started.set()

    thread = threading.Thread(target=run, name="in-process-server", daemon=True)
    thread.start()
    started.wait(30)

    def stop() -> None:
        server.should_exit = True
        thread.join(10)
        store.close()
        try:
            os.unlink(path)
        except OSError:
            pass

    return Endpoint.unix(path), stop
