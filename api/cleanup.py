"""One cleanup pass over everything overspill leaves on disk: the store's sweeper
(expiry, purge, orphans, dead writers) and the compatibility layer's old legacy
spill files. Used by ``overspill cleanup``, ``POST /v1/admin/cleanup`` and the
periodic sweep of ``overspill serve``."""

from __future__ import annotations

import logging
import threading

from overspill.artifacts.store import ArtifactStore
from overspill.artifacts.sweeper import SweepReport
from overspill.shell.config import ShellSettings
from overspill.shell.spill import sweep_old_spill_files

log = logging.getLogger(__name__)


def run_cleanup(
    store: ArtifactStore, shell: ShellSettings, *, dry_run: bool = False
) -> SweepReport:
    report = store.sweeper.run(dry_run=dry_run)
    if shell.legacy_spill and not dry_run:
        report.legacy_spill_files = sweep_old_spill_files(shell.spill_sweep_days)
    return report


class PeriodicSweeper:
    """Runs a cleanup pass every ``interval_s`` in a daemon thread until stopped."""

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
        while not self._stop.wait(self._interval):
            try:
                r = run_cleanup(self._store, self._shell)
                if r.expired or r.purged or r.orphan_blobs or r.errors:
                    log.info(
                        "sweep: expired %d, purged %d, freed %d bytes, errors %s",
                        r.expired,
                        r.purged,
                        r.bytes_freed,
                        r.errors,
                    )
            except Exception:  # keep sweeping next interval whatever happened
                log.exception("sweep failed")
