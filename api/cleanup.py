"""Cleanup that happens without anyone asking: one pass over everything
overspill leaves on disk -- the store's sweeper (expiry, purge, orphans, dead
writers) and the compatibility layer's old legacy spill files.

- ``run_cleanup``: one pass now (``overspill cleanup``, ``POST /v1/admin/cleanup``).
- ``PeriodicSweeper``: a server's (the local server's included) pass on its
  interval, claimed in the database, so several processes sweep one at a time.
- ``sweep_soon``: for a process that opens the store itself (the local server
  off): one bounded pass in the background when the last one, by anyone, is
  older than the interval -- the way ``git gc --auto`` works.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import partial

from overspill.artifacts.catalog.sweeper import SweepReport
from overspill.artifacts.store import ArtifactStore
from overspill.shell.config import ShellSettings
from overspill.shell.spill import sweep_old_spill_files

log = logging.getLogger(__name__)
_FIRST_CHECK_S = 5.0


def run_cleanup(
    store: ArtifactStore, shell: ShellSettings, *, dry_run: bool = False
) -> SweepReport:
    report = store.sweeper.run(dry_run=dry_run)
    if shell.legacy_spill and not dry_run:
        report.legacy_spill_files = sweep_old_spill_files(shell.spill_sweep_days)
    if not dry_run:
        done = store.compactor.run(limit=1000)
        report.compacted = done.compacted
        report.compacted_bytes = done.logical_bytes
        report.compressed_bytes = done.stored_bytes
        report.shared_frames = done.shared_frames
    return report


def run_cleanup_if_due(
    store: ArtifactStore, shell: ShellSettings, interval_s: float, **options: int | None
) -> SweepReport | None:
    report = store.sweeper.run_if_due(interval_s, **options)
    if report is not None and shell.legacy_spill:
        report.legacy_spill_files = sweep_old_spill_files(shell.spill_sweep_days)
    if report is not None and (report.expired or report.purged or report.errors):
        log.info(
            "sweep: expired %d, purged %d, freed %d bytes, errors %s",
            report.expired,
            report.purged,
            report.bytes_freed,
            report.errors,
        )
    return report


_soon: list[threading.Thread] = []


def sweep_soon(store: ArtifactStore, shell: ShellSettings, interval_s: float) -> None:
    """A bounded pass on a thread beside the verb's work, if one is due (see the
    module doc); ``finish_sweeps`` lets it end before the process does."""
    if interval_s <= 0:
        return

    def run() -> None:
        try:
            run_cleanup_if_due(store, shell, interval_s, max_batches=2)
        except Exception:  # never the caller's problem; the next process tries again
            log.exception("background sweep failed")

    thread = threading.Thread(target=run, name="sweep-soon", daemon=True)
    _soon.append(thread)
    thread.start()


def finish_sweeps(timeout_s: float = 10.0) -> None:
    """Wait (bounded) for the passes ``sweep_soon`` started: a verb's process
    ends right after its work, and a pass cut short only leaves its claim to
    lapse, so it is given a moment to finish."""
    for thread in _soon:
        thread.join(timeout_s)
    _soon.clear()


class PeriodicSweeper:
    """Checks every minute (or interval, if shorter) whether a pass is due, and
    runs it when it is, in a daemon thread until stopped."""

    def __init__(self, store: ArtifactStore, shell: ShellSettings, interval_s: float) -> None:
        self._store = store
        self._shell = shell
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sweeper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        wait = _FIRST_CHECK_S
        while not self._stop.wait(wait):
            wait = min(self._interval, 60.0)
            try:
                run_cleanup_if_due(self._store, self._shell, self._interval)
            except Exception:  # keep sweeping next interval whatever happened
                log.exception("sweep failed")


class BackgroundCompactor:
    """Compacts each artifact a few seconds after it ends here (the publisher
    says which), and every minute what ended where no server saw it (the CLI with
    the local server off, a process that died): one low-priority daemon thread,
    one artifact at a time, so capture and reads keep the CPU."""

    _SETTLE_S = 2.0  # a model often reads an output right after it ends
    _QUEUE = 10_000

    def __init__(self, store: ArtifactStore) -> None:
        from collections import deque

        self._store = store
        self._queue: deque[tuple[float, str]] = deque(maxlen=self._QUEUE)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="compactor", daemon=True)

    def start(self) -> None:
        if not self._store.compactor.enabled:
            return
        self._store.publisher.on_finished = self.enqueue
        self._thread.start()

    def stop(self) -> None:
        self._store.publisher.on_finished = None
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def enqueue(self, artifact_id: str) -> None:
        import time

        # Once it is cold: the hot tier keeps a fresh output as written (read
        # meanwhile, it goes back in the queue for another hot_s).
        wait = max(self._SETTLE_S, self._store.settings.hot_s)
        self._queue.append((time.monotonic() + wait, artifact_id))
        self._wake.set()

    def _compact(self, artifact_id: str) -> None:
        if self._store.compactor.is_hot(artifact_id):
            self.enqueue(artifact_id)
        else:
            self._store.compactor.compact(artifact_id)

    def _loop(self) -> None:
        import os
        import time

        try:  # this thread only: Linux schedules threads one by one
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        except (OSError, AttributeError):
            pass
        sweep_at = time.monotonic() + _FIRST_CHECK_S
        while not self._stop.is_set():
            now = time.monotonic()
            if self._queue and self._queue[0][0] <= now:
                _, artifact_id = self._queue.popleft()
                self._guarded(partial(self._compact, artifact_id))
                continue
            if now >= sweep_at:
                self._guarded(lambda: self._store.compactor.run(limit=20))
                sweep_at = now + 60.0
                continue
            due = self._queue[0][0] if self._queue else sweep_at
            self._wake.wait(max(0.05, min(due, sweep_at) - now))
            self._wake.clear()

    @staticmethod
    def _guarded(work: Callable[[], object]) -> None:
        try:
            work()
        except Exception:  # the artifact stays as written; a later pass retries
            log.exception("compaction failed")
