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

from overspill.artifacts.store import ArtifactStore
from overspill.artifacts.sweeper import SweepReport
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
