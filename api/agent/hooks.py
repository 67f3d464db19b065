"""A harness's own shell, through ``overspill run``: Claude Code's ``PreToolUse``
hook on ``Bash`` (``overspill hook claude-code``) and Gemini CLI's ``BeforeTool``
hook on ``run_shell_command`` (``overspill hook gemini``).

The hook receives the call Claude Code is about to make and answers with
``updatedInput``: the same call, its command wrapped in ``overspill run``. The
harness's own permission rules, working directory and exit status stay as they
were; the output the model sees is overspill's tail with the artifact's id, kept
under the harness's own cut: Claude Code replaces a Bash result over 30,000
characters with a short preview of its own, which would drop overspill's marker
and id. A foreground command gets overspill's own deadline just before the
harness's, so overspill ends it and reports the tail instead of being killed
with it. A background command (``run_in_background``) is left as the harness
runs it: its output is read while it runs, and ``overspill run`` would hold
it until the end.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any, NamedTuple

CLAUDE_CODE_BASH_CUT = 30_000
"""Characters of Bash output past which Claude Code shows its own preview."""
CLAUDE_CODE_BUDGET = CLAUDE_CODE_BASH_CUT * 9 // 10
CLAUDE_CODE_DEFAULT_TIMEOUT_MS = 120_000


def claude_code_pre_bash(
    event: dict[str, Any], overspill: list[str], rules: Rules | None = None
) -> dict[str, Any] | None:
    """The hook's answer to one ``PreToolUse`` event (None: leave the call as is).

    Claude Code asks the person again about any command a hook rewrites, unless
    the hook approves it; so the hook approves the wrapped command exactly where
    the person's own rules (``rules``: their settings files' Bash rules) would
    have let the original run without asking, never more. Where one of their
    rules asks about or denies the original, the call is left as it is and
    Claude Code decides on the original; where no rule speaks, the person is
    asked about the wrapped command (it shows the original whole). The store the
    wrapped command writes to comes from the session's environment (``overspill
    install --shell`` sets ``OVERSPILL_HOME`` and ``OVERSPILL_OWNER`` in Claude
    Code's settings ``env``)."""
    if event.get("tool_name") != "Bash":
        return None
    tool_input = event.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    command = tool_input.get("command")
    if not isinstance(command, str) or not command.strip() or _wrapped(command, overspill):
        return None
    if tool_input.get("run_in_background"):
        return None
    decision = (rules or Rules()).decision(command, str(event.get("permission_mode") or ""))
    if decision is None:
        return None
    timeout = tool_input.get("timeout")
    if not isinstance(timeout, int | float) or timeout <= 0:
        timeout = CLAUDE_CODE_DEFAULT_TIMEOUT_MS
    argv = [*overspill, "run", "--answer-budget", str(CLAUDE_CODE_BUDGET)]
    session = event.get("session_id")
    if isinstance(session, str) and session:
        argv += ["--session-id", session]
    # overspill's own deadline first, so it ends the command and reports its tail
    # instead of being killed with it by the harness.
    argv += ["--timeout-ms", str(max(1_000, int(timeout) - 2_000)), "--", command]
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": "overspill stores the whole output (the command is "
            "unchanged inside overspill run)",
            "updatedInput": {**tool_input, "command": shlex.join(argv)},
        }
    }


GEMINI_SHELL_TIMEOUT_MS = 600_000
"""Gemini CLI's shell has no deadline of its own: a wrapped command gets
overspill's longest (``OVERSPILL_MAX_TIMEOUT_MS``'s default)."""


def gemini_before_shell(
    event: dict[str, Any], overspill: list[str], env: dict[str, str], budget: int
) -> dict[str, Any] | None:
    """The hook's answer to one ``BeforeTool`` event (None: leave the call as is).

    Gemini CLI merges ``hookSpecificOutput.tool_input`` into the call and tells
    the model a hook changed ``command``; its approvals, directory and the rest
    stay its own. ``env`` holds the store's variables of the hook's own command
    (``overspill install gemini --shell`` writes them there, as Gemini CLI has no
    settings ``env``): the wrapped command carries them to ``overspill run``. A
    background command (``is_background``) is left to the harness."""
    if event.get("tool_name") != "run_shell_command":
        return None
    tool_input = event.get("tool_input")
    if not isinstance(tool_input, dict) or tool_input.get("is_background"):
        return None
    command = tool_input.get("command")
    if not isinstance(command, str) or not command.strip() or _wrapped(command, overspill):
        return None
    store = [f"{name}={value}" for name, value in sorted(env.items())]
    argv = [*(["env", *store] if store else []), *overspill, "run"]
    argv += ["--answer-budget", str(budget)]
    session = event.get("session_id")
    if isinstance(session, str) and session:
        argv += ["--session-id", session]
    argv += ["--timeout-ms", str(GEMINI_SHELL_TIMEOUT_MS), "--", command]
    return {
        "hookSpecificOutput": {
            "hookEventName": "BeforeTool",
            "tool_input": {"command": shlex.join(argv)},
        }
    }


def _wrapped(command: str, overspill: list[str]) -> bool:
    """Already ``[env VAR=… ]overspill run …`` (a hook that runs twice wraps once)."""
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: not a command we wrote
        return False
    while words and (words[0] == "env" or "=" in words[0]):
        words = words[1:]
    return words[: len(overspill) + 1] == [*overspill, "run"]


# -- the person's own Bash rules -------------------------------------------------------------

_OPERATORS = re.compile(r"\s*(?:&&|\|\||;|\||\n)\s*")


class Rules(NamedTuple):
    """A person's ``Bash`` permission rules, read from Claude Code's settings
    files (user, project, project-local), as Claude Code writes them:
    ``Bash``, ``Bash(*)``, ``Bash(npm test:*)`` (a prefix), ``Bash(git *)`` (a
    wildcard), ``Bash(make)`` (exact)."""

    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    @classmethod
    def read(cls, cwd: Path, home: Path) -> Rules:
        from .jsonc import ConfigError, JsoncDocument

        found: dict[str, list[str]] = {"allow": [], "ask": [], "deny": []}
        for path in (
            home / ".claude" / "settings.json",
            cwd / ".claude" / "settings.json",
            cwd / ".claude" / "settings.local.json",
        ):
            try:
                doc = JsoncDocument(path.read_text(), str(path))
            except (OSError, ConfigError):
                continue
            for kind, rules in found.items():
                value = doc.get(["permissions", kind])
                if isinstance(value, list):
                    rules += [r for r in value if isinstance(r, str) and r.startswith("Bash")]
        return cls(tuple(found["allow"]), tuple(found["ask"]), tuple(found["deny"]))

    def decision(self, command: str, mode: str) -> str | None:
        """ "allow", "ask", or None (leave the original to Claude Code's rules)."""
        parts = [p for p in _OPERATORS.split(command.strip()) if p]
        if any(_matches(r, p) for r in self.deny for p in [command, *parts]):
            return None
        if any(_matches(r, p) for r in self.ask for p in [command, *parts]):
            return None
        if mode == "bypassPermissions":
            return "allow"
        if parts and all(any(_matches(r, p) for r in self.allow) for p in parts):
            return "allow"
        return "ask"


def _matches(rule: str, command: str) -> bool:
    if rule in ("Bash", "Bash(*)"):
        return True
    m = re.fullmatch(r"Bash\((.*)\)", rule, re.S)
    if m is None:
        return False
    pattern = m.group(1)
    if pattern.endswith(":*"):
        prefix = pattern[:-2]
        return command == prefix or command.startswith(prefix + " ")
    if "*" in pattern:
        regex = ".*".join(re.escape(piece) for piece in pattern.split("*"))
        return re.fullmatch(regex, command, re.S) is not None
    return command == pattern
