"""Who installs overspill into which harness, and what its entry starts with:
the options of one install, the absolute program, the server's environment.
Shared by the entry (``install``) and the shell routing (``install_shell``)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

CLIENTS = ("claude-code", "codex", "gemini", "opencode", "cursor", "goose")
SHELL_CLIENTS = ("claude-code", "gemini", "opencode")  # whose own shell --shell routes
NAME = "overspill"


def overspill_argv() -> list[str]:
    """The absolute argv of this ``overspill``: the console script beside this
    interpreter, or the interpreter with ``-m`` where there is none."""
    script = Path(sys.executable).with_name("overspill")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "overspill.api.cli"]


@dataclass(frozen=True)
class Options:
    client: str
    project: bool = False  # the project's config (in ``cwd``) instead of the user's
    shell: bool = False  # the harness's own shell through overspill run (a hook)
    url: str | None = None  # a server instead of this machine's store
    token_file: str | None = None  # the file holding that server's token
    owner: str | None = None
    home: str | None = None  # OVERSPILL_HOME written into the entry
    cwd: Path = field(default_factory=Path.cwd)
    user_home: Path = field(default_factory=Path.home)


def server_env(o: Options) -> dict[str, str]:
    """The environment ``overspill mcp`` starts with: never a secret (a token is
    named by its file), an absolute home, and the harness's answer budget where
    its cut is known."""
    from overspill.api.agent.harnesses import budget_for, harness_by_key

    env = {"OVERSPILL_OWNER": o.owner or f"agent:{o.client}"}
    if o.url:
        env["OVERSPILL_URL"] = o.url
        if o.token_file:
            env["OVERSPILL_TOKEN_FILE"] = os.path.abspath(o.token_file)
    elif o.home:
        env["OVERSPILL_HOME"] = os.path.abspath(o.home)
    harness = harness_by_key(o.client)
    if harness is not None and harness.cut_chars is not None:
        env["OVERSPILL_ANSWER_BUDGET"] = str(budget_for(harness.client_names[0]).answer_bytes)
    return env


SESSION_ENV = ("OVERSPILL_HOME", "OVERSPILL_OWNER", "OVERSPILL_URL", "OVERSPILL_TOKEN_FILE")
"""What ``--shell`` puts in Claude Code's settings ``env``: the store the wrapped
Bash commands write to, the MCP entry's own (and what uninstall takes out)."""
