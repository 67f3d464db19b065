"""``overspill install <client>``: overspill into a harness's own config file.

One entry, named ``overspill``, in the file and format each harness reads (user
scope, or the project's with ``project=True``), edited in place
(``config_files``): the absolute path of this ``overspill`` (no reliance on
PATH), the environment the server needs (owner, home -- or a server's URL and
the file holding its token), and each harness's own settings (Codex:
``required``, start-up and call timeouts). ``shell=True`` also routes the
harness's own shell through ``overspill run``: Claude Code's Bash (a
``PreToolUse`` hook), Gemini CLI's ``run_shell_command`` (a ``BeforeTool`` hook);
Codex runs a hook only once a person has reviewed and trusted it in its TUI, so
there ``--shell`` turns Codex's own shell off (``[features] shell_tool =
false``) and its model runs commands through overspill's ``bash`` tool.

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
SHELL_CLIENTS = ("claude-code", "codex", "gemini")  # whose own shell --shell routes
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
    after: str

    @property
    def changes(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        before = (self.before or "").splitlines(keepends=True)
        after = self.after.splitlines(keepends=True)
        name = str(self.path)
        return "".join(
            difflib.unified_diff(
                before, after, f"{name} (now)" if self.before is not None else "/dev/null", name
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


def hook_group() -> dict[str, Any]:
    """Claude Code's ``PreToolUse`` group that hands every Bash command to overspill."""
    command = shlex.join([*overspill_argv(), "hook", "claude-code"])
    return {"matcher": "Bash", "hooks": [{"type": "command", "command": command, "timeout": 30}]}


def gemini_hook_group(o: Options) -> dict[str, Any]:
    """Gemini CLI's ``BeforeTool`` group for its shell. Gemini CLI has no settings
    ``env``: the store's variables ride on the hook's own command, which puts
    them on the command it wraps."""
    store = [f"{k}={v}" for k, v in sorted(server_env(o).items()) if k in SESSION_ENV]
    command = shlex.join([*(["env", *store] if store else []), *overspill_argv(), "hook", "gemini"])
    return {
        "matcher": "run_shell_command",
        "hooks": [{"name": NAME, "type": "command", "command": command, "timeout": 30_000}],
    }


def is_our_hook(group: Any) -> bool:
    """A group of ours, by its parsed content (any overspill path, any release)."""
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and str(h.get("command", "")).endswith(HOOK_MARKS) for h in hooks
    )


def _codex_shell(doc: ConfigDocument, *, remove: bool) -> None:
    """Codex's own shell off (install) or back to its default (uninstall: the
    switch goes only where it is off, as install left it)."""
    if not remove:
        doc.set(CODEX_SHELL_SWITCH, False)
    elif doc.get(CODEX_SHELL_SWITCH) is False:
        doc.delete(CODEX_SHELL_SWITCH)
        if doc.get(CODEX_SHELL_SWITCH[:-1]) in ({}, None):
            doc.delete(CODEX_SHELL_SWITCH[:-1])


def _gemini_hook(doc: ConfigDocument, o: Options, *, remove: bool) -> None:
    """Ours in (or out of) ``hooks.BeforeTool`` of Gemini CLI's settings."""
    assert isinstance(doc, JsoncDocument)
    doc.remove_where(["hooks", "BeforeTool"], is_our_hook)
    if not remove:
        doc.append(["hooks", "BeforeTool"], gemini_hook_group(o))
        return
    for keys in (["hooks", "BeforeTool"], ["hooks"]):
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
    if o.client == "codex" and (o.shell or remove):
        _codex_shell(doc, remove=remove)
    if before is not None or not remove:
        edits.append(Edit(path, before, doc.text()))
    if o.client == "claude-code" and (o.shell or remove):
        settings = claude_settings_path(o)
        text = _read(settings)
        hooks = JsoncDocument(text or "", str(settings))
        hooks.remove_where(["hooks", "PreToolUse"], is_our_hook)
        for name in SESSION_ENV:
            hooks.delete(["env", name])
        if not remove:
            hooks.append(["hooks", "PreToolUse"], hook_group())
            for name, value in server_env(o).items():
                if name in SESSION_ENV:
                    hooks.set(["env", name], value)
        else:  # what only held ours goes with it
            for keys in (["hooks", "PreToolUse"], ["hooks"], ["env"]):
                if hooks.get(keys) in ([], {}):
                    hooks.delete(keys)
        if text is not None or not remove:
            edits.append(Edit(settings, text, hooks.text()))
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
