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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from overspill.api.agent.harness_config.config_files import ConfigDocument, document
from overspill.api.agent.harness_config.install_options import (
    CLIENTS,
    NAME,
    Options,
    overspill_argv,
    server_env,
)
from overspill.api.agent.harness_config.install_shell import (
    claude_settings,
    claude_settings_path,
    codex_shell_back,
    gemini_hook,
    opencode_plugin,
    opencode_plugin_path,
)
from overspill.api.agent.harness_config.jsonc import ConfigError, JsoncDocument

BACKUP_SUFFIX = ".overspill-backup"


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
        gemini_hook(doc, o, remove=remove)
    if o.client == "codex":
        codex_shell_back(doc)
    if before is not None or not remove:
        edits.append(Edit(path, before, doc.text()))
    if o.client == "claude-code" and (o.shell or remove):
        settings = claude_settings_path(o)
        text = _read(settings)
        edits.append(Edit(settings, text, claude_settings(o, text, str(settings), remove)))
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
    "plan",
]
