"""Executor settings (env ``OVERSPILL_*`` or the TOML file), validated once at load.

Every number must be positive and finite; a bad value is rejected with a message
naming the setting, before any command runs.
"""

from __future__ import annotations

from typing import Literal

from overspill.artifacts.settings_base import SettingsBase, setting

MiB = 1024 * 1024

# Failure-like lines (RE2, one per line), by the shapes tools print them in, not
# by a word anywhere: a file named ``error.py`` or ``libgpg-error.so``, ``0 errors``,
# ``-Werror`` or a test named ``test_errors`` is not a failure. Measured on real
# outputs marked by hand: ``bench/failure_quotes.py``, ``tests/failure_corpus``.
DEFAULT_FAILURE_PATTERNS = "\n".join(
    [
        # A tool's own verdict opening the line: error:, error[E0308]:, fatal:, FAIL:
        r"(?i)^\s*(?:error|fatal(?: error)?|panic|fail(?:ed|ure)?)(?:\[[^\]]*\])?:",
        # ... or after a location or a program's name: bad.c:4:20: error:, typed.py:2:
        # error:, a.ts(1,7): error TS2322:, tar: Error is..., curl: (7) Failed to...
        r"(?i):\s(?:fatal )?error(?: [A-Z]+\d+)?:|^[\w.-]+: (?:\(\d+\) )?(?:fatal )?(?:error|failed)\b",
        # A level or a verdict in capitals where tools print one: opening the line
        # (FAILED t::x), after a time ("12:00:01 ERROR"), in brackets ([ERROR]),
        # closing a test's line (t::x FAILED [ 5%]), pytest's and go's headings.
        r"^(?:FAIL(?:ED)?|ERROR|FATAL)\b|[\d\]]\s+(?:ERROR|FATAL)\s|\[(?:ERROR|FATAL|FAIL(?:ED)?)\]"
        r"|\s(?:FAILED|ERROR)(?:\s+\[[\s\d]+%\])?$|_ ERROR (?:at|collecting) |^\s*--- FAIL:",
        # An exception as it ends a traceback (pytest's E lines and locations too)
        r"^(?:\S+:\d+: |Caused by: |\s*(?:E\s+)?)(?:[\w$]+\.)*[A-Z]\w*(?:Error|Exception)(?::|$)",
        r"^(?:Traceback \(most recent call last\)|Exception in thread )|panicked at",
        # make's and compileall's stars, npm's prefix
        r"\*\*\* (?:.* )?Error\b|^npm (?:ERR!|error) ",
        # A count of failures that is not zero: 2 errors, 1 failed, (failures=1
        r"(?i)\b[1-9]\d* (?:errors?|failed|failures?)\b|\((?:failures|errors)=[1-9]",
        # Assertions (Rust's), the linker, git's merge
        r"(?i)^assertion\b.* failed\b|undefined reference to |^CONFLICT \(|^Automatic merge failed",
        # The shell's and the kernel's own words
        r": (?:command not found|No such file or directory|Permission denied)$"
        r"|Segmentation fault|core dumped",
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
