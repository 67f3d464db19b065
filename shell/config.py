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
    timeout_ms: float = setting(120_000, gt=0, doc="the executor's deadline for a command")
    max_timeout_ms: float = setting(
        600_000, gt=0, doc="the most a caller may ask for as a command's deadline"
    )
    max_output_bytes: int = setting(
        64_000, unit="size", doc="bytes of each stream kept in memory and shown"
    )
    max_spill_bytes: int = setting(
        64 * MiB,
        unit="size",
        shown="`64MiB`",
        doc="cap on a legacy spill file (discarded past it)",
    )
    grace_ms: float = setting(3_000, gt=0, doc="SIGTERM -> SIGKILL grace; bounds pipe draining")
    legacy_spill: bool = setting(
        True,
        doc="the compatibility layer's spill files (bash streams and saved tool results)",
    )
    spill_sweep_days: float = setting(
        30,
        ge=0,
        doc="legacy spill files older than this many days are deleted by the compatibility "
        "layer's safety rules (0: never)",
    )
    result_spill_dir: str | None = setting(
        None,
        shown="a private `dsh-spill-XXXXXX` temp dir",
        doc="root of the legacy tool-result spill files",
    )
    retention_mode: Literal["tail", "head_tail"] = setting(
        "tail", doc="`head_tail` also keeps the head of each stream"
    )
    render_mode: Literal["artifact", "legacy"] = setting(
        "artifact", doc="`legacy` renders exactly the old marker strings"
    )
    reserved_env_prefix: str = setting(
        "OVERSPILL_",
        doc="variables with this prefix are the harness's own and never reach a command",
    )
    # Unset: the store's own cap, which bounds every artifact however made.
    stream_max_bytes: int | None = setting(
        None,
        unit="size",
        aliases=("artifact_max_bytes",),
        shown="the store's cap",
        doc="the most of one command stream stored as an artifact (was "
        "`OVERSPILL_ARTIFACT_MAX_BYTES`)",
    )
    # Turning it off is for an owner an admin has allowed to (``policy set --redact off``).
    redact: bool = setting(
        True,
        doc="mask secrets before any byte is kept or shown (off: only where an admin's "
        "policy allows it)",
    )
    redact_disable: str = setting(
        "", doc="built-in rules switched off, comma-separated (`jwt,openai_key`)"
    )
    redact_patterns: str = setting(
        "",
        doc="your own patterns, one per line (the match, or its first group, is masked; "
        "up to 256 bytes)",
    )
    result_budgets: str = setting(
        "",
        doc="per-tool preview budgets of saved results, `web_fetch=20000,read_file=80KB` "
        "(others: 50000)",
    )
    never_persist: str = setting(
        "",
        doc="tools whose results are never written anywhere, comma-separated (the caller "
        "keeps its result)",
    )
    failure_patterns: str = setting(
        DEFAULT_FAILURE_PATTERNS,
        shown="the list above",
        doc="failure-like lines quoted from a truncated stream's unseen part (RE2, one per "
        "line; empty: off)",
    )
    shown_line_bytes: int = setting(
        2_000,
        unit="size",
        doc="a shown line longer than this is clipped, with the call that reads the rest",
    )
