"""The ``bash``, ``bash_output`` and ``bash_kill`` tools: the executor as tool calls.

Only a local agent gets these (``overspill mcp`` over stdio): a server never runs
commands for a remote caller. Foreground and background are the executor's two
projections; background jobs are kept by id for the life of the process.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from overspill.api.agent.tools import ToolResult
from overspill.api.agent.tools.arguments import ToolArgumentError, check_arguments
from overspill.api.agent.tools.schemas import BASH_DEFINITIONS
from overspill.shell import ExecRequest, ExecResult, Executor, InvalidRequest, SpawnError, wording
from overspill.shell.background import BackgroundJob
from overspill.shell.render import result_markers
from overspill.shell.wording import tool_error


class BashTools:
    """``stdout_window``: the tail a foreground ``bash`` keeps of stdout, when the
    client's answer budget needs less than the executor's configured window;
    ``max_lines``: the lines both tails may show, for a client that cuts by lines."""

    def __init__(
        self,
        executor: Executor,
        *,
        stdout_window: int | None = None,
        max_lines: int | None = None,
    ) -> None:
        self._executor = executor
        self._stdout_window = stdout_window
        self._max_lines = max_lines
        self._jobs: dict[str, BackgroundJob] = {}
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._schemas = {d["name"]: d["input_schema"] for d in BASH_DEFINITIONS}

    def handle(
        self, name: str, arguments: object, *, abort: threading.Event | None = None
    ) -> ToolResult:
        try:
            args = check_arguments(name, self._schemas[name], arguments)
            if name == "bash":
                return self._bash(args, abort)
            return self._output(args) if name == "bash_output" else self._kill(args)
        except (ToolArgumentError, InvalidRequest, SpawnError) as exc:
            return ToolResult(tool_error(str(exc)), True)

    def _bash(self, a: dict[str, Any], abort: threading.Event | None) -> ToolResult:
        request = ExecRequest(
            command=a["command"],
            timeout_ms=a.get("timeout_ms"),
            workdir=a.get("workdir"),
            max_output_bytes=self._stdout_window,
            max_lines=self._max_lines,
        )
        if a.get("background"):
            job = self._executor.start(request)
            with self._lock:
                job_id = f"bash_{next(self._numbers)}"
                self._jobs[job_id] = job
            return ToolResult(
                wording.job_started(job_id), data={"job_id": job_id, "run_id": job.run_id}
            )
        result = self._executor.run(request, abort=abort)
        return ToolResult(result.text, data=_structured(result))

    def _job(self, job_id: str) -> BackgroundJob:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            known = ", ".join(self._jobs) or "none"
            raise ToolArgumentError(f"there is no background job {job_id!r} (jobs: {known}).")
        return job

    def _output(self, a: dict[str, Any]) -> ToolResult:
        job_id = a["job_id"]
        job = self._job(job_id)
        read = job.read_output()
        text = read.text or "(no new output)"
        data: dict[str, Any] = {"job_id": job_id, "running": read.running, "lossy": read.lossy}
        if read.running:
            text += "\n" + wording.job_running(job_id)
        else:
            final = job.wait(timeout=5)
            if final is not None:
                markers = result_markers(final)
                text += "\n".join(["\n" + wording.job_ended(job_id), *markers])
                data.update(_structured(final))
        return ToolResult(text, data=data)

    def _kill(self, a: dict[str, Any]) -> ToolResult:
        job_id = a["job_id"]
        job = self._job(job_id)
        signalled = job.kill()
        final = job.wait(timeout=30)
        text = wording.job_stopped(job_id, signalled, final is not None)
        return ToolResult(text, data={"job_id": job_id, "signalled": signalled})

    def close(self) -> None:
        """Stop every job still running (the agent went away)."""
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            job.kill()
        for job in jobs:
            job.wait(timeout=10)


def _structured(result: ExecResult) -> dict[str, Any]:
    def stream(out: Any) -> dict[str, Any]:
        art = out.artifact
        return {
            "truncated": out.truncated,
            "total_bytes": out.total_bytes,
            "artifact_id": art.id if art else None,
            "artifact_state": art.state if art else None,
            "stored_bytes": art.size_bytes if art else None,
            "storage_error": out.storage_error,
            "spill_path": out.spill_path,
        }

    return {
        "exit_code": result.exit_code,
        "signal": result.signal,
        "timed_out": result.timed_out,
        "aborted": result.aborted,
        "run_id": result.run_id,
        "stdout": stream(result.stdout),
        "stderr": stream(result.stderr),
    }
