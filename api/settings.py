"""Every setting, read once where a process starts, and handed down from there.

``Settings.load()`` reads the four sections (the store, the executor, the
client, the server) from ``OVERSPILL_*`` variables over the TOML file named by
``OVERSPILL_CONFIG`` over the defaults, validates each value (a bad one is one
line naming the variable), and notes every name that is no setting, in the
environment or the file, with the closest real one. ``main``, ``serve`` and
``create_app`` call it; nothing below them reads the environment again.

Standard library only: a CLI verb loads it before it knows whether it will
need the store.
"""

from __future__ import annotations

import os
from typing import Literal, NamedTuple

from overspill.artifacts.config import StoreSettings
from overspill.artifacts.settings_base import (
    PREFIX,
    SettingsBase,
    env_names,
    file_values,
    setting,
)
from overspill.shell.config import ShellSettings


def _default_owner() -> str:
    """``user:<login>``: the login variables as getpass reads them, then the
    password database (getpass itself imports termios for every verb)."""
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if login := os.environ.get(name):
            return f"user:{login}"
    try:
        import pwd

        return f"user:{pwd.getpwuid(os.getuid()).pw_name}"
    except (KeyError, ImportError):
        return "user:local"


class ClientSettings(SettingsBase):
    url: str | None = setting(
        None, doc="a server for the CLI and the executor's remote sink (with a token)"
    )
    token: str | None = setting(None, doc="the token for `OVERSPILL_URL`")
    # The file holding it: what ``overspill install --http`` writes into a
    # harness's config, so the token itself is in no config file.
    token_file: str | None = setting(
        None, doc="the token's file instead of `OVERSPILL_TOKEN` (what `install --http` writes)"
    )
    owner: str = setting(
        default_factory=_default_owner,
        shown="`user:$USER`",
        doc="owner stamped on artifacts made in-process",
    )
    session_id: str | None = setting(None, doc="session label stamped on artifacts made in-process")
    # In the embedded default every verb talks to a local server on a Unix socket
    # in the home, started on demand; off keeps everything in the verb's process.
    local_server: bool = setting(
        True,
        doc="verbs use this home's local server (started on demand); off: the store in "
        "each verb's process",
    )
    # Written by ``overspill install`` for a harness whose cut is known; unset:
    # chosen by the client's name at the handshake (``api.agent.harnesses``).
    answer_budget: int | None = setting(
        None,
        unit="size",
        shown="by the harness's name",
        doc="most bytes of one `overspill mcp` answer (both stream tails of a `bash` answer "
        "and their lines)",
    )
    # Auto is on a terminal that no agent harness gave it (``api.cli.live``).
    live: Literal["auto", "on", "off"] = setting(
        "auto",
        doc="`run` shows the output as it comes: `auto` (on a terminal, not under a "
        "harness), `on`, `off`",
    )


class ServerSettings(SettingsBase):
    sweep_interval_s: float = setting(
        300, ge=0, doc="cleanup interval of `overspill serve` in seconds (0: off)"
    )
    local_server_idle_s: float = setting(
        900, gt=0, doc="the local server exits after this long without a request"
    )
    # Per principal; past either, 429 with Retry-After.
    max_expensive_reads: int = setting(
        4,
        gt=0,
        doc="concurrent expensive reads (grep, large ranges, downloads) per principal; "
        "past it 429 with Retry-After",
    )
    max_followers: int = setting(
        32, gt=0, doc="concurrent followers (`follow=true`) per principal; past it 429"
    )
    # DNS rebinding (``api.server.origins``).
    allowed_hosts: str = setting(
        "",
        shown="loopback names and `--host` (any, on `0.0.0.0`)",
        doc="more names a browser may reach `overspill serve` by, comma-separated (`*`: any)",
    )
    allowed_origins: str = setting(
        "",
        shown="the server's own",
        doc="origins of pages whose requests `overspill serve` takes, comma-separated",
    )


# The one variable that is no section's field: it names the TOML file itself.
_OWN_NAMES = {"config"}


def settings_table() -> str:
    """The README's table of settings, made from the declarations (one row each;
    ``tests/test_settings_doc.py`` holds the README to it)."""
    sections = (StoreSettings, ShellSettings, ClientSettings, ServerSettings)
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    lines.append(f"| `{PREFIX}CONFIG` | none | a TOML file of settings (names in lower case) |")
    for section in sections:
        lines += [
            f"| `{name}` | {default} | {doc} |" for name, default, doc in section.documented()
        ]
    return "\n".join(lines) + "\n"


class Settings(NamedTuple):
    """The whole configuration of one process."""

    store: StoreSettings
    shell: ShellSettings
    client: ClientSettings
    server: ServerSettings
    warnings: tuple[str, ...] = ()

    @classmethod
    def load(cls) -> Settings:
        """Read and check every section; unknown and renamed names become warnings."""
        sections = (StoreSettings, ShellSettings, ClientSettings, ServerSettings)
        SettingsBase._deprecated.clear()
        store, shell = StoreSettings.load(), ShellSettings.load()
        client, server = ClientSettings.load(), ServerSettings.load()
        if client.token is None and client.token_file:
            client = client.replace(token=_read_token(client.token_file))
        known = {name for s in sections for name in s.field_names()} | _OWN_NAMES
        notes = [f"{note} (the old name still works for now)" for note in SettingsBase._deprecated]
        for name in env_names():
            if name not in known:
                close = _closest(name, known)
                hint = f"; did you mean {PREFIX}{close.upper()}?" if close else ""
                notes.append(f"{PREFIX}{name.upper()} is not a setting{hint}")
        for name in sorted(file_values()):
            if name not in known:
                close = _closest(name, known)
                hint = f"; did you mean {close}?" if close else ""
                notes.append(f"{name} in the OVERSPILL_CONFIG file is not a setting{hint}")
        return cls(store, shell, client, server, tuple(notes))


def _read_token(path: str) -> str:
    """The token in ``OVERSPILL_TOKEN_FILE``: its first line, checked here once."""
    from overspill.artifacts.errors import ConfigurationError

    try:
        with open(path) as f:
            token = f.readline().strip()
    except OSError as exc:
        raise ConfigurationError(
            f"invalid setting OVERSPILL_TOKEN_FILE: cannot read {path}: {exc.strerror}"
        ) from None
    if not token:
        raise ConfigurationError(f"invalid setting OVERSPILL_TOKEN_FILE: {path} is empty")
    return token


def _closest(name: str, known: set[str]) -> str | None:
    import difflib  # only when a name is wrong

    close = difflib.get_close_matches(name, sorted(known), n=1)
    return close[0] if close else None
