"""What a run returns. ``CollectedOutput`` and the ``run --json`` shape are contract."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ArtifactRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    state: str
    size_bytes: int
    total_bytes: int
    sha256: str | None


class CollectedOutput(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    truncated: bool
    total_bytes: int
    artifact: ArtifactRef | None = None
    spill_path: str | None = None
    storage_error: str | None = None


class ExecResult(BaseModel):
    model_config = ConfigDict(frozen=True)

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

    def contract_json(self) -> dict[str, object]:
        """The ``overspill run --json`` object (extra fields are allowed to grow)."""
        data = self.model_dump(mode="json")
        if data["timeout_ms"] is not None and float(data["timeout_ms"]).is_integer():
            data["timeout_ms"] = int(data["timeout_ms"])
        return data


class BackgroundRead(BaseModel):
    """One consuming read of a background job's output."""

    model_config = ConfigDict(frozen=True)

    text: str
    stdout: str
    stderr: str
    lossy: bool
    running: bool
    next_offsets: tuple[int, int]
