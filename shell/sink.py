"""Where a stream's full copy goes once it overflows. The executor sees only this
protocol, so an in-process store and a remote server are interchangeable."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from overspill.artifacts.errors import OverspillError, StorageUnavailable

from .results import ArtifactRef

if TYPE_CHECKING:  # imported when the first stream overflows, not before
    from overspill.artifacts.records import Principal
    from overspill.artifacts.store import ArtifactStore
    from overspill.artifacts.writer import ArtifactWriter

MiB = 1024 * 1024


def failure_reason(exc: BaseException) -> str:
    """The one line a storage failure is reported as (an OverspillError's message)."""
    return getattr(exc, "message", None) or str(exc) or type(exc).__name__


class SinkStream(Protocol):
    @property
    def artifact_id(self) -> str | None:
        """The artifact's id (None only when it could not be created at all)."""
        ...

    def write(self, data: bytes | memoryview, newlines: int | None = None) -> None:
        """Append bytes (copy them if kept: ``data`` may be a reused buffer); raise
        OverspillError (or OSError) if they cannot be stored. ``newlines`` is the
        count in ``data`` when the caller has it (so it is not counted twice)."""
        ...

    def close(
        self, source_update: dict[str, Any], total_bytes: int | None = None
    ) -> tuple[ArtifactRef | None, str | None]:
        """Finish the artifact, recording how the command ended and how many bytes
        the stream had in all (``total_bytes``: more than were written means some
        never arrived, and the artifact is not called complete). Never raises:
        returns the artifact as stored (None if none was ever created) and the
        storage error, if any."""
        ...

    def progress(self) -> int:
        """A count that grows while storing makes headway (bytes handed on or
        stored); read without waiting, from any thread."""
        ...

    def known_id(self) -> str | None:
        """The artifact's id if it exists already (never waits)."""
        ...

    def would_wait(self, n: int) -> bool:
        """Whether writing ``n`` bytes now would wait for storage."""
        ...


END_QUIET_S = 2.0
"""How long a stream's storage may make no headway once its command has ended
before the result goes without it (a hung object store, a stuck server)."""


def close_bounded(
    stream: SinkStream,
    source_update: dict[str, Any],
    total_bytes: int | None,
    quiet_s: float = END_QUIET_S,
) -> tuple[ArtifactRef | None, str | None]:
    """``stream.close``, waited for while it makes headway and for at most
    ``quiet_s`` seconds without any: storage that is stuck costs the command's
    result that long, not the client library's timeouts and retries. What is
    stuck goes on in the background; the artifact it leaves ``writing`` is ended
    by the sweep when its lease runs out."""
    done: list[tuple[ArtifactRef | None, str | None]] = []
    closer = threading.Thread(
        target=lambda: done.append(stream.close(source_update, total_bytes)),
        name="sink-close",
        daemon=True,
    )
    closer.start()
    seen, quiet_since = stream.progress(), time.monotonic()
    while True:
        closer.join(0.05)
        if done:
            return done[0]
        now = stream.progress()
        if now != seen:
            seen, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_s:
            break
    art = stream.known_id()
    stuck = f"storage made no headway for {quiet_s:g} s after the command ended"
    if art is None:
        return None, f"{stuck}: the artifact was never made"
    return ArtifactRef(art, "failed", 0, total_bytes or 0, None), (
        f"{stuck}; the result went without it (the bytes stored so far stay readable; "
        "the sweep ends the artifact)"
    )


class OutputSink(Protocol):
    def open(self, *, stream: str, source: dict[str, Any]) -> SinkStream:
        """Create the artifact for one stream; raise OverspillError if impossible."""
        ...


class StoreSink:
    """Streams into an ArtifactStore in this process. The store is opened on the
    first overflow only, so commands that never overflow never touch storage."""

    def __init__(
        self,
        store: ArtifactStore | Callable[[], ArtifactStore],
        principal: Principal,
        *,
        session_id: str | None = None,
        max_bytes: int | None = None,
    ) -> None:
        self._store = store
        self._principal = principal
        self._session_id = session_id
        self._max_bytes = max_bytes

    def _get_store(self) -> ArtifactStore:
        if callable(self._store):
            self._store = self._store()
        return self._store

    def open(self, *, stream: str, source: dict[str, Any]) -> SinkStream:
        from overspill.artifacts.db_retry import PRODUCER_RETRY_S, retrying

        store = self._get_store()
        writer = retrying(
            lambda: store.open_writer(
                self._principal,
                kind="output",
                name=f"{source.get('tool', 'bash')} {stream}",
                session_id=self._session_id,
                source=source,
                max_bytes=self._max_bytes,
            ),
            PRODUCER_RETRY_S,
        )
        writer.retry_s = PRODUCER_RETRY_S  # a command's writer rides out a restart
        return WriterStream(writer)


class WriterStream:
    """One stream's artifact over an ``ArtifactWriter``; how it is reported when
    done is ``close``'s (a remote sink asks the server, see ``api.client.sinks``)."""

    def __init__(self, writer: ArtifactWriter) -> None:
        self._writer = writer

    @property
    def artifact_id(self) -> str:
        return self._writer.id

    def write(self, data: bytes | memoryview, newlines: int | None = None) -> None:
        self._writer.write(data, newlines)

    def progress(self) -> int:
        return self._writer.progress

    def known_id(self) -> str:
        return self._writer.id

    def would_wait(self, n: int) -> bool:
        return self._writer.would_wait(n)

    def close(
        self, source_update: dict[str, Any], total_bytes: int | None = None
    ) -> tuple[ArtifactRef, str | None]:
        try:
            result = self._writer.close(source_update=source_update, total=total_bytes)
        except OverspillError as exc:  # close never should, but never let it escape
            return ArtifactRef(
                id=self._writer.id,
                state="failed",
                size_bytes=0,
                total_bytes=self._writer.total_bytes,
                sha256=None,
            ), exc.message
        ref = ArtifactRef(
            id=result.id,
            state=result.state,
            size_bytes=result.size_bytes,
            total_bytes=result.total_bytes,
            sha256=result.sha256,
        )
        return ref, result.error


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
        real = self._real
        return self._replayed + (real.progress() if real is not None else 0)

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
