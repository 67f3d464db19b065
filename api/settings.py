"""Settings for the outside surfaces, read once where a command or server starts."""

from __future__ import annotations

import getpass

from pydantic import Field

from overspill.artifacts.config import SettingsBase


def _default_owner() -> str:
    try:
        return f"user:{getpass.getuser()}"
    except (KeyError, OSError):
        return "user:local"


class ClientSettings(SettingsBase):
    url: str | None = None
    token: str | None = None
    owner: str = Field(default_factory=_default_owner)
    session_id: str | None = None


class ServerSettings(SettingsBase):
    # Seconds between cleanup passes of `overspill serve` (0 turns it off).
    sweep_interval_s: float = Field(default=300, ge=0)
