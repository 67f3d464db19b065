"""The bash executor: bounded capture, overflow into artifacts, legacy spill files.

It sees storage only through :class:`shell.sink.OutputSink`, so the same executor
streams into an in-process store or, through ``api``'s client, a remote server.
"""

from shell.config import ShellSettings
from shell.executor import BackgroundJob, Executor
from shell.process import SpawnError
from shell.render import parse_exit_status
from shell.results import ArtifactRef, CollectedOutput, ExecResult
from shell.sink import OutputSink, StoreSink
from shell.spec import ExecRequest, InvalidRequest

__all__ = [
    "ArtifactRef",
    "BackgroundJob",
    "CollectedOutput",
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
