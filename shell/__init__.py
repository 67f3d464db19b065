"""The bash executor: bounded capture, overflow into artifacts, legacy spill files.

It sees storage only through :class:`shell.sink.OutputSink`, so the same executor
streams into an in-process store or, through ``api``'s client, a remote server.

Names are imported on first use: ``shell.config`` is read by every CLI verb, and
must not bring the executor (subprocess, threads, the view) with it.
"""

from __future__ import annotations

if __name__ != "overspill.shell":  # one identity: the folder is never a top-level package
    raise ImportError(
        f"{__name__} is overspill.shell: import it as overspill.shell (install the "
        "project: pip install -e .), not as a folder of the checkout"
    )

from typing import TYPE_CHECKING

from overspill.artifacts.lazy import lazy_names

if TYPE_CHECKING:
    from .background import BackgroundJob
    from .config import ShellSettings
    from .deferred import DeferredSink
    from .executor import Executor
    from .process import SpawnError
    from .render import parse_exit_status
    from .results import ArtifactRef, CollectedOutput, ExecResult
    from .sink import OutputSink, StoreSink
    from .spec import ExecRequest, InvalidRequest

_LAZY = {
    "ShellSettings": "overspill.shell.config",
    "BackgroundJob": "overspill.shell.background",
    "Executor": "overspill.shell.executor",
    "SpawnError": "overspill.shell.process",
    "parse_exit_status": "overspill.shell.render",
    "ArtifactRef": "overspill.shell.results",
    "CollectedOutput": "overspill.shell.results",
    "ExecResult": "overspill.shell.results",
    "DeferredSink": "overspill.shell.deferred",
    "OutputSink": "overspill.shell.sink",
    "StoreSink": "overspill.shell.sink",
    "ExecRequest": "overspill.shell.spec",
    "InvalidRequest": "overspill.shell.spec",
}


__getattr__ = lazy_names(__name__, _LAZY)

__all__ = [
    "ArtifactRef",
    "BackgroundJob",
    "CollectedOutput",
    "DeferredSink",
    "ExecRequest",
    "ExecResult",
    "Executor",
    "InvalidRequest",
    "OutputSink",
    "ShellSettings",
    "SpawnError",
    "StoreSink",
    "parse_exit_status",
]
