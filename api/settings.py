"""Settings for the outside surfaces, read once where a command or server starts."""

from __future__ import annotations

import getpass

from overspill.artifacts.settings_base import SettingsBase, setting


def _default_owner() -> str:
    try:
        return f"user:{getpass.getuser()}"
    except (KeyError, OSError):
        return "user:local"


class ClientSettings(SettingsBase):
    url: str | None = None
    token: str | None = None
    owner: str = setting(default_factory=_default_owner)
    session_id: str | None = None


class ServerSettings(SettingsBase):
    # Seconds between cleanup passes of `overspill serve` (0 turns it off).
    sweep_interval_s: float = setting(300, ge=0)
