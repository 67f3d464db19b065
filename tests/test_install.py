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

from overspill.api.agent.hooks import Rules, claude_code_pre_bash, gemini_before_shell
from overspill.api.agent.jsonc import JsoncDocument
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


def test_shell_adds_the_bash_hook_once_beside_the_persons_own_hooks(tmp_path: Path) -> None:
    env = _env(tmp_path)
    mine = '{\n  "hooks": {\n    "PreToolUse": [\n      {"matcher": "Edit", "hooks": []}\n    ]\n  }\n}\n'
    settings = _shell_installed_twice(tmp_path, "claude-code", ".claude/settings.json", mine)
    written = json.loads(settings.read_text())
    groups = written["hooks"]["PreToolUse"]
    assert [g["matcher"] for g in groups] == ["Edit", "Bash"]
    # The wrapped commands write where the MCP server reads.
    assert written["env"] == {
        "OVERSPILL_OWNER": "agent:claude-code",
        "OVERSPILL_HOME": str(tmp_path / "store"),
    }
    assert groups[1]["hooks"][0]["command"].endswith(" hook claude-code")
    _uninstall_gives_back(tmp_path, "claude-code", settings, mine)
    code, _, err = _overspill(env, "install", "cursor", "--shell")
    assert code != 0 and "--shell is for claude-code, codex, gemini" in err


def test_gemini_shell_adds_its_before_tool_hook_once_and_uninstall_gives_the_file_back(
    tmp_path: Path,
) -> None:
    mine = (
        '{\n  // my own\n  "hooks": {\n    "BeforeTool": [\n'
        '      {"matcher": "write_file", "hooks": []},\n    ]\n  }\n}\n'
    )
    settings = _shell_installed_twice(tmp_path, "gemini", ".gemini/settings.json", mine)
    doc = JsoncDocument(settings.read_text())
    groups = doc.get(["hooks", "BeforeTool"])
    assert [g["matcher"] for g in groups] == ["write_file", "run_shell_command"]
    hook = groups[1]["hooks"][0]
    # Gemini CLI has no settings env: the store rides on the hook's command.
    assert hook["command"].startswith(f"env OVERSPILL_HOME={tmp_path / 'store'} ")
    assert hook["command"].endswith(" hook gemini") and hook["timeout"] == 30_000
    assert doc.get(["mcpServers", "overspill"]) is not None
    _uninstall_gives_back(tmp_path, "gemini", settings, mine)


def test_the_gemini_hook_wraps_a_foreground_shell_call_with_the_store_it_was_given() -> None:
    event = {
        "session_id": "g-1",
        "hook_event_name": "BeforeTool",
        "tool_name": "run_shell_command",
        "tool_input": {"command": "make test && echo ok", "description": "t", "dir_path": "src"},
    }
    store = {"OVERSPILL_HOME": "/s", "OVERSPILL_OWNER": "agent:gemini"}
    answer = gemini_before_shell(event, ["/opt/overspill"], store, 36_000)
    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "BeforeTool",
            "tool_input": {
                "command": "env OVERSPILL_HOME=/s OVERSPILL_OWNER=agent:gemini /opt/overspill run "
                "--answer-budget 36000 --session-id g-1 --timeout-ms 600000 -- "
                "'make test && echo ok'"
            },
        }
    }
    again = {**event, "tool_input": answer["hookSpecificOutput"]["tool_input"]}
    assert gemini_before_shell(again, ["/opt/overspill"], store, 36_000) is None
    assert gemini_before_shell({**event, "tool_name": "read_file"}, ["/x"], {}, 1) is None
    bg = {**event, "tool_input": {"command": "npm run dev", "is_background": True}}
    assert gemini_before_shell(bg, ["/x"], {}, 1) is None


def test_the_hook_wraps_a_foreground_bash_call_in_one_overspill_run_command() -> None:
    event = {
        "session_id": "conv-7",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "make test && echo ok", "description": "t", "timeout": 60_000},
    }
    answer = claude_code_pre_bash(event, ["/opt/overspill/bin/overspill"], Rules(allow=("Bash",)))
    assert answer is not None
    assert answer["hookSpecificOutput"]["permissionDecision"] == "allow"
    updated = answer["hookSpecificOutput"]["updatedInput"]
    assert updated["description"] == "t" and updated["timeout"] == 60_000
    assert updated["command"] == (
        "/opt/overspill/bin/overspill run --answer-budget 27000 --session-id conv-7 "
        "--timeout-ms 58000 -- 'make test && echo ok'"
    )
    # Once wrapped, never twice; other tools and background runs are left alone.
    again = {**event, "tool_input": updated}
    assert claude_code_pre_bash(again, ["/opt/overspill/bin/overspill"]) is None
    assert claude_code_pre_bash({**event, "tool_name": "Read"}, ["/x"]) is None
    bg = {**event, "tool_input": {"command": "npm run dev", "run_in_background": True}}
    assert claude_code_pre_bash(bg, ["/x"]) is None


def test_the_hook_approves_a_wrapped_command_only_where_the_persons_rules_allow_it() -> None:
    def decide(command: str, rules: Rules, mode: str = "default") -> str | None:
        event = {"tool_name": "Bash", "tool_input": {"command": command}, "permission_mode": mode}
        answer = claude_code_pre_bash(event, ["/x/overspill"], rules)
        return None if answer is None else answer["hookSpecificOutput"]["permissionDecision"]

    npm = Rules(allow=("Bash(npm test:*)", "Bash(git status)"), deny=("Bash(rm:*)",))
    assert decide("npm test -- --watch", npm) == "allow"
    assert decide("git status && npm test", npm) == "allow"
    assert decide("git status && make deploy", npm) == "ask"  # one part no rule allows
    assert decide("rm -rf build", npm) is None  # denied: left to Claude Code, unwrapped
    assert decide("npm test; rm -rf /", npm) is None
    assert decide("curl x | sh", Rules(ask=("Bash(curl *)",))) is None
    assert decide("make", Rules()) == "ask"
    assert decide("make", Rules(), "bypassPermissions") == "allow"
    assert decide("make", Rules(allow=("Bash",), deny=("Bash(make)",))) is None


def test_the_hook_verb_answers_json_and_never_blocks_on_bad_input(tmp_path: Path) -> None:
    env = _env(tmp_path)
    event = {"tool_name": "Bash", "tool_input": {"command": "echo hi"}}
    done = run_cli(env, "hook", "claude-code", stdin=json.dumps(event).encode())
    assert done.returncode == 0
    answer = json.loads(done.stdout)
    assert " run --answer-budget 27000 " in answer["hookSpecificOutput"]["updatedInput"]["command"]
    bad = run_cli(env, "hook", "claude-code", stdin=b"not json")
    assert bad.returncode == 0 and bad.stdout == b""


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


def test_codex_shell_turns_its_own_shell_off_and_uninstall_gives_the_file_back(
    tmp_path: Path,
) -> None:
    mine = '# mine\nmodel = "gpt-5.5"\n\n[features]\nplugins = false  # no sync\n'
    config = _shell_installed_twice(tmp_path, "codex", ".codex/config.toml", mine)
    written = tomllib.loads(config.read_text())
    assert written["features"] == {"plugins": False, "shell_tool": False}
    assert "overspill" in written["mcp_servers"]
    assert "# no sync" in config.read_text()
    _uninstall_gives_back(tmp_path, "codex", config, mine)
