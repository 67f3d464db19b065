"""A sink that never holds a command's pipe on storage: its store is built on a
thread of its own at the first overflow, and each stream spools to an unnamed
private file whenever its artifact does not exist yet or its storage is behind
(``_DeferredStream``), then hands the spool on in order."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from overspill.artifacts.errors import StorageUnavailable

from .results import ArtifactRef
from .sink import OutputSink, SinkStream, failure_reason

MiB = 1024 * 1024


class DeferredSink:
    """An OutputSink built on a background thread, so the pump never waits for it.

    Opening the in-process store costs about half a second (SQLAlchemy, the schema
    check), a server a round trip or two; a command that floods its pipe must not
    be blocked meanwhile. The build starts at the first ``open`` (or ``prepare``).
    Until the stream's artifact exists its bytes go to a private spool file (an
    unlinked temporary file: page cache, not memory), which a thread of the stream
    replays into the artifact before it switches to direct writes. The spool is
    bounded (``spool_bytes``); only a stream that fills it waits, and that is
    backpressure, never loss."""

    def __init__(self, build: Callable[[], OutputSink], *, spool_bytes: int = 256 * MiB):
        self._build = build
        self.spool_bytes = spool_bytes
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._built = threading.Event()
        self._sink: OutputSink | None = None
        self._error: str | None = None

    def prepare(self) -> None:
        """Start building now (idempotent)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sink-build", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        try:
            self._sink = self._build()
        except Exception as exc:  # reported by every stream; never raised at the pump
            self._error = failure_reason(exc)
        finally:
            self._built.set()

    def built(self) -> OutputSink:
        """Wait for the build; raise StorageUnavailable with the reason if it failed."""
        self.prepare()
        self._built.wait()
        if self._sink is None:
            raise StorageUnavailable(self._error or "storage could not be opened")
        return self._sink

    def open(self, *, stream: str, source: dict[str, Any]) -> SinkStream:
        self.prepare()
        return _DeferredStream(self, stream, source)


def _unnamed_file() -> int:
    """A private file with no name in the temp directory (0600; nothing to remove
    if the process dies). O_TMPFILE where the file system has it: ``tempfile``'s
    import (shutil, random) cost a harness's shell 14 ms per overflowing call."""
    where = os.environ.get("TMPDIR") or "/tmp"
    try:
        return os.open(where, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except (OSError, AttributeError):
        import tempfile

        fd, path = tempfile.mkstemp(prefix="overspill-spool-")  # 0600, exclusive
        os.unlink(path)
        return fd


class _DeferredStream:
    """One stream of a DeferredSink: spooled while its artifact does not exist or
    its storage is behind, direct otherwise.

    The pump never waits on storage while the spool has room: until the artifact
    exists, and whenever a direct write would wait for a free buffer (a stalled
    object store, a slow server), bytes go to the spool, an unlinked private
    file, and a replay thread hands them on in order; once it has caught up,
    writes go direct again. So every byte reaches the artifact once, in order,
    the writer is never called by two threads at once, and a storage stall
    costs the command nothing until ``spool_bytes`` are waiting (then it is
    backpressure, never loss)."""

    def __init__(self, owner: DeferredSink, stream: str, source: dict[str, Any]) -> None:
        self._owner = owner
        self._lock = threading.Condition()
        self._spool = -1  # fd of an unlinked private file, made on the first spooled write
        self._spooled = 0  # bytes appended to the spool (its end)
        self._done = 0  # spool bytes handed to _real
        self._replayed = 0  # all spooled bytes handed on so far (headway, see progress)
        self._real: SinkStream | None = None
        self._caught_up = False  # nothing waits in the spool: writes go to _real directly
        self._closing = False
        self._error: str | None = None
        self._opened = threading.Event()
        self._replayer = threading.Thread(
            target=self._replay, args=(stream, source), name=f"sink-{stream}", daemon=True
        )
        self._replayer.start()

    @property
    def artifact_id(self) -> str | None:
        self._opened.wait()
        return self._real.artifact_id if self._real is not None else None

    def progress(self) -> int:
        from overspill.artifacts.headway import notes

        real = self._real
        # (While the store opens -- a local server starting, retries through a
        # brief outage -- its notes are headway.)
        return self._replayed + (real.progress() if real is not None else 0) + notes()

    def known_id(self) -> str | None:
        real = self._real
        return real.known_id() if real is not None else None

    def would_wait(self, n: int) -> bool:
        return False  # (it spools instead)

    def write(self, data: bytes | memoryview, newlines: int | None = None) -> None:
        with self._lock:
            real = self._real if self._caught_up and self._error is None else None
            if real is not None and real.would_wait(len(data)):
                # Storage is behind: the bytes wait here, and the replay hands them on.
                self._caught_up, real = False, None
            if real is None:
                while self._error is None:
                    waiting = self._spooled - self._done
                    # (An empty spool takes any chunk: one larger than the bound
                    # would otherwise wait for a replay with nothing to replay.)
                    if not waiting or waiting + len(data) <= self._owner.spool_bytes:
                        self._append_spool_locked(data)
                        self._lock.notify_all()
                        return
                    self._lock.wait()  # the spool is full: backpressure until replayed
            error = self._error
        if error is not None:
            raise StorageUnavailable(error)
        assert real is not None  # (a spooled write returned above)
        real.write(data, newlines)

    def _append_spool_locked(self, data: bytes | memoryview) -> None:
        try:
            if self._spool < 0:
                self._spool = _unnamed_file()
            fd = self._spool
            view = memoryview(data)
            pos = self._spooled
            while view:
                n = os.pwrite(fd, view, pos)
                pos += n
                view = view[n:]
            self._spooled = pos
            self._caught_up = False  # (bytes wait here: later ones must follow them)
        except OSError as exc:
            self._fail_locked(f"cannot spool output while storage opens: {exc.strerror}")
            raise StorageUnavailable(self._error or "spool failed") from None

    def _fail_locked(self, message: str) -> None:
        if self._error is None:
            self._error = message
        self._lock.notify_all()

    def _replay(self, stream: str, source: dict[str, Any]) -> None:
        try:
            self._real = self._owner.built().open(stream=stream, source=source)
        except Exception as exc:
            with self._lock:
                self._fail_locked(failure_reason(exc))
            return
        finally:
            self._opened.set()
        real = self._real
        assert real is not None
        try:
            while True:
                with self._lock:
                    while self._done == self._spooled:
                        if not self._caught_up:
                            # Caught up: the spool starts over (its pages are freed)
                            # and writes go direct until storage is behind again.
                            self._caught_up = True
                            self._done = self._spooled = 0
                            if self._spool >= 0:
                                os.ftruncate(self._spool, 0)
                            self._lock.notify_all()
                        if self._closing or self._error is not None:
                            return
                        self._lock.wait()
                    start, end, spool = self._done, self._spooled, self._spool
                pos = start
                while pos < end:
                    chunk = os.pread(spool, min(MiB, end - pos), pos)
                    if not chunk:
                        raise OSError(0, "spool file shrank")
                    real.write(chunk)
                    pos += len(chunk)
                    self._replayed += len(chunk)
                    with self._lock:
                        self._done = pos
                        self._lock.notify_all()  # room in the spool
        except Exception as exc:
            with self._lock:
                self._fail_locked(failure_reason(exc))
        finally:
            with self._lock:
                spool, self._spool = self._spool, -1
            if spool >= 0:
                os.close(spool)

    def close(
        self, source_update: dict[str, Any], total_bytes: int | None = None
    ) -> tuple[ArtifactRef | None, str | None]:
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        self._replayer.join()
        if self._real is None:
            return None, self._error
        ref, error = self._real.close(source_update, total_bytes)
        return ref, error or self._error
