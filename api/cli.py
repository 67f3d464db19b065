"""The ``overspill`` command.

Every verb works against the local store by default and against a server when
``OVERSPILL_URL`` is set (``OVERSPILL_TOKEN`` authenticates). Errors become one line
on stderr and a non-zero exit; ``main`` is the one place that mapping lives.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from overspill.api.settings import ClientSettings
from overspill.artifacts.config import StoreSettings
from overspill.artifacts.errors import OverspillError

if TYPE_CHECKING:  # the store (SQLAlchemy, blob SDKs) and the records (pydantic) load
    # only for verbs that use them
    from overspill.api.backend import Backend
    from overspill.artifacts.queries import GrepQuery, LineQuery, ListQuery
    from overspill.artifacts.records import ArtifactInfo, Principal, Role

    _Q = TypeVar("_Q", GrepQuery, LineQuery, ListQuery)
    from overspill.artifacts.store import ArtifactStore

EXIT_ERROR = 1
_PROGRESS_MIN_BYTES = 8 * 1024 * 1024


class CliError(Exception):
    """A problem with how the command was called, reported as one line."""


# -- where verbs go ----------------------------------------------------------------------


def _local_store() -> ArtifactStore:
    from overspill.artifacts.store import ArtifactStore

    return ArtifactStore.open(StoreSettings.load())


def _query(cls: type[_Q], **fields: Any) -> _Q:
    """A store query from the verb's options; a value out of bounds is one line
    naming the option, as every other bad argument is."""
    from pydantic import ValidationError

    try:
        return cls(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "--" + "-".join(str(p) for p in first["loc"]).replace("_", "-")
        raise CliError(f"{name}: {first['msg']}") from None


def _principal(owner: str, role: Role) -> Principal:
    from overspill.artifacts.records import Principal

    return Principal(name=owner, role=role)


def _backend(client: ClientSettings) -> Backend:
    if client.url:
        from overspill.api.client import OverspillClient

        return OverspillClient(client.url, client.token)
    from overspill.api.backend import LocalBackend

    # The local CLI runs as whoever owns the data directory: it sees every owner.
    return LocalBackend(_local_store(), _principal(client.owner, "admin"))


# -- argument helpers --------------------------------------------------------------------


def _parse_range(value: str) -> tuple[int, int | None]:
    start_s, sep, end_s = value.partition("-")
    try:
        if not sep:
            raise ValueError
        start = int(start_s)
        end = int(end_s) if end_s else None
    except ValueError:
        raise CliError(f"--range takes START-END or START- (got {value!r})") from None
    if start < 0 or (end is not None and end < start):
        raise CliError(f"--range {value!r}: need 0 <= START <= END")
    return start, end


def _parse_lines(value: str) -> tuple[int, int]:
    start_s, _, count_s = value.partition(":")
    try:
        start, count = int(start_s), int(count_s or "100")
    except ValueError:
        raise CliError(f"--lines takes START:COUNT (got {value!r})") from None
    if start < 1 or count < 1:
        raise CliError(f"--lines {value!r}: START and COUNT must be >= 1")
    return start, count


def _parse_retention(value: str) -> int | str | None:
    if value in ("forever", "default"):
        return None if value == "default" else value
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    try:
        if value[-1] in units:
            return int(float(value[:-1]) * units[value[-1]])
        return int(value)
    except (ValueError, IndexError):
        raise CliError(
            f"retention takes seconds, 12h, 7d, 'forever' or 'default' (got {value!r})"
        ) from None


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


class _Progress:
    """A one-line progress meter on stderr for long transfers: only when stderr is a
    terminal and the data is not going to a terminal too (where the two would mix:
    the meter's carriage returns landed inside the bytes on screen)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.enabled = (
            total >= _PROGRESS_MIN_BYTES and sys.stderr.isatty() and not sys.stdout.isatty()
        )
        self._last = 0.0
        self._start = time.monotonic()

    def advance(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.2 or self.done >= self.total):
            self._last = now
            rate = self.done / max(now - self._start, 1e-6)
            pct = 100 * self.done / self.total if self.total else 100
            sys.stderr.write(
                f"\r{_human(self.done)} / {_human(self.total)} ({pct:5.1f}%, {_human(int(rate))}/s)"
            )
            sys.stderr.flush()

    def finish(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


# -- verbs -------------------------------------------------------------------------------


def cmd_put(args: argparse.Namespace) -> int:
    client = ClientSettings.load()
    if sys.stdin.isatty():  # not silence: say what it is waiting for
        print("overspill: storing what you type; end with Ctrl-D", file=sys.stderr)
    stdin = sys.stdin.buffer
    chunks: Iterator[bytes] = iter(lambda: stdin.read(1024 * 1024), b"")
    if client.url:
        from overspill.api.client import OverspillClient

        with OverspillClient(client.url, client.token) as remote:
            info = remote.create(
                kind=args.kind,
                name=args.name,
                session_id=client.session_id,
                source={"tool": "stdin"},
            )
            info = remote.upload(info.id, chunks)
        print(info.id)
        return 0
    store = _local_store()
    writer = store.open_writer(
        _principal(client.owner, "agent"),
        kind=args.kind,
        name=args.name,
        session_id=client.session_id,
        source={"tool": "stdin"},
    )
    for chunk in chunks:
        writer.write(chunk)
    result = writer.close()
    print(result.id)
    if result.error:
        print(f"overspill: stored {result.size_bytes} bytes, then: {result.error}", file=sys.stderr)
        return EXIT_ERROR
    return 0


def cmd_cat(args: argparse.Namespace) -> int:
    from overspill.artifacts.queries import LineQuery

    # Parse every selector before touching the store: bad input fails first.
    line_sel = _parse_lines(args.lines) if args.lines else None
    byte_sel = _parse_range(args.range) if args.range else (0, None)
    if args.tail is not None and args.tail < 1:
        raise CliError("--tail takes a positive number of lines")
    backend = _backend(ClientSettings.load())
    out = sys.stdout.buffer
    if line_sel:
        start, count = line_sel
        first = True
        while count > 0:
            win = backend.lines(args.id, _query(LineQuery, start=start, count=min(count, 10000)))
            if first and not win.lines:
                raise CliError(f"{args.id} has no line {start}: it has {win.line_count} lines")
            first = False
            for line in win.lines:
                out.write(line.text.encode() + b"\n")
            count -= len(win.lines)
            start = win.next_line
            if win.eof or not win.lines:
                break
        return 0
    if args.tail is not None:
        out.write(backend.tail(args.id, lines=args.tail).text.encode())
        return 0
    start, end = byte_sel
    info = backend.get(args.id)
    if start > info.size_bytes or (
        start == info.size_bytes and info.size_bytes and not args.follow
    ):
        raise CliError(
            f"--range starts at byte {start}, past the {info.size_bytes} bytes {args.id} holds"
        )
    stop = info.size_bytes if end is None else min(end, info.size_bytes)
    progress = _Progress(max(0, stop - start))
    for chunk in backend.iter_content(args.id, start, end, follow=args.follow):
        out.write(chunk)
        progress.advance(len(chunk))
    progress.finish()
    out.flush()
    return 0


def cmd_ls(args: argparse.Namespace) -> int:
    from overspill.artifacts.queries import ListQuery

    backend = _backend(ClientSettings.load())
    page = backend.list(
        _query(
            ListQuery,
            owner=args.owner,
            session_id=args.session,
            state=args.state,
            sort=args.sort,
            limit=args.limit,
            include_gone=args.all,
            min_size=args.min_size,
            cursor=args.cursor,
        )
    )
    if args.json:
        print(
            json.dumps(
                {
                    "items": [i.model_dump(mode="json") for i in page.items],
                    "next_cursor": page.next_cursor,
                    "total_bytes": page.total_bytes,
                }
            )
        )
        return 0
    width = shutil.get_terminal_size((100, 24)).columns
    wide = width >= 120  # room for the owner and session columns too
    session = f"{'OWNER':<16} {'SESSION':<12} " if wide else ""
    header = f"{'ID':<30} {'SIZE':>9} {'STATE':<8} {'EXIT':<4} {'CREATED':<8} {session}SOURCE"
    print(_fit(header, width))
    for i in page.items:
        print(_fit(_row(i, wide), width))
    matching = ""
    if page.total_bytes is not None:
        count = f"{page.total_count} " if page.total_count is not None else ""
        matching = f" of {count}matching, {_human(page.total_bytes)} in all"
    print(f"{len(page.items)} shown{matching}")
    if page.next_cursor:
        again = [a for a in sys.argv[1:] if a != "--cursor"]
        if "--cursor" in sys.argv:  # drop the old cursor's value too
            at = sys.argv.index("--cursor")
            again = sys.argv[1:at] + sys.argv[at + 2 :]
        print(f"more: overspill {shlex.join(again)} --cursor {page.next_cursor}")
    return 0


def _fit(line: str, width: int) -> str:
    return line if len(line) <= width else line[: max(10, width - 1)] + "…"


def _when(moment: datetime | None) -> str:
    """A time as people read it: local, and short when it is today."""
    if moment is None:
        return "never"
    local = moment.astimezone()
    if local.date() == datetime.now().astimezone().date():
        return f"{local:%H:%M:%S}"
    return f"{local:%Y-%m-%d %H:%M}"


def _exit(src: dict[str, Any]) -> str:
    if src.get("timed_out"):
        return "timeout"
    if src.get("signal"):
        return str(src["signal"]).removeprefix("SIG")
    code = src.get("exit_code")
    return "-" if code is None else str(code)


def _row(i: ArtifactInfo, wide: bool = True) -> str:
    src = i.source
    what = " ".join(str(src.get("command") or i.name or "").split())
    if src.get("stream"):
        what = f"{ {'stdout': 'out', 'stderr': 'err'}.get(src['stream'], src['stream']) }: {what}"
    session = f"{i.owner[:16]:<16} {(i.session_id or '-')[:12]:<12} " if wide else ""
    return (
        f"{i.id:<30} {_human(i.size_bytes):>9} {i.state:<8} {_exit(src):<4} "
        f"{_when(i.created_at):<8} {session}{what}"
    )


def cmd_info(args: argparse.Namespace) -> int:
    info = _backend(ClientSettings.load()).get(args.id)
    print(info.model_dump_json(indent=2))
    return 0


def cmd_grep(args: argparse.Namespace) -> int:
    from overspill.artifacts.queries import GrepQuery

    backend = _backend(ClientSettings.load())
    query = _query(
        GrepQuery,
        pattern=args.pattern,
        ignore_case=args.ignore_case,
        fixed=args.fixed_strings,
        context=args.context,
        max_matches=args.max_count,
        offset=args.offset,
    )
    res = backend.grep(args.id, query)
    if args.json:
        print(res.model_dump_json())
        return 0
    for n, m in enumerate(res.matches):
        if n and args.context:
            print("--")  # between groups, as GNU grep does
        for ln in m.before:
            print(f"{ln.number}-{ln.text}")
        print(f"{m.line.number}:{m.line.text}")
        for ln in m.after:
            print(f"{ln.number}-{ln.text}")
    if res.truncated:
        print(
            f"overspill: more may follow; continue with --offset {res.next_offset}", file=sys.stderr
        )
    return 0 if res.matches else 1


def cmd_rm(args: argparse.Namespace) -> int:
    backend = _backend(ClientSettings.load())
    for art in args.ids:
        info = backend.delete(art)
        print(info.model_dump_json() if args.json else f"deleted {art}")
    return 0


def cmd_pin(args: argparse.Namespace) -> int:
    backend = _backend(ClientSettings.load())
    info = backend.unpin(args.id) if args.unpin else backend.pin(args.id, args.reason)
    if args.json:
        print(info.model_dump_json())
    elif info.pinned:
        print(f"pinned {info.id} (by {info.pinned_by}: {info.pin_reason or 'no reason given'})")
    else:
        print(f"unpinned {info.id}; expires {_when(info.expires_at)} ({info.retention_source})")
    return 0


def cmd_retain(args: argparse.Namespace) -> int:
    backend = _backend(ClientSettings.load())
    info = backend.set_retention(args.id, _parse_retention(args.retention))
    if args.json:
        print(info.model_dump_json())
        return 0
    clamp = " (clamped)" if info.retention_clamped else ""
    print(f"{info.id} expires {_when(info.expires_at)}: {info.retention_source}{clamp}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from overspill.shell import ExecRequest, Executor, ShellSettings

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CliError("run needs a command: overspill run [OPTIONS] -- COMMAND...")
    shell_settings = ShellSettings.load()
    sink = _sink(ClientSettings.load(), shell_settings)
    request = ExecRequest(
        # One argument is the command as written; several are quoted back into one
        # (`run -- grep "a b" f` runs grep with "a b", not with a and b).
        command=command[0] if len(command) == 1 else shlex.join(command),
        workdir=args.cwd,
        timeout_ms=args.timeout_ms,
        max_output_bytes=args.max_output_bytes,
    )
    abort, received = _abort_on_signals()
    result = Executor(shell_settings, sink).run(request, abort=abort)
    for stream in (result.stdout, result.stderr):
        if stream.truncated and stream.storage_error:  # stdout stays the model's text
            reason = stream.storage_error.splitlines()[0]
            print(f"overspill: warning: full output not stored: {reason}", file=sys.stderr)
    if args.json:
        print(json.dumps(result.contract_json()))
    else:
        # Exactly the text: a newline added here would hide the final marker from
        # parse_exit_status, which reads only the very end.
        sys.stdout.write(result.text)
    if received:
        return 128 + received[0]
    if result.timed_out:
        return 124
    if result.signal:
        try:
            return 128 + int(signal.Signals[result.signal])
        except KeyError:
            return 128
    return result.exit_code or 0


def _abort_on_signals() -> tuple[threading.Event, list[int]]:
    """SIGINT, SIGTERM and SIGHUP abort the command instead of killing us: its
    whole tree is ended (TERM, grace, KILL), the artifacts are closed with what
    was captured, and the model still gets its text. Returns the abort event and
    the signals received (the first decides the exit status, 128+N)."""
    abort = threading.Event()
    received: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        received.append(signum)
        abort.set()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    return abort, received


def _sink(client: ClientSettings, shell_settings: Any) -> Any:
    """Where the executor streams overflowing output: the local store or a server,
    built on a background thread at the first overflow (DeferredSink), so neither
    the imports nor the connection ever hold the command's pipe."""
    from overspill.shell.sink import DeferredSink, OutputSink

    def build() -> OutputSink:
        if client.url:
            from overspill.api.client import OverspillClient, RemoteSink

            return RemoteSink(
                OverspillClient(client.url, client.token),
                session_id=client.session_id,
                max_bytes=shell_settings.artifact_max_bytes,
            )
        from overspill.shell import StoreSink

        return StoreSink(
            _local_store(),
            _principal(client.owner, "agent"),
            session_id=client.session_id,
            max_bytes=shell_settings.artifact_max_bytes,
        )

    return DeferredSink(build)


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the tools to one local agent over stdio (MCP)."""
    from overspill.api.bash_tools import BashTools
    from overspill.api.mcp_server import serve_stdio
    from overspill.api.saved import ResultSaver
    from overspill.api.tools import ArtifactTools
    from overspill.shell import Executor, ShellSettings

    client = ClientSettings.load()
    shell_settings = ShellSettings.load()
    backend: Backend
    if client.url:
        from overspill.api.client import OverspillClient

        backend = OverspillClient(client.url, client.token)
    else:
        from overspill.api.backend import LocalBackend

        # An agent sees its own artifacts only, unlike the local admin CLI.
        backend = LocalBackend(_local_store(), _principal(client.owner, "agent"))
    saver = ResultSaver(
        backend,
        session_id=client.session_id,
        legacy=shell_settings.legacy_spill,
        legacy_root=shell_settings.result_spill_dir,
        legacy_cap=shell_settings.max_spill_bytes,
        sweep_days=shell_settings.spill_sweep_days,
    )
    tools = ArtifactTools(backend, session_id=client.session_id, saver=saver)
    bash = BashTools(Executor(shell_settings, _sink(client, shell_settings)))
    serve_stdio(tools, bash)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from overspill.api.server import serve

    return serve(args.host, args.port)


def cmd_token(args: argparse.Namespace) -> int:
    backend = _backend(ClientSettings.load())
    if args.token_verb == "create":
        issued = backend.create_token(
            args.principal, args.role, label=args.label, expires_in_s=args.expires_in
        )
        print(
            f"token {issued.info.id} for {issued.info.principal} ({issued.info.role}); shown once:",
            file=sys.stderr,
        )
        print(issued.token)
    elif args.token_verb == "list" and args.json:
        for t in backend.list_tokens():
            print(t.model_dump_json())
    elif args.token_verb == "list":
        print(f"{'ID':<22} {'PRINCIPAL':<24} {'ROLE':<6} {'STATUS':<8} LAST USED  LABEL")
        for t in backend.list_tokens():
            status = "revoked" if t.revoked_at else "active"
            print(
                f"{t.id:<22} {t.principal:<24} {t.role:<6} {status:<8} "
                f"{_when(t.last_used_at):<10} {t.label or ''}"
            )
    else:
        backend.revoke_token(args.id)
        print(f"revoked {args.id}")
    return 0


def cmd_usage(args: argparse.Namespace) -> int:
    rows = _backend(ClientSettings.load()).usage()
    if args.json:
        print(json.dumps(rows))
        return 0
    for row in rows:
        states = ", ".join(f"{k} {v['artifacts']}" for k, v in row["by_state"].items())
        print(
            f"{row['owner']:<24} {_human(row['bytes']):>10} {row['artifacts']:>7} artifacts ({states})"
        )
    return 0


def _policy_line(p: Any, parent: Any = None) -> str:
    """One policy; an unset field says what it inherits (the global value for an
    owner's policy, else the server's default)."""

    def length(v: int) -> str:
        return f"{v // 86400}d" if v % 86400 == 0 else f"{v}s"

    def dur(v: int | None, field: str) -> str:
        if v is not None:
            return length(v)
        above = getattr(parent, field, None) if parent is not None else None
        if above is not None:
            return f"inherit (global {length(above)})"
        return "inherit (server default)" if field == "default_retention_s" else "inherit (none)"

    quota = "none" if p.quota_bytes is None else _human(p.quota_bytes)
    cap = "none" if p.max_artifact_bytes is None else _human(p.max_artifact_bytes)
    return (
        f"{p.owner}: default {dur(p.default_retention_s, 'default_retention_s')}, "
        f"ceiling {dur(p.max_retention_s, 'max_retention_s')}, "
        f"forever {'allowed' if p.allow_forever else 'not allowed'}, quota {quota} "
        f"({p.over_quota} when over), artifact cap {cap}"
    )


def cmd_retention(args: argparse.Namespace) -> int:
    from overspill.artifacts.policies import PolicySpec

    backend = _backend(ClientSettings.load())
    if args.retention_verb == "show":
        view = backend.get_policy(args.owner)
        parent = backend.get_policy(None) if args.owner else None
        print(view.model_dump_json() if args.json else _policy_line(view, parent))
        return 0

    def secs(v: str | None) -> int | None:
        if v is None:
            return None
        r = _parse_retention(v)
        if not isinstance(r, int):
            raise CliError(f"a policy duration must be a length of time, got {v!r}")
        return r

    given = {
        "default_retention_s": secs(args.default),
        "max_retention_s": secs(args.max),
        "allow_forever": True if args.allow_forever else None,
        "quota_bytes": args.quota,
        "max_artifact_bytes": args.max_artifact_bytes,
        "over_quota": args.over_quota,
    }
    # Only what was given changes: `--default 1d` keeps the quota that is set.
    spec = PolicySpec(**{k: v for k, v in given.items() if v is not None})
    preview = backend.preview_policy(spec, args.owner)
    t = preview.total
    print(
        f"would expire now: {t.now.artifacts} artifacts ({_human(t.now.bytes)}); within 24h: "
        f"{t.within_24h.artifacts} ({_human(t.within_24h.bytes)}); within 7d: "
        f"{t.within_7d.artifacts} ({_human(t.within_7d.bytes)}) if applied to existing"
    )
    if args.preview:
        return 0
    view, changed = backend.set_policy(spec, args.owner, apply_to_existing=args.apply_to_existing)
    print(_policy_line(view))
    if args.apply_to_existing:
        print(f"recomputed the expiry of {changed} existing artifacts")
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    r = _backend(ClientSettings.load()).cleanup(dry_run=args.dry_run)
    if args.json:
        print(r.model_dump_json())
        return 0
    verb, fin = ("would delete", "would finalise") if r.dry_run else ("deleted", "finalised")
    print(
        f"{verb}: {r.expired} expired artifacts, bytes of {r.purged} tombstones "
        f"({_human(r.bytes_freed)}), {r.orphan_blobs} orphan blobs ({_human(r.orphan_bytes)}), "
        f"{r.tombstones_removed} old tombstones, {r.partial_uploads} partial uploads, "
        f"{r.legacy_spill_files} legacy spill files; {fin} {r.writers_finalised} dead writers"
    )
    for err in r.errors:
        print(f"overspill: cleanup error: {err}", file=sys.stderr)
    return EXIT_ERROR if r.errors else 0


def cmd_audit(args: argparse.Namespace) -> int:
    backend = _backend(ClientSettings.load())
    if args.artifact:
        backend.get(args.artifact)  # a missing id is an error, not an empty log
    entries = backend.audit(
        artifact_id=args.artifact, owner=args.owner, action=args.action, limit=args.limit
    )
    if args.json:  # JSON Lines: one event a line
        for e in entries:
            print(e.model_dump_json())
        return 0
    for e in entries:
        detail = " ".join(f"{k}={v}" for k, v in e.details.items())
        print(
            f"{e.at:%Y-%m-%d %H:%M:%S} {e.actor:<20} {e.action:<10} {e.artifact_id or '-':<31} {detail}"
        )
    return 0


def cmd_completion(args: argparse.Namespace) -> int:
    from overspill.api.completion import SHELLS

    sys.stdout.write(SHELLS[args.shell](build_parser()))
    return 0


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from overspill.artifacts.db.engine import make_engine, upgrade

    settings = StoreSettings.load()
    engine = make_engine(settings.resolved_database_url)
    upgrade(engine)
    engine.dispose()
    print(f"database at {engine.url.render_as_string(hide_password=True)} is up to date")
    return 0


# -- the parser ----------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2), like every other error."""

    def error(self, message: str) -> Any:
        self.exit(2, f"overspill: {message} (see {self.prog} --help)\n")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-65535)")
    return port


def _size(what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        from overspill.api.sizes import parse_size

        try:
            return parse_size(text, what)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


_EPILOG = """examples:
  overspill run -- 'make test'              what the model should see
  overspill ls --min-size 10MB --sort size  the largest outputs
  overspill grep ID -i -C 2 'error'         search one
  overspill cat ID --tail 40                the end of one
  overspill mcp                             the tools for a local agent (stdio)

environment (OVERSPILL_*):
  HOME, DATABASE_URL, BLOB_URL, S3_ENDPOINT_URL  where the store lives
  URL, TOKEN                                     a server instead of the local store
  OWNER, SESSION_ID                              stamped on artifacts made here
  TIMEOUT_MS, MAX_OUTPUT_BYTES, LEGACY_SPILL, …  the executor (see the README)
"""


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="overspill",
        description="Artifacts for oversized tool output: bounded tails for the model, "
        "the full output behind an owned, expiring id.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action=_VersionAction, help="show the version and exit")
    sub = p.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)

    run = sub.add_parser(
        "run", help="run a command through the executor", usage="%(prog)s [OPTIONS] -- COMMAND..."
    )
    run.add_argument("--json", action="store_true", help="print the result object")
    run.add_argument("--timeout-ms", type=float, help="deadline in ms (capped at the maximum)")
    run.add_argument(
        "--max-output-bytes", type=int, help="bytes of stdout kept and shown (default 64000)"
    )
    run.add_argument("--cwd", help="working directory of the command")
    run.add_argument("command", nargs=argparse.REMAINDER, help="after --: the command")
    run.set_defaults(func=cmd_run)

    mcp = sub.add_parser(
        "mcp", help="serve the tools (bash, artifact_*) to a local agent over stdio (MCP)"
    )
    mcp.set_defaults(func=cmd_mcp)

    serve = sub.add_parser("serve", help="serve the HTTP API, the web UI and /mcp")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8765, help="port to bind (8765)")
    serve.set_defaults(func=cmd_serve)

    put = sub.add_parser("put", help="store standard input as an artifact; print its id")
    put.add_argument("--name", help="a name shown in listings")
    put.add_argument("--kind", default="output", help="a kind label (output)")
    put.set_defaults(func=cmd_put)

    ls = sub.add_parser("ls", help="list artifacts")
    ls.add_argument("--owner", help="only this owner's (admins)")
    ls.add_argument("--session", help="only this session's")
    ls.add_argument("--state", help="only in this state (writing, complete, capped, …)")
    ls.add_argument("--min-size", type=_size("--min-size"), help="at least this big (10MB)")
    ls.add_argument("--sort", choices=["created", "size"], default="created", help="order")
    ls.add_argument("--limit", type=int, default=50, help="rows (50)")
    ls.add_argument("--all", action="store_true", help="include expired and deleted")
    ls.add_argument("--cursor", help="continue a listing (the 'more:' line prints the command)")
    ls.add_argument("--json", action="store_true", help="one JSON object")
    ls.set_defaults(func=cmd_ls)

    info = sub.add_parser("info", help="an artifact's metadata as JSON")
    info.add_argument("id", help="art_…")
    info.set_defaults(func=cmd_info)

    cat = sub.add_parser("cat", help="write an artifact's bytes (or part) to stdout")
    cat.add_argument("id", help="art_…")
    sel = cat.add_mutually_exclusive_group()
    sel.add_argument("--range", help="bytes START-END (END exclusive) or START-")
    sel.add_argument("--lines", help="lines START:COUNT (1-based)")
    sel.add_argument("--tail", type=int, help="the last N lines")
    cat.add_argument("--follow", action="store_true", help="keep going while it is written")
    cat.set_defaults(func=cmd_cat)

    grep = sub.add_parser("grep", help="search an artifact (linear-time regex)")
    grep.add_argument("id", help="art_…")
    grep.add_argument("pattern", help="RE2 regular expression")
    grep.add_argument("-i", "--ignore-case", action="store_true", help="ignore case")
    grep.add_argument("-F", "--fixed-strings", action="store_true", help="match literally")
    grep.add_argument("-C", "--context", type=int, default=0, help="lines around each match")
    grep.add_argument("-m", "--max-count", type=int, default=100, help="matches (100)")
    grep.add_argument("--offset", type=int, default=0, help="resume a scan at this byte")
    grep.add_argument("--json", action="store_true", help="the result object")
    grep.set_defaults(func=cmd_grep)

    rm = sub.add_parser("rm", help="delete artifacts (a tombstone remains)")
    rm.add_argument("ids", nargs="+", help="art_…")
    rm.add_argument("--json", action="store_true", help="each tombstone as a JSON line")
    rm.set_defaults(func=cmd_rm)

    pin = sub.add_parser("pin", help="pin an artifact so it never expires (--unpin lifts it)")
    pin.add_argument("id", help="art_…")
    pin.add_argument("--reason", help="why (kept with the pin)")
    pin.add_argument("--unpin", action="store_true", help="lift the pin")
    pin.add_argument("--json", action="store_true", help="the artifact as JSON")
    pin.set_defaults(func=cmd_pin)

    retain = sub.add_parser("retain", help="ask for an artifact's retention (7d, 12h, forever)")
    retain.add_argument("id", help="art_…")
    retain.add_argument("retention", help="seconds, 12h, 7d, 'forever' or 'default'")
    retain.add_argument("--json", action="store_true", help="the artifact as JSON")
    retain.set_defaults(func=cmd_retain)

    usage = sub.add_parser("usage", help="bytes and counts by owner and state")
    usage.add_argument("--json", action="store_true", help="JSON")
    usage.set_defaults(func=cmd_usage)

    token = sub.add_parser("token", help="API tokens")
    tsub = token.add_subparsers(
        dest="token_verb", required=True, metavar="ACTION", parser_class=_Parser
    )
    tc = tsub.add_parser("create", help="issue a token (printed alone on the last line)")
    tc.add_argument("--principal", required=True, help="who it acts as, e.g. agent:ci-bot")
    tc.add_argument(
        "--role", choices=["agent", "user", "admin"], default="agent", help="what it may do"
    )
    tc.add_argument("--label", help="a note shown in token lists")
    tc.add_argument("--expires-in", type=int, help="seconds until it stops working")
    tl = tsub.add_parser("list", help="list tokens")
    tl.add_argument("--json", action="store_true", help="JSON Lines, one token a line")
    tr = tsub.add_parser("revoke", help="revoke a token")
    tr.add_argument("id", help="tok_…")
    token.set_defaults(func=cmd_token)

    ret = sub.add_parser("retention", help="show or set retention policies (admin)")
    rsub = ret.add_subparsers(
        dest="retention_verb", required=True, metavar="ACTION", parser_class=_Parser
    )
    rshow = rsub.add_parser("show", help="the global policy, or one owner's")
    rshow.add_argument("--owner", help="omit for the global policy")
    rshow.add_argument("--json", action="store_true", help="the policy as JSON")
    rset = rsub.add_parser("set", help="set a policy (prints the preview first)")
    rset.add_argument("--owner", help="omit for the global policy")
    rset.add_argument("--default", help="default retention, e.g. 7d")
    rset.add_argument("--max", help="ceiling, e.g. 30d")
    rset.add_argument("--allow-forever", action="store_true", help="let artifacts be kept forever")
    rset.add_argument("--quota", type=_size("--quota"), help="bytes per owner (10GiB)")
    rset.add_argument(
        "--max-artifact-bytes", type=_size("--max-artifact-bytes"), help="cap per artifact (1GiB)"
    )
    rset.add_argument("--over-quota", choices=["reject", "evict"], help="when over the quota")
    rset.add_argument(
        "--apply-to-existing", action="store_true", help="recompute existing expiries"
    )
    rset.add_argument("--preview", action="store_true", help="only show what would expire")
    ret.set_defaults(func=cmd_retention)

    clean = sub.add_parser("cleanup", help="expire, purge and reconcile once")
    clean.add_argument("--dry-run", action="store_true", help="say what it would do")
    clean.add_argument("--json", action="store_true", help="the report as JSON")
    clean.set_defaults(func=cmd_cleanup)

    aud = sub.add_parser("audit", help="the audit log, newest first (admin)")
    aud.add_argument("--artifact", help="only this artifact's events")
    aud.add_argument("--owner", help="only this owner's")
    aud.add_argument("--action", help="only this action (create, delete, pin, …)")
    aud.add_argument("--limit", type=int, default=50, help="rows (50)")
    aud.add_argument("--json", action="store_true", help="JSON Lines, one event a line")
    aud.set_defaults(func=cmd_audit)

    comp = sub.add_parser("completion", help="print a shell completion script")
    comp.add_argument("shell", choices=["bash", "zsh", "fish"], help="which shell's")
    comp.set_defaults(func=cmd_completion)

    db = sub.add_parser("db", help="database maintenance")
    dbsub = db.add_subparsers(dest="db_verb", required=True, metavar="ACTION", parser_class=_Parser)
    up = dbsub.add_parser("upgrade", help="apply schema migrations")
    up.set_defaults(func=cmd_db_upgrade)
    return p


# Names the tests and tools read themselves (not settings of a verb).
_OTHER_NAMES = {"CONFIG", "CHROMIUM", "TEST_PG_URL", "REQUIRE_POSTGRES", "REQUIRE_BROWSER"}


def _check_settings() -> None:
    """Every OVERSPILL_* setting is validated once, at the start of every verb (a
    bad value is one line and exit 1, before anything runs), and a name that is
    no setting gets a warning naming the closest one."""
    import difflib

    from overspill.api.settings import ServerSettings
    from overspill.shell.config import ShellSettings

    classes = (StoreSettings, ShellSettings, ClientSettings, ServerSettings)
    for cls in classes:
        cls.load()
    known = {name.upper() for cls in classes for name in cls.field_names()} | _OTHER_NAMES
    for name in sorted(os.environ):
        if not name.startswith("OVERSPILL_") or name[len("OVERSPILL_") :] in known:
            continue
        close = difflib.get_close_matches(name[len("OVERSPILL_") :], known, n=1)
        hint = f"; did you mean OVERSPILL_{close[0]}?" if close else ""
        print(f"overspill: warning: {name} is not a setting{hint}", file=sys.stderr)


class _VersionAction(argparse.Action):
    """--version, looked up only when asked: importlib.metadata costs ~30 ms, which
    every `overspill run` would otherwise pay while building the parser."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(f"overspill {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("overspill")
    except PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None, *, exit_when_done: bool = False) -> int:
    """Run one verb; returns its exit status.

    ``exit_when_done`` (the console script) ends the process as soon as ``run``
    has printed its result, without the interpreter's teardown: by then every
    artifact is closed and committed, and the teardown (collecting SQLAlchemy's
    and pydantic's modules, joining idle threads) cost ~0.15 s per command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verb is None:  # bare `overspill`: what it can do, not an error
        parser.print_help()
        return 0
    code = _dispatch(args)
    if exit_when_done and args.verb == "run":
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (BrokenPipeError, OSError):
            pass
        os._exit(code)
    return code


def _dispatch(args: argparse.Namespace) -> int:
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        _check_settings()
        return func(args)
    except (OverspillError, CliError, ValueError, RuntimeError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"overspill: {message}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


def entry() -> None:
    """The console script."""
    raise SystemExit(main(exit_when_done=True))


if __name__ == "__main__":
    raise SystemExit(main())
