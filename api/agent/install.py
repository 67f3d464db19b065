"""``overspill install <client>``: overspill into a harness's own config file.

One entry, named ``overspill``, in the file and format each harness reads (user
scope, or the project's with ``project=True``), edited in place
(``config_files``): the absolute path of this ``overspill`` (no reliance on
PATH), the environment the server needs (owner, home -- or a server's URL and
the file holding its token), and each harness's own settings (Codex:
``required``, start-up and call timeouts). ``shell=True`` also routes the
harness's own shell into the store without changing what it lets run:
Claude Code's Bash through overspill by its shell prefix
(``CLAUDE_CODE_SHELL_PREFIX``, with a hook that stores what its sandbox handed
out), Gemini CLI's ``run_shell_command`` output stored by an ``AfterTool`` hook.
Codex has no such way (``api.cli.install.NO_SHELL`` says why); an earlier
release's ``[features] shell_tool = false`` is undone.

Every edit is planned first (``plan``): a file that does not parse stops the
whole install before anything is written; ``--dry-run`` prints the plan as a
unified diff; applying it keeps a backup beside each changed file; a second
install changes nothing. ``uninstall`` removes the entry (and the hook) by its
parsed key.
"""

from __future__ import annotations

import difflib
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config_files import ConfigDocument, document
from .harnesses import budget_for, harness_by_key
from .jsonc import ConfigError, JsoncDocument

CLIENTS = ("claude-code", "codex", "gemini", "opencode", "cursor", "goose")
NAME = "overspill"
HOOK_MARKS = ("hook claude-code", "hook gemini")
SHELL_CLIENTS = ("claude-code", "gemini", "opencode")  # whose own shell --shell routes
CODEX_SHELL_SWITCH = ["features", "shell_tool"]
BACKUP_SUFFIX = ".overspill-backup"


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


@dataclass
class Edit:
    path: Path
    before: str | None  # None: the file does not exist yet
    after: str | None  # None: the file goes (a plugin file of ours, at uninstall)

    @property
    def changes(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        before = (self.before or "").splitlines(keepends=True)
        after = (self.after or "").splitlines(keepends=True)
        name = str(self.path)
        return "".join(
            difflib.unified_diff(
                before,
                after,
                f"{name} (now)" if self.before is not None else "/dev/null",
                name if self.after is not None else "/dev/null",
            )
        )


# -- what each harness reads ---------------------------------------------------------------


def server_env(o: Options) -> dict[str, str]:
    """The environment ``overspill mcp`` starts with: never a secret (a token is
    named by its file), an absolute home, and the harness's answer budget where
    its cut is known."""
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


def _codex_home(o: Options) -> Path:
    return Path(os.environ.get("CODEX_HOME") or o.user_home / ".codex")


def config_path(o: Options) -> tuple[Path, str, list[str]]:
    """The file an entry goes in, its format, and the key path of the entry."""
    home, here = o.user_home, o.cwd
    c = o.client
    if c == "claude-code":
        return (
            (here / ".mcp.json" if o.project else home / ".claude.json"),
            "json",
            ["mcpServers", NAME],
        )
    if c == "codex":
        base = here / ".codex" if o.project else _codex_home(o)
        return base / "config.toml", "toml", ["mcp_servers", NAME]
    if c == "gemini":
        base = here / ".gemini" if o.project else home / ".gemini"
        return base / "settings.json", "json", ["mcpServers", NAME]
    if c == "opencode":
        path = (
            here / "opencode.json" if o.project else home / ".config" / "opencode" / "opencode.json"
        )
        return path, "json", ["mcp", NAME]
    if c == "cursor":
        base = here / ".cursor" if o.project else home / ".cursor"
        return base / "mcp.json", "json", ["mcpServers", NAME]
    if c == "goose":
        return home / ".config" / "goose" / "config.yaml", "yaml", ["extensions", NAME]
    raise ValueError(f"no client {c!r} (clients: {', '.join(CLIENTS)})")


def entry(o: Options) -> dict[str, Any]:
    """The server entry in the harness's own shape."""
    argv, env = overspill_argv(), server_env(o)
    command, args = argv[0], [*argv[1:], "mcp"]
    c = o.client
    if c == "claude-code":
        return {"type": "stdio", "command": command, "args": args, "env": env}
    if c == "codex":
        # required: Codex stops at start-up if overspill cannot start, instead of
        # running without the tools the model was told about.
        return {
            "command": command,
            "args": args,
            "env": env,
            "required": True,
            "startup_timeout_sec": 20,
            "tool_timeout_sec": 660,  # a bash call may run 600 s
        }
    if c == "gemini":
        return {"command": command, "args": args, "env": env, "timeout": 660_000}
    if c == "opencode":
        return {"type": "local", "command": [command, *args], "environment": env, "enabled": True}
    if c == "cursor":
        return {"command": command, "args": args, "env": env}
    return {  # goose
        "name": NAME,
        "type": "stdio",
        "cmd": command,
        "args": args,
        "envs": env,
        "enabled": True,
        "timeout": 660,
    }


def claude_settings_path(o: Options) -> Path:
    return (
        o.cwd / ".claude" / "settings.json"
        if o.project
        else o.user_home / ".claude" / "settings.json"
    )


SESSION_ENV = ("OVERSPILL_HOME", "OVERSPILL_OWNER", "OVERSPILL_URL", "OVERSPILL_TOKEN_FILE")
"""What ``--shell`` puts in Claude Code's settings ``env``: the store the wrapped
Bash commands write to, the MCP entry's own (and what uninstall takes out)."""


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


def _codex_shell_back(doc: ConfigDocument) -> None:
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
    import json

    env = {k: v for k, v in sorted(server_env(o).items()) if k in SESSION_ENV}
    program = json.dumps(overspill_argv()[0])
    return OPENCODE_PLUGIN.format(program=program, env=json.dumps(env))


def _claude_settings(o: Options, text: str | None, name: str, remove: bool) -> str:
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


def _gemini_hook(doc: ConfigDocument, o: Options, *, remove: bool) -> None:
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


# -- planning and applying -----------------------------------------------------------------


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def _doc(path: Path, kind: str, text: str | None) -> ConfigDocument:
    return document(kind, text or "", str(path))


def plan(o: Options, *, remove: bool = False) -> list[Edit]:
    """Every edit an install (or ``remove``: an uninstall) makes; raises
    ConfigError, before anything is written, for a file that does not parse."""
    edits = []
    path, kind, key = config_path(o)
    before = _read(path)
    doc = _doc(path, kind, before)
    if remove:
        doc.delete(key)
        if doc.get(key[:-1]) in ({}, None):  # what only held ours goes with it
            doc.delete(key[:-1])
    else:
        doc.set(key, entry(o))
    if o.client == "gemini" and (o.shell or remove):
        _gemini_hook(doc, o, remove=remove)
    if o.client == "codex":
        _codex_shell_back(doc)
    if before is not None or not remove:
        edits.append(Edit(path, before, doc.text()))
    if o.client == "claude-code" and (o.shell or remove):
        settings = claude_settings_path(o)
        text = _read(settings)
        edits.append(Edit(settings, text, _claude_settings(o, text, str(settings), remove)))
        if text is None and remove:
            edits.pop()
    if o.client == "opencode" and (o.shell or remove):
        plugin = opencode_plugin_path(o)
        before = _read(plugin)
        ours = before is None or before.startswith("// overspill: ")
        if not ours:
            raise ConfigError(f"{plugin} exists and is not overspill's; it was left as it was")
        if not remove:
            edits.append(Edit(plugin, before, opencode_plugin(o)))
        elif before is not None:
            edits.append(Edit(plugin, before, None))
    if o.client == "gemini" and o.project and not remove:
        # Gemini CLI reads a project's settings only in a folder the person trusts.
        trusted = o.user_home / ".gemini" / "trustedFolders.json"
        text = _read(trusted)
        folders = JsoncDocument(text or "", str(trusted))
        if folders.get([str(o.cwd)]) is None:
            folders.set([str(o.cwd)], "TRUST_FOLDER")
        edits.append(Edit(trusted, text, folders.text()))
    return [e for e in edits if e.changes]


def apply(edits: list[Edit]) -> list[Path]:
    """Write each edit (atomically, keeping the file's mode), a backup of what
    was there beside it; the paths written."""
    written = []
    for edit in edits:
        edit.path.parent.mkdir(parents=True, exist_ok=True)
        mode = 0o600
        if edit.before is not None:
            mode = edit.path.stat().st_mode & 0o777
            backup = edit.path.with_name(edit.path.name + BACKUP_SUFFIX)
            backup.write_text(edit.before)
            os.chmod(backup, mode)
        if edit.after is None:
            edit.path.unlink()
            written.append(edit.path)
            continue
        tmp = edit.path.with_name(f".{edit.path.name}.overspill-{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "w") as f:
            f.write(edit.after)
        os.replace(tmp, edit.path)
        written.append(edit.path)
    return written


__all__ = [
    "CLIENTS",
    "ConfigError",
    "Edit",
    "Options",
    "apply",
    "entry",
    "hook_group",
    "is_our_hook",
    "overspill_argv",
    "plan",
    "server_env",
]
