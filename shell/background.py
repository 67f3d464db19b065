"""A command started in the background: consuming reads of what it printed
since the last read, a kill, and a wait for the final result. The job itself
(spawn, pumps, collectors, the result) is the executor's; this is the handle a
caller keeps."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from overspill.artifacts.utf8 import utf8_skip_partial

from .results import BackgroundRead, ExecResult

if TYPE_CHECKING:
    from .capture import OutputCollector
    from .config import ShellSettings
    from .process import ProcessTree


class RunningJob(Protocol):
    """What the handle needs of the executor's job (and nothing of how it runs)."""

    run_id: str
    tree: ProcessTree
    stdout: OutputCollector
    stderr: OutputCollector
    settings: ShellSettings

    def finish(self) -> ExecResult: ...

    def end_cause(self, cause: str, *, wait: bool = True) -> bool: ...


class BackgroundJob:
    """A running command. Reads are consuming; output stays readable after exit."""

    def __init__(self, job: RunningJob) -> None:
        self._job = job
        self._offsets = [0, 0]
        self._read_lock = threading.Lock()
        self._waiter = threading.Thread(target=job.finish, name="bg-finish", daemon=True)
        self._waiter.start()

    @property
    def run_id(self) -> str:
        return self._job.run_id

    @property
    def running(self) -> bool:
        """Until the job has finished: the command exited *and* its pumps drained
        the pipes. (The process alone ending is not it: a read then could miss
        the last lines still in the pipe, and a caller that stops at the first
        read saying not running would never see them.)"""
        return self._waiter.is_alive()

    def read_output(self) -> BackgroundRead:
        job = self._job
        with self._read_lock:
            running = self.running
            deltas = [
                job.stdout.read_from(self._offsets[0]),
                job.stderr.read_from(self._offsets[1]),
            ]
            self._offsets = [deltas[0].next_offset, deltas[1].next_offset]
        texts = []
        for d in deltas:
            data = d.data[utf8_skip_partial(d.data) :] if d.lossy else d.data
            texts.append(data.decode("utf-8", errors="replace"))
        from .render import join_streams
        from .wording import dropped_line

        body = join_streams(texts[0], texts[1])
        lossy = any(d.lossy for d in deltas)
        if lossy:
            missing = []
            paths = []
            for coll, d in zip((job.stdout, job.stderr), deltas, strict=True):
                if d.missing is not None:
                    missing.append((coll.stream, d.missing, coll.artifact_id, coll.storage_error))
                if coll.spill_path:
                    paths.append(coll.spill_path)
            body = (body + "\n" if body and not body.endswith("\n") else body) + dropped_line(
                missing, paths, job.settings.render_mode
            )
        return BackgroundRead(
            text=body or "(no new output)",
            stdout=texts[0],
            stderr=texts[1],
            lossy=lossy,
            running=running,
            next_offsets=(self._offsets[0], self._offsets[1]),
        )

    def kill(self) -> bool:
        """End the tree. True the first time it actually signals, False after."""
        return self._job.end_cause("kill", wait=False)

    def wait(self, timeout: float | None = None) -> ExecResult | None:
        """The final result, or None if ``timeout`` seconds pass first."""
        self._waiter.join(timeout)
        if self._waiter.is_alive():
            return None
        return self._job.finish()
