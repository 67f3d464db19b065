"""What a run returns. ``CollectedOutput`` and the ``run --json`` shape are contract.

Plain frozen dataclasses, not pydantic models: ``overspill run`` builds one per
command, and defining a pydantic model costs ~100 ms of import a short command
must not pay. Their JSON form is ``dataclasses.asdict``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ArtifactRef:
    id: str
    state: str
    size_bytes: int
    total_bytes: int
    sha256: str | None


@dataclass(frozen=True)
class CollectedOutput:
    text: str
    truncated: bool
    total_bytes: int
    artifact: ArtifactRef | None = None
    spill_path: str | None = None
    storage_error: str | None = None


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None
    signal: str | None
    timed_out: bool
    aborted: bool
    timeout_ms: float | None
    stdout: CollectedOutput
    stderr: CollectedOutput
    text: str
    run_id: str
    duration_ms: float

    def contract_json(self) -> dict[str, Any]:
        """The ``overspill run --json`` object (extra fields are allowed to grow)."""
        data = dataclasses.asdict(self)
        if data["timeout_ms"] is not None and float(data["timeout_ms"]).is_integer():
            data["timeout_ms"] = int(data["timeout_ms"])
        return data


@dataclass(frozen=True)
class BackgroundRead:
    """One consuming read of a background job's output."""

    text: str
    stdout: str
    stderr: str
    lossy: bool
    running: bool
    next_offsets: tuple[int, int]
