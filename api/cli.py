"""The ``overspill`` command. Errors become one line on stderr and a non-zero exit;
this module is the one place that mapping lives."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from api.settings import ClientSettings
from artifacts.config import StoreSettings
from artifacts.errors import OverspillError
from artifacts.records import Principal
from artifacts.store import ArtifactStore

EXIT_USAGE = 2
EXIT_ERROR = 1


class CliError(Exception):
    """A problem with how the command was called, reported as one line."""


def _local_store() -> ArtifactStore:
    return ArtifactStore.open(StoreSettings.load())


def _local_principal(client: ClientSettings) -> Principal:
    # The local CLI runs as whoever owns the data directory: it sees every owner.
    return Principal(name=client.owner, role="admin")


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


def cmd_put(args: argparse.Namespace) -> int:
    client = ClientSettings.load()
    store = _local_store()
    writer = store.open_writer(
        Principal(name=client.owner, role="agent"),
        kind=args.kind,
        name=args.name,
        session_id=client.session_id,
        source={"tool": "stdin"},
    )
    stdin = sys.stdin.buffer
    while chunk := stdin.read(1024 * 1024):
        writer.write(chunk)
    result = writer.close()
    if result.error:
        print(
            f"overspill: stored {result.size_bytes} bytes, then failed: {result.error}",
            file=sys.stderr,
        )
        print(result.id)
        return EXIT_ERROR
    print(result.id)
    return 0


def cmd_cat(args: argparse.Namespace) -> int:
    # Parse every selector before touching the store: bad input fails first.
    line_sel = _parse_lines(args.lines) if args.lines else None
    byte_sel = _parse_range(args.range) if args.range else (0, None)
    if args.tail is not None and args.tail < 1:
        raise CliError("--tail takes a positive number of lines")
    client = ClientSettings.load()
    store = _local_store()
    who = _local_principal(client)
    out = sys.stdout.buffer
    if line_sel:
        start, count = line_sel
        while count > 0:
            win = store.lines(who, args.id, start=start, count=count)
            for line in win.lines:
                out.write(line.text.encode() + b"\n")
            count -= len(win.lines)
            start = win.next_line
            if win.eof or not win.lines:
                break
        return 0
    if args.tail is not None:
        out.write(store.tail(who, args.id, lines=args.tail).text.encode())
        return 0
    _, content = store.open_content(who, args.id)
    start, end = byte_sel
    for chunk in content.iter_range(start, content.size if end is None else end):
        out.write(chunk)
    out.flush()
    return 0


def cmd_ls(args: argparse.Namespace) -> int:
    client = ClientSettings.load()
    store = _local_store()
    page = store.list(
        _local_principal(client),
        owner=args.owner,
        session_id=args.session,
        state=args.state,
        sort=args.sort,
        limit=args.limit,
        include_gone=args.all,
    )
    if args.json:
        print(json.dumps([i.model_dump(mode="json") for i in page.items]))
        return 0
    print(f"{'ID':<31} {'SIZE':>10} {'STATE':<10} {'CREATED':<20} {'OWNER':<16} SOURCE")
    for i in page.items:
        cmd = str(i.source.get("command", i.name or ""))[:40]
        print(
            f"{i.id:<31} {_human(i.size_bytes):>10} {i.state:<10} "
            f"{i.created_at:%Y-%m-%d %H:%M:%S}  {i.owner:<16} {cmd}"
        )
    return 0


def cmd_grep(args: argparse.Namespace) -> int:
    client = ClientSettings.load()
    store = _local_store()
    res = store.grep(
        _local_principal(client),
        args.id,
        args.pattern,
        ignore_case=args.ignore_case,
        fixed=args.fixed_strings,
        context=args.context,
        max_matches=args.max_count,
    )
    if args.json:
        print(res.model_dump_json())
        return 0
    for m in res.matches:
        for ln in m.before:
            print(f"{ln.number}-{ln.text}")
        print(f"{m.line.number}:{m.line.text}")
        for ln in m.after:
            print(f"{ln.number}-{ln.text}")
    if res.truncated:
        print(
            f"[more matches may follow; continue with --offset {res.next_offset}]", file=sys.stderr
        )
    return 0 if res.matches else 1


def cmd_rm(args: argparse.Namespace) -> int:
    client = ClientSettings.load()
    store = _local_store()
    for art in args.ids:
        store.delete(_local_principal(client), art)
        print(f"deleted {art}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from shell import ExecRequest, Executor, ShellSettings, StoreSink

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CliError("run needs a command: overspill run [OPTIONS] -- COMMAND...")
    shell_settings = ShellSettings.load()
    client = ClientSettings.load()
    sink = StoreSink(
        _local_store,
        Principal(name=client.owner, role="agent"),
        session_id=client.session_id,
        max_bytes=shell_settings.artifact_max_bytes,
    )
    executor = Executor(shell_settings, sink)
    request = ExecRequest(
        command=command[0] if len(command) == 1 else " ".join(command),
        workdir=args.cwd,
        timeout_ms=args.timeout_ms,
        max_output_bytes=args.max_output_bytes,
    )
    result = executor.run(request)
    if args.json:
        print(json.dumps(result.contract_json()))
    else:
        sys.stdout.write(result.text)
        if not result.text.endswith("\n"):
            sys.stdout.write("\n")
    if result.timed_out:
        return 124
    if result.signal:
        import signal as _signal

        return 128 + int(_signal.Signals[result.signal])
    return result.exit_code or 0


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from artifacts.db.engine import make_engine, upgrade

    settings = StoreSettings.load()
    engine = make_engine(settings.resolved_database_url)
    upgrade(engine)
    engine.dispose()
    print(f"database at {engine.url.render_as_string(hide_password=True)} is up to date")
    return 0


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="overspill", description="Artifacts for oversized tool output."
    )
    sub = p.add_subparsers(dest="verb", required=True, metavar="VERB")

    put = sub.add_parser("put", help="store standard input as an artifact; print its id")
    put.add_argument("--name")
    put.add_argument("--kind", default="output")
    put.set_defaults(func=cmd_put)

    cat = sub.add_parser("cat", help="write an artifact's bytes (or part) to stdout")
    cat.add_argument("id")
    sel = cat.add_mutually_exclusive_group()
    sel.add_argument("--range", help="bytes START-END (END exclusive) or START-")
    sel.add_argument("--lines", help="lines START:COUNT (1-based)")
    sel.add_argument("--tail", type=int, help="the last N lines")
    cat.set_defaults(func=cmd_cat)

    ls = sub.add_parser("ls", help="list artifacts")
    ls.add_argument("--owner")
    ls.add_argument("--session")
    ls.add_argument("--state")
    ls.add_argument("--sort", choices=["created", "size"], default="created")
    ls.add_argument("--limit", type=int, default=50)
    ls.add_argument("--all", action="store_true", help="include expired and deleted")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_ls)

    grep = sub.add_parser("grep", help="search an artifact (linear-time regex)")
    grep.add_argument("id")
    grep.add_argument("pattern")
    grep.add_argument("-i", "--ignore-case", action="store_true")
    grep.add_argument("-F", "--fixed-strings", action="store_true")
    grep.add_argument("-C", "--context", type=int, default=0)
    grep.add_argument("-m", "--max-count", type=int, default=100)
    grep.add_argument("--json", action="store_true")
    grep.set_defaults(func=cmd_grep)

    rm = sub.add_parser("rm", help="delete artifacts (a tombstone remains)")
    rm.add_argument("ids", nargs="+")
    rm.set_defaults(func=cmd_rm)

    run = sub.add_parser("run", help="run a command through the executor")
    run.add_argument("--json", action="store_true", help="print the result object")
    run.add_argument("--timeout-ms", type=float)
    run.add_argument("--max-output-bytes", type=int)
    run.add_argument("--cwd")
    run.add_argument("command", nargs=argparse.REMAINDER)
    run.set_defaults(func=cmd_run)

    db = sub.add_parser("db", help="database maintenance")
    dbsub = db.add_subparsers(dest="db_verb", required=True, metavar="ACTION")
    up = dbsub.add_parser("upgrade", help="apply schema migrations")
    up.set_defaults(func=cmd_db_upgrade)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except (OverspillError, CliError, ValueError, RuntimeError) as exc:
        print(f"overspill: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
