"""Store configuration, read once at the boundary (env ``OVERSPILL_*`` or a TOML file).

Every other module receives a resolved :class:`StoreSettings`; nothing below this
reads the environment. ``OVERSPILL_CONFIG`` names an optional TOML file whose keys
are the setting names without the prefix; environment variables win over it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from overspill.artifacts.errors import ConfigurationError

MiB = 1024 * 1024


def default_home() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local/share")
    return Path(base) / "overspill"


class SettingsBase(BaseSettings):
    """Shared sources: environment first, then the TOML file named by OVERSPILL_CONFIG."""

    model_config = SettingsConfigDict(env_prefix="OVERSPILL_", extra="ignore", frozen=True)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        toml_path = os.environ.get("OVERSPILL_CONFIG")
        if toml_path:
            if not os.path.isfile(toml_path):
                raise ConfigurationError(f"OVERSPILL_CONFIG: no such file {toml_path}")
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_path))
        return tuple(sources)

    @classmethod
    def load(cls, **overrides: Any) -> Any:
        """Build the settings, turning validation failures into one readable line."""
        try:
            return cls(**overrides)
        except ValidationError as exc:
            first = exc.errors()[0]
            name = ".".join(str(p) for p in first["loc"]) or "settings"
            raise ConfigurationError(
                f"invalid setting OVERSPILL_{name.upper()}: {first['msg']}"
            ) from None


class StoreSettings(SettingsBase):
    home: Path = Field(default_factory=default_home)
    database_url: str | None = None
    blob_url: str | None = None
    s3_endpoint_url: str | None = None
    # Writers store a segment when this much is buffered or flush_interval_s passed;
    # unset, the blob backend's own size (local 8 MiB, S3 4 MiB).
    segment_bytes: int | None = Field(default=None, gt=0)
    flush_interval_s: float = Field(default=1.0, gt=0)
    lease_seconds: float = Field(default=30.0, gt=0)
    # How long storage may hold a writer's producer (a command's pipe) before the
    # artifact is failed and the producer goes on without it.
    storage_stall_s: float = Field(default=10.0, gt=0)
    max_artifact_bytes: int = Field(default=4096 * MiB, gt=0)
    default_retention_s: int = Field(default=7 * 24 * 3600, gt=0)
    # Upper bound on what one JSON read window returns.
    read_max_bytes: int = Field(default=1 * MiB, gt=0)

    @field_validator("flush_interval_s", "lease_seconds")
    @classmethod
    def _finite(cls, value: float) -> float:
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("must be finite")
        return value

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.home / 'overspill.db'}"

    @property
    def resolved_blob_url(self) -> str:
        return self.blob_url or (self.home / "blobs").as_uri()

    @property
    def is_embedded_database(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")
