"""The executor: one spawn path, projected as a foreground ``run`` (deadline,
abort, result) or a background ``start`` (handle with consuming reads).

Only infrastructure failures raise (SpawnError, InvalidRequest); a non-zero exit,
a signal, a timeout or storage trouble are all results.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .capture import Echo, OutputCollector
from .config import DEFAULT_FAILURE_PATTERNS, ShellSettings
from .environment import child_environment, known_secrets
from .process import INHERIT, ProcessTree, Pump, signal_name, spawn
from .redact import RuleSet, StreamRedactor, redact_once
from .redact.policy import Redaction
from .results import CollectedOutput, ExecResult
from .spec import ExecRequest, ExecSpec, resolve

# The failure scan, the rendering and the legacy files are imported where first
# used: a command that prints a few lines needs none of them but the text, and
# a harness's shell pays every import once per command.
if TYPE_CHECKING:
    from .background import BackgroundJob
    from .failures import FailureMatcher
    from .results import StreamView
    from .sink import OutputSink
    from .spill import SpillFile

_swept = False
sweep_thread: threading.Thread | None = None
_sweep_lock = threading.Lock()


def _startup_sweep(settings: ShellSettings) -> None:
    """The contract's start-up sweep of old spill files, once per process, on a
    thread of its own: the temp dir can hold hundreds of directories, and a pump
    that waited for the walk held the command's pipe (~12 ms for 262 of them)."""
    global _swept
    with _sweep_lock:
        if _swept or not settings.legacy_spill:
            return
        _swept = True
    from .spill import sweep_old_spill_files

    global sweep_thread
    sweep_thread = threading.Thread(
        target=sweep_old_spill_files, args=(settings.spill_sweep_days,), daemon=True
    )
    sweep_thread.start()


def _first_spill(stream: str, settings: ShellSettings, sweep: bool) -> SpillFile:
    """A spill file; the first one a process makes starts the start-up sweep of
    old ones (not the constructor: building an Executor must not touch /tmp),
    unless a server on this machine sweeps them (``sweep`` off)."""
    from .spill import SpillFile

    if sweep:
        _startup_sweep(settings)
    return SpillFile(stream, settings.max_spill_bytes)


class Executor:
    def __init__(
        self,
        settings: ShellSettings,
        sink: OutputSink | None = None,
        *,
        parent_env: Mapping[str, str] | None = None,
        sweep_spill_files: bool = True,
    ) -> None:
        self.settings = settings
        self.sink = sink
        self._sweep = sweep_spill_files
        self._parent_env = dict(os.environ if parent_env is None else parent_env)
        # Resolved once here (a bad pattern or rule name fails now, not mid-run):
        # the rules every run uses; the secrets it knows of are added per run.
        self.redaction = Redaction.from_settings(settings)
        self._rules = self.redaction.rules()
        self._failure_matcher: list[FailureMatcher | None] = []
        if settings.failure_patterns not in ("", DEFAULT_FAILURE_PATTERNS):
            self._failures()  # a pattern of one's own fails now, not mid-run

    def _failures(self) -> FailureMatcher | None:
        """The failure-like lines' matcher, made when a stream first overflows."""
        if not self._failure_matcher:
            from .failures import failure_matcher

            self._failure_matcher.append(failure_matcher(self.settings.failure_patterns))
        return self._failure_matcher[0]

    def rules_for(self, env: Mapping[str, str]) -> RuleSet | None:
        """The rules of one run: the executor's, and the values of the credentials
        in its environments (masked where the output shows them anyway)."""
        if self._rules is None:
            return None
        known = known_secrets(self._parent_env, env)
        return self.redaction.rules(known) if known else self._rules

    # -- the two projections -------------------------------------------------------

    def run(
        self,
        request: ExecRequest,
        *,
        abort: threading.Event | None = None,
        echo: Mapping[str, Echo] | None = None,
    ) -> ExecResult:
        """Run to the end. ``echo`` (by stream name) also hands each chunk, masked,
        to a live view as the command writes it; the result is the same."""
        spec = resolve(request, self.settings, background=False)
        job = _Job(spec, self, echo or {})
        return job.wait_foreground(abort or threading.Event())

    async def arun(self, request: ExecRequest) -> ExecResult:
        """Asyncio form of ``run``: cancelling the awaiting task aborts the command."""
        import asyncio  # only async callers pay for it (~30 ms of import)

        abort = threading.Event()
        task = asyncio.ensure_future(asyncio.to_thread(self.run, request, abort=abort))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            abort.set()
            await task
            raise

    def start(self, request: ExecRequest) -> BackgroundJob:
        spec = resolve(request, self.settings, background=True)
        from .background import BackgroundJob

        return BackgroundJob(_Job(spec, self, {}))

    # -- shared pieces ----------------------------------------------------------------

    def _collector(
        self,
        stream: str,
        window: int,
        source: dict[str, Any],
        rules: RuleSet | None,
        echo: Echo | None,
        max_lines: int | None = None,
    ) -> OutputCollector:
        settings = self.settings
        sweep = self._sweep
        spill = (lambda: _first_spill(stream, settings, sweep)) if settings.legacy_spill else None
        sink = self.sink
        open_sink = (
            (lambda: sink.open(stream=stream, source={**source, "stream": stream}))
            if sink
            else None
        )
        prepare = getattr(sink, "prepare", None)  # (a DeferredSink builds ahead)
        return OutputCollector(
            stream,
            window,
            mode=settings.retention_mode,
            spill=spill,
            open_sink=open_sink,
            prepare=prepare,
            redactor=StreamRedactor(rules) if rules is not None else None,
            unredacted=rules is None,
            failures=self._failures,
            echo=echo,
            max_lines=max_lines,
        )


class _Job:
    """One spawned command and its two collectors."""

    def __init__(self, spec: ExecSpec, executor: Executor, echo: Mapping[str, Echo]) -> None:
        self.spec = spec
        self.settings = executor.settings
        self.run_id = "run_" + os.urandom(16).hex()  # (uuid would import platform: ~2 ms)
        rules = executor.rules_for(spec.env)
        command = spec.harness.label if spec.harness and spec.harness.label else spec.command
        command = command if rules is None else redact_once(command, rules)[0]
        source = {
            "tool": "bash",
            "command": command,
            "cwd": spec.cwd,
            "call_id": spec.call_id,
            "run_id": self.run_id,
            "background": spec.background,
        }
        # Lines, where the client cuts by them: stdout two thirds, as its bytes.
        lines = spec.max_lines
        self.stdout = executor._collector(
            "stdout",
            spec.stdout_window,
            source,
            rules,
            echo.get("stdout"),
            None if lines is None else max(1, lines * 2 // 3),
        )
        self.stderr = executor._collector(
            "stderr",
            spec.stderr_window,
            source,
            rules,
            echo.get("stderr"),
            None if lines is None else max(1, lines // 3),
        )
        harness = spec.harness
        if harness is None:
            env = child_environment(
                executor._parent_env, spec.env, self.settings.reserved_env_prefix
            )
        else:  # the harness chose the environment its commands get; it stays as given
            env = {**executor._parent_env, **spec.env}
        self.started = time.monotonic()
        self.tree: ProcessTree = spawn(
            spec.command,
            spec.cwd,
            env,
            INHERIT if harness is not None and spec.stdin is None else spec.stdin,
            spec.grace_s,
            shell=harness.shell if harness is not None else "bash",
            merge_streams=harness is not None and harness.merge_streams,
        )
        self.pump = Pump(self.tree, self.stdout.feed, self.stderr.feed)
        self.cause: str | None = None
        self._cause_lock = threading.Lock()
        self._result: ExecResult | None = None
        self._finish_lock = threading.Lock()

    def end_cause(self, cause: str, *, wait: bool = True) -> bool:
        """End the tree for ``cause`` (timeout, abort, kill). The first cause that
        actually signals wins; later calls, or a tree already gone, return False."""
        with self._cause_lock:
            if self.cause is not None or not self.tree.signal(signal.SIGTERM):
                return False
            self.cause = cause
        if wait:
            self.tree.escalate(self.spec.grace_s)
        else:
            threading.Thread(
                target=self.tree.escalate, args=(self.spec.grace_s,), daemon=True
            ).start()
        return True

    @property
    def timed_out(self) -> bool:
        return self.cause == "timeout"

    @property
    def aborted(self) -> bool:
        return self.cause == "abort"

    def wait_foreground(self, abort: threading.Event) -> ExecResult:
        timeout_ms = self.spec.timeout_ms  # None: the harness that called us keeps the deadline
        deadline = math.inf if timeout_ms is None else self.started + timeout_ms / 1000
        while True:
            if abort.is_set():
                self.end_cause("abort")
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.end_cause("timeout")
                break
            # Wakes at exit at once; an abort is noticed within 20 ms.
            if self.tree.wait_exit(min(remaining, 0.02)):
                break
        return self.finish()

    def finish(self) -> ExecResult:
        """Wait for exit, drain the pipes (bounded), close the copies, render."""
        with self._finish_lock:
            if self._result is not None:
                return self._result
        popen = self.tree.popen
        popen.wait()
        self.tree.close()
        self.pump.drain(self.spec.grace_s)
        exit_code = popen.returncode if popen.returncode >= 0 else None
        sig = signal_name(popen.returncode)
        update = {
            "exit_code": exit_code,
            "signal": sig,
            "timed_out": self.timed_out,
            "aborted": self.aborted,
        }
        out = self.stdout.finish(update)
        err = self.stderr.finish(update)
        text = "" if self.spec.harness is not None else self._render(out, err, exit_code, sig)
        result = ExecResult(
            exit_code=exit_code,
            signal=sig,
            timed_out=self.timed_out,
            aborted=self.aborted,
            timeout_ms=self.spec.timeout_ms,
            stdout=out,
            stderr=err,
            text=text,
            run_id=self.run_id,
            duration_ms=round((time.monotonic() - self.started) * 1000, 1),
        )
        with self._finish_lock:
            if self._result is None:
                self._result = result
            return self._result

    def _render(
        self, out: CollectedOutput, err: CollectedOutput, exit_code: int | None, sig: str | None
    ) -> str:
        """The model's view of a finished run. (A harness's shell has none: what
        it shows was written as it came, ``shell.live_head``.)"""
        from .render import render_result, stream_text

        mode = self.settings.render_mode
        return render_result(
            stream_text(out, self._view(self.stdout, out), mode),
            stream_text(err, self._view(self.stderr, err), mode),
            exit_code=exit_code,
            signal=sig,
            timed_out=self.timed_out,
            timeout_ms=self.spec.timeout_ms,
        )

    def _view(self, collector: OutputCollector, out: CollectedOutput) -> StreamView | None:
        if self.settings.render_mode == "legacy":
            return None
        art = out.artifact
        stored = art is not None and art.state != "failed" and not out.storage_error
        return collector.view(
            art.id if art is not None and stored else None, self.settings.shown_line_bytes
        )
