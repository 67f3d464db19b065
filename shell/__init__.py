"""The bash executor: bounded capture, overflow into artifacts, legacy spill files.

It sees storage only through :class:`shell.sink.OutputSink`, so the same executor
streams into an in-process store or, through ``api``'s client, a remote server.
"""

from overspill.shell.config import ShellSettings
from overspill.shell.executor import BackgroundJob, Executor
from overspill.shell.process import SpawnError
from overspill.shell.render import parse_exit_status
from overspill.shell.results import ArtifactRef, CollectedOutput, ExecResult
from overspill.shell.sink import DeferredSink, OutputSink, StoreSink
from overspill.shell.spec import ExecRequest, InvalidRequest

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
