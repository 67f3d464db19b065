"""Executor settings (env ``OVERSPILL_*`` or the TOML file), validated once at load.

Every number must be positive and finite; a bad value is rejected with a message
naming the setting, before any command runs.
"""

from __future__ import annotations

from typing import Literal

from overspill.artifacts.settings_base import SettingsBase, setting

MiB = 1024 * 1024

# Failure-like lines (RE2, one per line): word starts keep ``-Werror`` and
# ``stderr`` out; the second finds ``TypeError`` and ``NullPointerException``.
DEFAULT_FAILURE_PATTERNS = "\n".join(
    [
        r"(?i)\b(?:errors?|fatal|panic(?:ked)?|traceback|exception|fail(?:s|ed|ures?)?)\b",
        r"[a-z](?:Error|Exception)\b",
    ]
)


class ShellSettings(SettingsBase):
    timeout_ms: float = setting(120_000, gt=0)
    max_timeout_ms: float = setting(600_000, gt=0)
    max_output_bytes: int = setting(64_000, gt=0, unit="size")
    max_spill_bytes: int = setting(64 * MiB, gt=0, unit="size")
    grace_ms: float = setting(3_000, gt=0)
    # The compatibility layer: legacy private spill files beside the artifact.
    legacy_spill: bool = True
    spill_sweep_days: float = setting(30, ge=0)
    # Root of the legacy tool-result spill files (default: a private dsh-spill-XXXXXX
    # directory made under the temp dir on first use).
    result_spill_dir: str | None = None
    retention_mode: Literal["tail", "head_tail"] = "tail"
    render_mode: Literal["artifact", "legacy"] = "artifact"
    # Names with this prefix are the harness's own and never reach a child.
    reserved_env_prefix: str = "OVERSPILL_"
    # The most of one command stream stored as an artifact (unset: the store's own
    # cap, OVERSPILL_MAX_ARTIFACT_BYTES, which bounds every artifact however made).
    stream_max_bytes: int | None = setting(None, gt=0, unit="size", aliases=("artifact_max_bytes",))
    # Secrets are masked (same length) before any byte is kept or shown. Turning
    # it off is for an owner an admin has allowed to (``policy set --redact off``).
    redact: bool = True
    # Built-in rules switched off, comma-separated (``jwt,openai_key``).
    redact_disable: str = ""
    # Patterns of one's own, one regular expression per line; the match (or its
    # first group) is masked.
    redact_patterns: str = ""
    # Per-tool inline budgets of saved results (``web_fetch=20000,read_file=80KB``)
    # and tools whose results are never written anywhere (``vault_read,env_dump``).
    result_budgets: str = ""
    never_persist: str = ""
    # A truncated stream's view quotes the lines of its part not shown that match
    # one of these (one RE2 pattern per line; empty: off), with the grep listing all.
    failure_patterns: str = DEFAULT_FAILURE_PATTERNS
    # A shown line longer than this is clipped, with the call that reads the rest.
    shown_line_bytes: int = setting(2_000, gt=0, unit="size")
