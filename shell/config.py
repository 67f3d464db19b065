"""Executor settings (env ``OVERSPILL_*`` or the TOML file), validated once at load.

Every number must be positive and finite; a bad value is rejected with a message
naming the setting, before any command runs.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator

from overspill.artifacts.config import SettingsBase

MiB = 1024 * 1024


class ShellSettings(SettingsBase):
    timeout_ms: float = Field(default=120_000, gt=0)
    max_timeout_ms: float = Field(default=600_000, gt=0)
    max_output_bytes: int = Field(default=64_000, gt=0)
    max_spill_bytes: int = Field(default=64 * MiB, gt=0)
    grace_ms: float = Field(default=3_000, gt=0)
    # The compatibility layer: legacy private spill files beside the artifact.
    legacy_spill: bool = True
    spill_sweep_days: float = Field(default=30, ge=0)
    # Root of the legacy tool-result spill files (default: a private dsh-spill-XXXXXX
    # directory made under the temp dir on first use).
    result_spill_dir: str | None = None
    retention_mode: Literal["tail", "head_tail"] = "tail"
    render_mode: Literal["artifact", "legacy"] = "artifact"
    # Names with this prefix are the harness's own and never reach a child.
    reserved_env_prefix: str = "OVERSPILL_"
    artifact_max_bytes: int | None = Field(default=None, gt=0)
    # A shown line longer than this is clipped, with the call that reads the rest.
    shown_line_bytes: int = Field(default=2_000, gt=0)

    @field_validator("timeout_ms", "max_timeout_ms", "grace_ms", "spill_sweep_days")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be finite")
        return value
