"""``overspill install`` edits each harness's own config file in place.

For every client: the entry lands where that harness reads it, everything else
in the file stays byte for byte (comments, order, other servers), a second
install changes nothing, uninstall gives back the file as it was, ``--dry-run``
only prints a diff, a file that does not parse is left alone with one line of
error. The harness tests (tests/test_harnesses.py) then start each harness on
the file this command wrote.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from pathlib import Path

import pytest

from overspill.api.agent.harness_config.jsonc import JsoncDocument
from tests.helpers import cli_env, run_cli

pytestmark = pytest.mark.slow

# What a person's own config looks like before overspill arrives: comments,
# another server, settings in an order of their own.
BEFORE = {
    "claude-code": (
        ".claude.json",
        '{\n  "numStartups": 41,\n  "mcpServers": {\n    "github": {"command": "gh-mcp"}\n  },\n'
        '  "theme": "dark"\n}\n',
    ),
    "codex": (
        ".codex/config.toml",
        '# my settings\nmodel = "gpt-5.5"  # the one I like\n\n[mcp_servers.github]\n'
        'command = "gh-mcp"\n',
    ),
    "gemini": (
        ".gemini/settings.json",
        '{\n  // mine\n  "theme": "GitHub",\n  /* servers */\n  "mcpServers": {\n'
        '    "github": {"command": "gh-mcp"},\n  },\n}\n',
    ),
    "opencode": (
        ".config/opencode/opencode.json",
        '{\n  "$schema": "https://opencode.ai/config.json",\n  // local tools\n'
        '  "mcp": {\n    "github": {"type": "local", "command": ["gh-mcp"]},\n  },\n}\n',
    ),
    "cursor": (
        ".cursor/mcp.json",
        '{\n\t"mcpServers": {\n\t\t"github": {"command": "gh-mcp"}\n\t}\n}\n',
    ),
    "goose": (
        ".config/goose/config.yaml",
        "# goose\nGOOSE_PROVIDER: openai\nextensions:\n  developer:\n    enabled: true  # on\n"
        "    type: builtin\n",
    ),
}


def _env(home: Path) -> dict[str, str]:
    env = cli_env(OVERSPILL_HOME=home / "store")
    env["HOME"] = str(home)
    env.pop("CODEX_HOME", None)
    env.pop("XDG_CONFIG_HOME", None)
    return env


def _overspill(env: dict[str, str], *args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "overspill.api.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("client", list(BEFORE))
def test_install_adds_one_entry_keeps_the_rest_and_uninstall_gives_the_file_back(
    client: str, tmp_path: Path
) -> None:
    name, before = BEFORE[client]
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(before)
    env = _env(tmp_path)

    code, out, err = _overspill(env, "install", client, "--dry-run")
    assert code == 0 and err == ""
    assert path.read_text() == before  # a dry run changes nothing
    assert out.startswith(f"--- {path} (now)\n+++ {path}\n")
    added = [ln[1:] for ln in out.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    removed = [ln for ln in out.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert any("overspill" in ln for ln in added)

    code, out, _ = _overspill(env, "install", client)
    assert code == 0 and f"overspill added to {path}" in out
    after = path.read_text()
    # Everything the person wrote is still there, line for line, in order.
    kept = [ln for ln in before.splitlines() if ln.strip()]
    assert [ln for ln in after.splitlines() if ln in kept] == kept or removed
    assert "overspill" in after
    assert Path(str(path) + ".overspill-backup").read_text() == before
    argv = re.findall(r"(/\S+/overspill|/\S+/python\S*)", after)
    assert argv and os.path.isabs(argv[0].strip('"'))  # no reliance on PATH

    assert _overspill(env, "install", client)[1].startswith("overspill is already in")
    assert path.read_text() == after  # idempotent

    code, out, _ = _overspill(env, "uninstall", client)
    assert code == 0 and f"overspill removed from {path}" in out
    assert path.read_text() == before


def test_the_entry_starts_the_server_with_its_own_home_owner_and_budget(tmp_path: Path) -> None:
    env = _env(tmp_path)
    assert _overspill(env, "install", "gemini")[0] == 0
    settings = json.loads((tmp_path / ".gemini/settings.json").read_text())
    entry = settings["mcpServers"]["overspill"]
    assert entry["args"][-1] == "mcp"
    assert entry["env"] == {
        "OVERSPILL_OWNER": "agent:gemini",
        "OVERSPILL_HOME": str(tmp_path / "store"),
        "OVERSPILL_ANSWER_BUDGET": "36000",
    }
    code, out, err = _overspill(env, "install", "--check", "gemini")
    assert code == 0, err
    assert "gemini (clientInfo 'gemini-cli-mcp-client') gets answers of at most 36000 bytes" in out
    assert re.search(r"artifact_read\s+Read a stored output\s+read-only", out)
    assert re.search(r"\[no stored outputs in session mcp-\d{8}T\d{6}-\d+\]", out)


def test_a_file_that_does_not_parse_is_left_alone_with_one_line(tmp_path: Path) -> None:
    env = _env(tmp_path)
    for client, name, text in [
        ("cursor", ".cursor/mcp.json", '{"mcpServers": {'),
        ("codex", ".codex/config.toml", "[mcp_servers\n"),
        ("goose", ".config/goose/config.yaml", "extensions: [unclosed\n"),
    ]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        code, out, err = _overspill(env, "install", client)
        assert code != 0 and out == ""
        assert err.startswith(f"overspill: {path}") and err.count("\n") == 1
        assert "the file was left as it was" in err and "Traceback" not in err
        assert path.read_text() == text
        assert not Path(str(path) + ".overspill-backup").exists()


def test_claude_code_s_rewrite_of_its_file_is_recognised_and_never_duplicated(
    tmp_path: Path,
) -> None:
    env = _env(tmp_path)
    assert _overspill(env, "install", "claude-code")[0] == 0
    path = tmp_path / ".claude.json"
    # Claude Code rewrites the file at start: another indent, its own keys first.
    data = json.loads(path.read_text())
    path.write_text(json.dumps({"firstStartTime": "2026-12-06", **data}, indent=4))
    assert _overspill(env, "install", "claude-code", "--owner", "agent:me")[0] == 0
    text = path.read_text()
    assert text.count('"overspill"') == 1
    assert json.loads(text)["mcpServers"]["overspill"]["env"]["OVERSPILL_OWNER"] == "agent:me"
    # A key written twice by hand is left once.
    doubled = text.replace('"mcpServers": {', '"mcpServers": {"overspill": {"command": "old"},', 1)
    path.write_text(doubled)
    assert _overspill(env, "install", "claude-code")[0] == 0
    assert path.read_text().count('"overspill"') == 1


def test_http_writes_the_url_and_the_token_file_never_the_token(tmp_path: Path) -> None:
    env = _env(tmp_path)
    env["OVERSPILL_TOKEN"] = "tok_supersecret_value"
    code, out, err = _overspill(
        env, "install", "cursor", "--http", "https://overspill.example:8443", "--dry-run"
    )
    assert code == 0
    assert "tok_supersecret_value" not in out + err
    code, out, err = _overspill(
        env, "install", "cursor", "--http", "https://overspill.example:8443"
    )
    text = (tmp_path / ".cursor/mcp.json").read_text()
    assert "tok_supersecret_value" not in text + out + err
    entry = json.loads(text)["mcpServers"]["overspill"]["env"]
    assert entry["OVERSPILL_URL"] == "https://overspill.example:8443"
    token_file = Path(entry["OVERSPILL_TOKEN_FILE"])
    assert token_file.read_text() == "tok_supersecret_value\n"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert "OVERSPILL_HOME" not in entry
    env.pop("OVERSPILL_TOKEN")
    code, _, err = _overspill(env, "install", "goose", "--http", "https://x.example")
    assert code != 0 and "needs a token" in err


def _shell_installed_twice(tmp_path: Path, client: str, relative: str, mine: str) -> Path:
    """``install CLIENT --shell`` twice over the person's own ``relative`` file
    holding ``mine``; the file (the second install must change nothing)."""
    path = tmp_path / relative
    path.parent.mkdir()
    path.write_text(mine)
    env = _env(tmp_path)
    assert _overspill(env, "install", client, "--shell")[0] == 0
    once = path.read_text()
    assert _overspill(env, "install", client, "--shell")[0] == 0
    assert path.read_text() == once
    return path


def _uninstall_gives_back(tmp_path: Path, client: str, path: Path, mine: str) -> None:
    assert _overspill(_env(tmp_path), "uninstall", client)[0] == 0
    assert path.read_text() == mine


def test_shell_sets_claude_codes_shell_prefix_and_its_hand_off_hooks_once(tmp_path: Path) -> None:
    env = _env(tmp_path)
    mine = '{\n  "hooks": {\n    "PostToolUse": [\n      {"matcher": "Edit", "hooks": []}\n    ]\n  }\n}\n'
    settings = _shell_installed_twice(tmp_path, "claude-code", ".claude/settings.json", mine)
    written = json.loads(settings.read_text())
    # Claude Code runs each Bash command through this overspill: nothing rewrites
    # the command its permission rules judge.
    prefix = written["env"].pop("CLAUDE_CODE_SHELL_PREFIX")
    assert Path(prefix).name == "overspill-shell" and os.access(prefix, os.X_OK)
    assert written["env"] == {
        "OVERSPILL_OWNER": "agent:claude-code",
        "OVERSPILL_HOME": str(tmp_path / "store"),
    }
    assert "PreToolUse" not in written["hooks"]
    for event in ("PostToolUse", "PostToolUseFailure"):
        groups = written["hooks"][event]
        assert [g["matcher"] for g in groups] == (
            ["Edit", "Bash"] if event == "PostToolUse" else ["Bash"]
        )
        command = groups[-1]["hooks"][0]["command"]
        assert "overspill-handoff/art_" in command and command.endswith(
            "hook claude-code; break; done"
        )
    _uninstall_gives_back(tmp_path, "claude-code", settings, mine)
    code, _, err = _overspill(env, "install", "cursor", "--shell")
    assert code != 0 and "--shell is for claude-code, gemini" in err


def test_shell_replaces_an_earlier_releases_rewriting_hook_and_keeps_a_persons_own_prefix(
    tmp_path: Path,
) -> None:
    env = _env(tmp_path)
    settings = tmp_path / ".claude/settings.json"
    settings.parent.mkdir()
    old = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": "/old/overspill hook claude-code"}],
                }
            ]
        },
        "env": {"OVERSPILL_HOME": "/old"},
    }
    settings.write_text(json.dumps(old))
    assert _overspill(env, "install", "claude-code", "--shell")[0] == 0
    written = json.loads(settings.read_text())
    assert "PreToolUse" not in written["hooks"] and written["env"]["OVERSPILL_HOME"] != "/old"
    # A shell prefix of the person's own is theirs: install stops, the file stays.
    theirs = json.dumps({"env": {"CLAUDE_CODE_SHELL_PREFIX": "/usr/local/bin/audit-log"}})
    settings.write_text(theirs)
    code, _, err = _overspill(env, "install", "claude-code", "--shell")
    assert code != 0 and "CLAUDE_CODE_SHELL_PREFIX" in err and "left as it was" in err
    assert settings.read_text() == theirs


def test_gemini_shell_adds_its_after_tool_hook_once_and_uninstall_gives_the_file_back(
    tmp_path: Path,
) -> None:
    mine = (
        '{\n  // my own\n  "hooks": {\n    "AfterTool": [\n'
        '      {"matcher": "write_file", "hooks": []},\n    ]\n  }\n}\n'
    )
    settings = _shell_installed_twice(tmp_path, "gemini", ".gemini/settings.json", mine)
    doc = JsoncDocument(settings.read_text())
    groups = doc.get(["hooks", "AfterTool"])
    assert [g["matcher"] for g in groups] == ["write_file", "run_shell_command"]
    assert doc.get(["hooks", "BeforeTool"]) is None  # nothing rewrites the command
    hook = groups[1]["hooks"][0]
    # Gemini CLI has no settings env: the store rides on the hook's command.
    assert hook["command"].startswith(f"env OVERSPILL_HOME={tmp_path / 'store'} ")
    assert hook["command"].endswith(" hook gemini")
    assert doc.get(["mcpServers", "overspill"]) is not None
    _uninstall_gives_back(tmp_path, "gemini", settings, mine)


def test_an_earlier_releases_gemini_before_tool_hook_is_taken_out(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini/settings.json"
    settings.parent.mkdir()
    ours = {"name": "overspill", "type": "command", "command": "env A=1 /x/overspill hook gemini"}
    settings.write_text(
        json.dumps({"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [ours]}]}})
    )
    assert _overspill(_env(tmp_path), "install", "gemini", "--shell")[0] == 0
    hooks = JsoncDocument(settings.read_text()).get(["hooks"])
    assert list(hooks) == ["AfterTool"]


def _gemini_event(output: str, command: str = "make test") -> bytes:
    return json.dumps(
        {
            "session_id": "g-1",
            "cwd": "/work",
            "hook_event_name": "AfterTool",
            "tool_name": "run_shell_command",
            "tool_input": {"command": command, "description": "t"},
            "tool_response": {
                "llmContent": f"<untrusted_context>\nOutput: {output}\n</untrusted_context>",
                "returnDisplay": output,
            },
        }
    ).encode()


def test_the_gemini_hook_stores_an_output_longer_than_its_cut_and_names_it(tmp_path: Path) -> None:
    env = _env(tmp_path)
    long = "".join(f"{i} é\n" for i in range(20_000))
    done = run_cli(env, "hook", "gemini", stdin=_gemini_event(long))
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    (art,) = re.findall(r"artifact (art_\w+);", context)
    assert f"({len(long.encode())} bytes, 20000 lines) is stored whole" in context
    assert "<" not in context  # Gemini CLI would escape it
    assert f'artifact_read {{"id": "{art}", "offset": 0}}' in context
    assert run_cli(env, "cat", art).stdout == long.encode()
    info = json.loads(run_cli(env, "info", art, "--json").stdout)
    assert info["source"]["command"] == "make test" and info["session_id"] == "g-1"
    # What fits Gemini CLI's cut is shown whole by it: nothing stored, nothing said.
    short = run_cli(env, "hook", "gemini", stdin=_gemini_event("ok\n" * 100))
    assert short.returncode == 0 and short.stdout == b""


def test_the_hook_verb_never_blocks_on_bad_input(tmp_path: Path) -> None:
    env = _env(tmp_path)
    for client in ("claude-code", "gemini"):
        bad = run_cli(env, "hook", client, stdin=b"not json")
        assert bad.returncode == 0 and bad.stdout == b"", bad.stderr
        assert b"overspill: hook" in bad.stderr


def test_jsonc_edits_keep_comments_trailing_commas_and_tabs() -> None:
    text = '{\n\t// keep\n\t"a": [1, 2,], /* and this */\n\t"b": {"c": 1,},\n}\n'
    doc = JsoncDocument(text)
    doc.set(["b", "d"], {"e": [1]})
    doc.append(["a"], 3)
    assert doc.get(["b"]) == {"c": 1, "d": {"e": [1]}} and doc.get(["a"]) == [1, 2, 3]
    assert "// keep" in doc.text() and "/* and this */" in doc.text()
    doc.delete(["b", "d"])
    doc.remove_where(["a"], lambda v: v == 3)
    assert doc.text() == text


def test_codex_shell_is_refused_with_why_and_changes_nothing(tmp_path: Path) -> None:
    mine = '# mine\nmodel = "gpt-5.5"\n\n[features]\nplugins = false  # no sync\n'
    config = tmp_path / ".codex/config.toml"
    config.parent.mkdir()
    config.write_text(mine)
    code, _, err = _overspill(_env(tmp_path), "install", "codex", "--shell")
    assert code != 0 and "keeps its sandbox and approval rules" in err
    assert config.read_text() == mine


def test_installing_codex_gives_back_the_shell_an_earlier_release_turned_off(
    tmp_path: Path,
) -> None:
    mine = '# mine\nmodel = "gpt-5.5"\n\n[features]\nplugins = false  # no sync\n'
    config = tmp_path / ".codex/config.toml"
    config.parent.mkdir()
    config.write_text(mine.replace("# no sync\n", "# no sync\nshell_tool = false\n"))
    assert _overspill(_env(tmp_path), "install", "codex")[0] == 0
    written = tomllib.loads(config.read_text())
    assert written["features"] == {"plugins": False} and "overspill" in written["mcp_servers"]
    _uninstall_gives_back(tmp_path, "codex", config, mine)


def test_opencode_shell_adds_its_plugin_and_uninstall_takes_it_out(tmp_path: Path) -> None:
    env = _env(tmp_path)
    assert _overspill(env, "install", "opencode", "--shell")[0] == 0
    plugin = tmp_path / ".config/opencode/plugin/overspill.js"
    text = plugin.read_text()
    assert text.startswith("// overspill: ") and '"tool.execute.after"' in text
    assert f'"OVERSPILL_HOME": "{tmp_path / "store"}"' in text
    assert _overspill(env, "install", "opencode", "--shell")[0] == 0
    assert plugin.read_text() == text
    assert _overspill(env, "uninstall", "opencode")[0] == 0
    assert not plugin.exists()
    # A plugin file of the person's own by that name is left alone.
    plugin.write_text("export const Mine = async () => ({})\n")
    code, _, err = _overspill(env, "install", "opencode", "--shell")
    assert code != 0 and "not overspill's" in err
