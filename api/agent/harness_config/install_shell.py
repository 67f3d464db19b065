"""How ``install --shell`` routes a harness's own shell into the store without
changing what the harness lets run: Claude Code's Bash by its shell prefix
(``CLAUDE_CODE_SHELL_PREFIX``) with a hook that stores what its sandbox handed
out; Gemini CLI's ``run_shell_command`` output stored by an ``AfterTool`` hook;
opencode's cut bash output by a plugin. Codex has no such way; an earlier
release's ``[features] shell_tool = false`` is undone. Each function edits one
parsed settings document; ``install.plan`` decides which run."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

from overspill.api.agent.harness_config.config_files import ConfigDocument
from overspill.api.agent.harness_config.install_options import (
    NAME,
    SESSION_ENV,
    Options,
    overspill_argv,
    server_env,
)
from overspill.api.agent.harness_config.jsonc import ConfigError, JsoncDocument

HOOK_MARKS = ("hook claude-code", "hook gemini")
CODEX_SHELL_SWITCH = ["features", "shell_tool"]


def claude_settings_path(o: Options) -> Path:
    return (
        o.cwd / ".claude" / "settings.json"
        if o.project
        else o.user_home / ".claude" / "settings.json"
    )


CLAUDE_SHELL_PREFIX = "CLAUDE_CODE_SHELL_PREFIX"
CLAUDE_POST_EVENTS = ("PostToolUse", "PostToolUseFailure")


def claude_shell_prefix() -> str:
    """What Claude Code prefixes each Bash command with: the ``overspill-shell``
    program beside this ``overspill``. A program alone, by its absolute path:
    Claude Code also starts its MCP servers through the prefix, taking the
    whole of it for the program's name."""
    script = Path(overspill_argv()[0]).with_name("overspill-shell")
    if not (script.is_file() and os.access(script, os.X_OK)):
        raise ConfigError(
            f"--shell for claude-code needs the overspill-shell program ({script}); "
            "reinstall the package with its scripts"
        )
    if " -" in str(script):
        raise ConfigError(f"Claude Code cannot run {script} as its shell prefix (' -' in a path)")
    return str(script)


def hook_group() -> dict[str, Any]:
    """Claude Code's ``PostToolUse``/``PostToolUseFailure`` group for Bash: it
    stores what a sandboxed command handed out (``api.client.handoff``) before
    the model reads the answer that names it. Its shell test costs a millisecond
    where there is nothing to store, which is every command outside a sandbox."""
    program = shlex.quote(overspill_argv()[0])
    command = (
        'for f in "${CLAUDE_TMPDIR:-/nonexistent}"/overspill-handoff/art_*.json; do '
        f'[ -e "$f" ] && exec {program} hook claude-code; break; done'
    )
    return {"matcher": "Bash", "hooks": [{"type": "command", "command": command, "timeout": 600}]}


def gemini_hook_group(o: Options) -> dict[str, Any]:
    """Gemini CLI's ``AfterTool`` group for its shell: the output it hands the
    hook is stored when longer than its cut. Gemini CLI has no settings ``env``:
    the store's variables ride on the hook's own command."""
    store = [f"{k}={v}" for k, v in sorted(server_env(o).items()) if k in SESSION_ENV]
    command = shlex.join([*(["env", *store] if store else []), *overspill_argv(), "hook", "gemini"])
    return {
        "matcher": "run_shell_command",
        "hooks": [{"name": NAME, "type": "command", "command": command, "timeout": 600_000}],
    }


def is_our_hook(group: Any) -> bool:
    """A group of ours, by its parsed content (any overspill path, any release)."""
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(h, dict)
        and any(
            str(h.get("command", "")).endswith(mark) or f" {mark};" in str(h.get("command", ""))
            for mark in HOOK_MARKS
        )
        for h in hooks
    )


def codex_shell_back(doc: ConfigDocument) -> None:
    """Codex's own shell back where an earlier release turned it off
    (``[features] shell_tool = false``, which took Codex's commands out of its
    sandbox): install and uninstall both undo it."""
    if doc.get(CODEX_SHELL_SWITCH) is False:
        doc.delete(CODEX_SHELL_SWITCH)
        if doc.get(CODEX_SHELL_SWITCH[:-1]) in ({}, None):
            doc.delete(CODEX_SHELL_SWITCH[:-1])


OPENCODE_PLUGIN = """\
// overspill: opencode's own bash into overspill's store. Written by `overspill
// install opencode --shell`, taken out by `overspill uninstall opencode`.
// When opencode cuts a bash call's output, it keeps the whole of it in a file of
// its own; this hands that file to overspill, which stores it as an artifact
// (and removes the file), and the model reads overspill's view instead: the tail
// and the exact calls that read the rest. The command itself is never touched.
import {{ spawnSync }} from "node:child_process";

const OVERSPILL = {program};
const ENV = {env};

export const Overspill = async ({{ directory }}) => ({{
  "tool.execute.after": async (input, output) => {{
    const meta = output.metadata || {{}};
    if (input.tool !== "bash" || !meta.truncated || !meta.outputPath) return;
    const event = {{
      session_id: input.sessionID,
      command: input.args?.command,
      cwd: directory,
      exit_code: meta.exit ?? null,
      output_path: meta.outputPath,
      shown: output.output,
    }};
    const done = spawnSync(OVERSPILL, ["hook", "opencode"], {{
      input: JSON.stringify(event),
      env: {{ ...process.env, ...ENV }},
      encoding: "utf8",
      timeout: 600000,
    }});
    if (done.status !== 0 || !done.stdout) return; // opencode's own view stays
    try {{
      const answer = JSON.parse(done.stdout);
      if (typeof answer.output === "string") output.output = answer.output;
    }} catch {{}}
  }},
}});
"""


def opencode_plugin_path(o: Options) -> Path:
    base = o.cwd / ".opencode" if o.project else o.user_home / ".config" / "opencode"
    return base / "plugin" / "overspill.js"


def opencode_plugin(o: Options) -> str:
    """The plugin file, naming this ``overspill`` and the store's variables."""
    env = {k: v for k, v in sorted(server_env(o).items()) if k in SESSION_ENV}
    program = json.dumps(overspill_argv()[0])
    return OPENCODE_PLUGIN.format(program=program, env=json.dumps(env))


def claude_settings(o: Options, text: str | None, name: str, remove: bool) -> str:
    """Claude Code's settings with overspill's shell prefix and hooks in (or out):
    the prefix in ``env`` beside the store's variables, the hand-off hook on
    ``PostToolUse`` and ``PostToolUseFailure``. An earlier release's
    ``PreToolUse`` hook (which rewrote commands) goes. A shell prefix the person
    set themselves is theirs: install stops rather than replace it."""
    doc = JsoncDocument(text or "", name)
    prefix = doc.get(["env", CLAUDE_SHELL_PREFIX])
    ours = isinstance(prefix, str) and Path(prefix).name == "overspill-shell"
    if prefix is not None and not ours and not remove:
        raise ConfigError(
            f"{name} sets {CLAUDE_SHELL_PREFIX} to {prefix!r} already; overspill would "
            "replace it (remove it first, or install without --shell)"
        )
    for event in ("PreToolUse", *CLAUDE_POST_EVENTS):
        doc.remove_where(["hooks", event], is_our_hook)
    for var in SESSION_ENV:
        doc.delete(["env", var])
    if ours:
        doc.delete(["env", CLAUDE_SHELL_PREFIX])
    if not remove:
        for event in CLAUDE_POST_EVENTS:
            doc.append(["hooks", event], hook_group())
        for var, value in server_env(o).items():
            if var in SESSION_ENV:
                doc.set(["env", var], value)
        doc.set(["env", CLAUDE_SHELL_PREFIX], claude_shell_prefix())
    for keys in (["hooks", "PreToolUse"], *(["hooks", e] for e in CLAUDE_POST_EVENTS)):
        if doc.get(keys) == []:
            doc.delete(keys)
    for keys in (["hooks"], ["env"]):
        if doc.get(keys) == {}:
            doc.delete(keys)
    return doc.text()


def gemini_hook(doc: ConfigDocument, o: Options, *, remove: bool) -> None:
    """Ours in (or out of) ``hooks.AfterTool`` of Gemini CLI's settings (and out
    of ``BeforeTool``, where an earlier release rewrote commands)."""
    assert isinstance(doc, JsoncDocument)
    for event in ("BeforeTool", "AfterTool"):
        doc.remove_where(["hooks", event], is_our_hook)
    if not remove:
        doc.append(["hooks", "AfterTool"], gemini_hook_group(o))
    for keys in (["hooks", "BeforeTool"], ["hooks", "AfterTool"], ["hooks"]):
        if doc.get(keys) in ([], {}):
            doc.delete(keys)
