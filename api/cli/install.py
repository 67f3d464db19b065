"""``overspill install|uninstall CLIENT`` and ``overspill hook CLIENT``.

``install`` writes overspill into a harness's own config file (see
``api.agent.harness_config.install``); ``--check`` starts what that file says, as the harness
would, and prints what the harness will see: the server's tools and the budget
its answers keep under. ``hook`` is what the harness runs: it reads one hook
event on stdin and answers on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from overspill.api.agent.harness_config.install_options import CLIENTS, SHELL_CLIENTS

from .context import EXIT_ERROR, CliContext, CliError

NO_SHELL = {
    "codex": "Codex offers no way to route its own shell into overspill that keeps its "
    "sandbox and approval rules: the command a PreToolUse hook rewrites is the one its "
    "rules judge (a forbidden rule no longer matched it), and its PostToolUse hook is "
    "handed only the cut output. Nothing was changed; `overspill install codex` adds the "
    "tools, and Codex's shell stays its own",
}
"""Harnesses whose own shell --shell cannot route without weakening it, and why."""


def register(sub: Any) -> None:
    install = sub.add_parser(
        "install",
        help="add overspill to a harness's own config (claude-code, codex, gemini, ...)",
        description="Add overspill's MCP server to CLIENT's own config file, keeping "
        "everything else in it as it was (a backup is written beside it).",
    )
    install.add_argument("client", choices=CLIENTS, help="the harness")
    install.add_argument(
        "--project", action="store_true", help="the project's config, not the user's"
    )
    install.add_argument(
        "--shell",
        action="store_true",
        help="the harness's own shell into the store: claude-code by its shell prefix "
        "(its permissions and sandbox as they are), gemini through a hook; codex: none",
    )
    install.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")
    install.add_argument("--http", metavar="URL", help="a server instead of this machine's store")
    install.add_argument(
        "--token-file", metavar="PATH", help="with --http: the file holding the token"
    )
    install.add_argument("--owner", help="the owner the harness's artifacts get (agent:CLIENT)")
    install.add_argument(
        "--check", action="store_true", help="start what the config says and show its tools"
    )
    install.set_defaults(func=cmd_install)

    uninstall = sub.add_parser("uninstall", help="remove overspill from a harness's config")
    uninstall.add_argument("client", choices=CLIENTS, help="the harness")
    uninstall.add_argument(
        "--project", action="store_true", help="the project's config, not the user's"
    )
    uninstall.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")
    uninstall.set_defaults(func=cmd_uninstall)

    hook = sub.add_parser("hook", help="a harness's hook (run by the harness)")
    hook.add_argument(
        "client", choices=["claude-code", "gemini", "opencode"], help="the harness running the hook"
    )
    hook.set_defaults(func=cmd_hook)


def _options(ctx: CliContext, args: argparse.Namespace) -> Any:
    from overspill.api.agent.harness_config.install import Options

    url = getattr(args, "http", None)
    token_file = getattr(args, "token_file", None)
    if url and not token_file:
        token_file = _store_token(url)
    return Options(
        client=args.client,
        project=args.project,
        shell=getattr(args, "shell", False),
        url=url,
        token_file=token_file,
        owner=getattr(args, "owner", None),
        home=None if url else ctx.settings.store.home,
    )


def _store_token(url: str) -> str:
    """The token of ``OVERSPILL_TOKEN`` in a private file the config can name
    (the token itself goes in no harness config, and is never printed)."""
    token = os.environ.get("OVERSPILL_TOKEN")
    if not token:
        raise CliError("--http needs a token: set OVERSPILL_TOKEN, or give --token-file PATH")
    from urllib.parse import urlsplit

    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "overspill"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    host = urlsplit(url).netloc.replace(":", "_") or "server"
    path = base / f"token-{host}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
    return str(path)


def _run_plan(ctx: CliContext, args: argparse.Namespace, *, remove: bool) -> int:
    from overspill.api.agent.harness_config.install import ConfigError, apply, plan

    options = _options(ctx, args)
    try:
        edits = plan(options, remove=remove)
    except ConfigError as exc:
        raise CliError(f"{exc}; the file was left as it was") from None
    verb = "removed from" if remove else "added to"
    if args.dry_run:
        for edit in edits:
            sys.stdout.write(edit.diff())
        if not edits:
            print(f"overspill: nothing to change for {args.client}")
        return 0
    written = apply(edits)
    for path in written:
        print(f"overspill {verb} {path} (the previous version: {path.name}.overspill-backup)")
    if not written:
        state = "is not in" if remove else "is already in"
        print(f"overspill {state} {args.client}'s config; nothing changed")
    return 0


def cmd_install(ctx: CliContext, args: argparse.Namespace) -> int:
    if args.token_file and not args.http:
        raise CliError("--token-file goes with --http URL")
    if args.shell and args.client in NO_SHELL:
        raise CliError(NO_SHELL[args.client])
    if args.shell and args.client not in SHELL_CLIENTS:
        raise CliError(
            f"--shell is for {', '.join(SHELL_CLIENTS)}; {args.client}'s own shell is "
            "not routed (see the README)"
        )
    if args.check:
        return _check(ctx, args)
    return _run_plan(ctx, args, remove=False)


def cmd_uninstall(ctx: CliContext, args: argparse.Namespace) -> int:
    return _run_plan(ctx, args, remove=True)


def cmd_hook(ctx: CliContext, args: argparse.Namespace) -> int:
    """One hook event on stdin, the answer on stdout. A hook never blocks the
    harness's call: whatever goes wrong is one line on stderr and exit 0."""
    from overspill.artifacts.errors import OverspillError

    try:
        answer = _hook_answer(ctx, args.client)
    except (ValueError, OverspillError) as exc:
        reason = getattr(exc, "message", None) or str(exc)
        print(f"overspill: hook {args.client}: {reason}", file=sys.stderr)
        return 0
    if answer is not None:
        print(json.dumps(answer))
    return 0


def _hook_answer(ctx: CliContext, client: str) -> dict[str, Any] | None:
    from ..client.calls import ApiCalls

    if client == "opencode":
        from overspill.api.agent.hooks import opencode_after_bash

        event = json.loads(sys.stdin.read(1 << 20) or "{}")
        return opencode_after_bash(event if isinstance(event, dict) else {}, ApiCalls(ctx.client()))
    if client == "gemini":
        import io

        from overspill.api.agent.hooks import gemini_after_shell
        from overspill.api.agent.json_stream import JsonStream

        text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogatepass")
        return gemini_after_shell(JsonStream(text), ApiCalls(ctx.client()))
    from overspill.api.agent.hooks import claude_code_after_bash

    from ..client.handoff import handoff_root, ingest

    event = json.loads(sys.stdin.read(1 << 20) or "{}")
    tmp = os.environ.get("CLAUDE_TMPDIR")
    stored = ingest(handoff_root(tmp), ApiCalls(ctx.client())) if tmp else []
    return claude_code_after_bash(event if isinstance(event, dict) else {}, stored)


# -- --check: what the harness will see ----------------------------------------------------


def _check(ctx: CliContext, args: argparse.Namespace) -> int:
    import subprocess
    import time

    from overspill.api.agent.harness_config.install import config_path
    from overspill.api.agent.harnesses import harness_by_key

    options = _options(ctx, args)
    path, kind, key = config_path(options)
    from overspill.api.agent.harness_config.config_files import document

    try:
        text = path.read_text()
    except FileNotFoundError:
        raise CliError(
            f"{path} does not exist: run overspill install {args.client} first"
        ) from None
    found = document(kind, text, str(path)).get(key)
    if not isinstance(found, dict):
        raise CliError(f"{path} has no {'.'.join(key)} entry: run overspill install {args.client}")
    argv, env = _launch(args.client, found)
    harness = harness_by_key(args.client)
    client_name = harness.client_names[0] if harness else args.client
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env={**os.environ, **env},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        answers = _handshake(proc, client_name)
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=30)
    elapsed = time.perf_counter() - started
    if answers is None:
        err = (proc.stderr.read().decode(errors="replace") if proc.stderr else "").strip()
        print(
            f"overspill: {' '.join(argv)} did not answer: {err.splitlines()[-1] if err else 'no output'}",
            file=sys.stderr,
        )
        return EXIT_ERROR
    init, tools, listing, listed_s = answers
    info = init["serverInfo"]
    print(f"{path}: {'.'.join(key)} starts {' '.join(argv)}")
    print(
        f"server {info['name']} {info['version']}: tools listed {listed_s * 1000:.0f} ms after "
        f"the start, the first call answered {elapsed * 1000:.0f} ms after it"
    )
    budget = tools[0].get("_meta", {}).get("anthropic/maxResultSizeChars") if tools else None
    print(f"{args.client} (clientInfo {client_name!r}) gets answers of at most {budget} bytes")
    for tool in tools:
        hints = tool.get("annotations", {})
        mode = "read-only" if hints.get("readOnlyHint") else "changes things"
        print(f"  {tool['name']:<16} {tool.get('title', ''):<34} {mode}")
    print("artifact_list answers:")
    print("  " + listing.replace("\n", "\n  "))
    return 0


def _launch(client: str, found: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """argv and environment from a config entry, in each harness's shape."""
    if client == "opencode":
        return [str(a) for a in found.get("command", [])], dict(found.get("environment") or {})
    if client == "goose":
        return [str(found.get("cmd")), *map(str, found.get("args") or [])], dict(
            found.get("envs") or {}
        )
    return [str(found.get("command")), *map(str, found.get("args") or [])], dict(
        found.get("env") or {}
    )


def _handshake(proc: Any, client_name: str) -> tuple[dict[str, Any], list[Any], str, float] | None:
    import time

    from overspill.api.agent.mcp_stdio import initialize_request

    started = time.perf_counter()

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        proc.stdin.flush()

    def answer() -> dict[str, Any] | None:
        for line in proc.stdout:
            message: dict[str, Any] = json.loads(line)
            if "id" in message:
                return message
        return None

    send(initialize_request(client_name, "check"))
    init = answer()
    if init is None or "result" not in init:
        return None
    send({"method": "notifications/initialized"})
    send({"id": 2, "method": "tools/list"})
    tools = answer()
    listed = time.perf_counter() - started
    send({"id": 3, "method": "tools/call", "params": {"name": "artifact_list", "arguments": {}}})
    listing = answer()
    if tools is None or listing is None:
        return None
    text = listing.get("result", {}).get("content", [{}])[0].get("text", str(listing))
    return init["result"], tools["result"]["tools"], str(text), listed
