"""Request -> resolved spec. Defaults and caps are applied here, once; nothing
deeper re-applies them. Bad values are rejected with the field's name."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from .config import ShellSettings


class InvalidRequest(ValueError):
    """A request field is malformed; the message names the field."""


class HarnessShell(NamedTuple):
    """How a harness runs its command strings (see ``ExecRequest.harness``)."""

    shell: str = "bash"  # the program run as ``SHELL -c COMMAND``
    merge_streams: bool = False  # stderr into stdout's pipe, in the order written
    # The command as the model wrote it, where the harness wrapped it in set-up of
    # its own: what the artifact's source says was run.
    label: str | None = None


class ExecRequest(NamedTuple):
    command: str
    workdir: str | None = None
    timeout_ms: float | None = None
    stdin: bytes | None = None
    env: Mapping[str, str] = MappingProxyType({})
    max_output_bytes: int | None = None
    call_id: str | None = None
    # The most lines of each stream the answer may show (a client that cuts by
    # lines too: opencode); past them the stream is cut as past its bytes.
    max_lines: int | None = None
    # A harness's own shell routed through overspill (``overspill-shell``):
    # the command keeps what the harness chose -- its
    # environment as given, its stdin, its shell, its deadline (none of ours) --
    # and, when the harness hands one file for both, one stream for both.
    harness: HarnessShell | None = None


class ExecSpec(NamedTuple):
    command: str
    cwd: str
    timeout_ms: float | None  # None: no deadline of ours (background jobs, a harness's shell)
    stdin: bytes | None
    env: Mapping[str, str]
    stdout_window: int
    stderr_window: int
    grace_s: float
    call_id: str | None
    background: bool
    harness: HarnessShell | None = None
    max_lines: int | None = None


def resolve(request: ExecRequest, settings: ShellSettings, *, background: bool) -> ExecSpec:
    if not isinstance(request.command, str) or not request.command.strip():
        raise InvalidRequest("command: must be a non-empty string")
    timeout: float | None = None
    if not background and request.harness is None:  # a harness keeps its own deadline
        timeout = settings.timeout_ms
        if request.timeout_ms is not None:
            value = request.timeout_ms
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise InvalidRequest(f"timeout_ms: must be a positive finite number, got {value!r}")
            timeout = value
        timeout = min(timeout, settings.max_timeout_ms)
    stdout_window = settings.max_output_bytes
    if request.max_output_bytes is not None:
        value = request.max_output_bytes
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InvalidRequest(f"max_output_bytes: must be a positive integer, got {value!r}")
        if not background:  # only a foreground call may change it, and stdout's only
            stdout_window = min(value, settings.max_spill_bytes)
    cwd = request.workdir if request.workdir is not None else os.getcwd()
    for name, val in request.env.items():
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise InvalidRequest(f"env: invalid variable name {name!r}")
        if not isinstance(val, str) or "\0" in val:
            raise InvalidRequest(f"env: value of {name} must be a string without NUL")
    return ExecSpec(
        command=request.command,
        cwd=os.path.abspath(cwd),
        timeout_ms=timeout,
        stdin=request.stdin,
        env=dict(request.env),
        stdout_window=stdout_window,
        stderr_window=settings.max_output_bytes,
        grace_s=settings.grace_ms / 1000,
        call_id=request.call_id,
        background=background,
        harness=request.harness,
        max_lines=request.max_lines if not background else None,
    )
