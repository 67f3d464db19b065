"""The verbs that read and store artifacts: ``put``, ``cat``, ``info``, ``ls``
(``grep`` has a module of its own).

A person's ``cat`` writes the stored bytes exactly (no decoding, no dropped
carriage returns) and the whole selection, streamed, so memory stays bounded
whatever its size; ``grep`` prints whole lines and every match, merged into
groups as GNU grep prints them. Where a verb shows less than was asked (the
output was capped, the writer died, a search stopped) it says so on stderr and
exits non-zero.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import stat
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

from overspill.artifacts.errors import OverspillError
from overspill.artifacts.units import format_bytes
from overspill.shell.wording import redaction_note

from ..client.calls import JSON, ApiCalls
from .context import EXIT_ERROR, CliContext, CliError, positive, size
from .progress import Progress, add_quiet
from .text import exit_status, table, terminal_width, time_of, when


def register(sub: Any) -> None:
    put = sub.add_parser("put", help="store standard input as an artifact; print its id")
    put.add_argument("--name", help="a name shown in listings")
    put.add_argument("--kind", default="output", help="a kind label (output)")
    add_quiet(put)
    put.add_argument("--json", action="store_true", help="the stored artifact as JSON")
    put.set_defaults(func=cmd_put)

    ls = sub.add_parser("ls", help="list artifacts")
    ls.add_argument("--owner", help="only this owner's (admins)")
    ls.add_argument("--session", help="only this session's")
    ls.add_argument(
        "--state",
        choices=["writing", "complete", "capped", "incomplete", "failed", "expired", "deleted"],
        help="only in this state",
    )
    ls.add_argument("--kind", choices=["output", "result"], help="only of this kind")
    ls.add_argument("--min-size", type=size, help="at least this big (10MB)")
    ls.add_argument("--sort", choices=["created", "size"], default="created", help="order")
    ls.add_argument("--limit", type=positive("--limit"), default=50, help="rows (50)")
    ls.add_argument("--all", action="store_true", help="include expired and deleted")
    ls.add_argument("--cursor", help="continue a listing (the 'more:' line prints the command)")
    ls.add_argument("--json", action="store_true", help="one JSON object")
    ls.set_defaults(func=cmd_ls)

    info = sub.add_parser("info", help="an artifact's metadata")
    info.add_argument("id", help="art_…")
    info.add_argument("--json", action="store_true", help="as JSON")
    info.set_defaults(func=cmd_info)

    cat = sub.add_parser("cat", help="write an artifact's bytes (or part) to stdout, exactly")
    cat.add_argument("id", help="art_…")
    sel = cat.add_mutually_exclusive_group()
    sel.add_argument("--range", help="bytes START-END (END exclusive) or START-")
    sel.add_argument("--lines", help="lines START:COUNT (1-based)")
    sel.add_argument("--tail", type=positive("--tail"), help="the last N lines")
    cat.add_argument("--follow", action="store_true", help="keep going while it is written")
    add_quiet(cat)
    cat.set_defaults(func=cmd_cat)


# -- put ------------------------------------------------------------------------------


def cmd_put(ctx: CliContext, args: argparse.Namespace) -> int:
    stdin = sys.stdin.buffer
    if sys.stdin.isatty():  # not silence: say what it is waiting for
        print("overspill: storing what you type; end with Ctrl-D", file=sys.stderr)
    api = ApiCalls(ctx.client())
    info = api.create(
        kind=args.kind,
        name=args.name,
        session_id=ctx.settings.client.session_id,
        source={"tool": "stdin"},
    )
    progress = Progress(_size(stdin), "stored", data_to_stdout=False, quiet=args.quiet)
    info = api.upload(info["id"], _stdin_chunks(stdin, progress))
    progress.finish()
    if args.json:
        print(json.dumps(info))
    else:
        print(info["id"])
    if info["state"] != "complete":
        why = info.get("error") or info["state"]
        print(f"overspill: stored {info['size_bytes']} bytes, then: {why}", file=sys.stderr)
        return EXIT_ERROR
    return 0


def _size(stdin: BinaryIO) -> int | None:
    """The bytes to come when standard input is a file (``put < big.log``)."""
    try:
        st = os.fstat(stdin.fileno())
    except (OSError, ValueError):
        return None
    return st.st_size - stdin.tell() if stat.S_ISREG(st.st_mode) else None


def _stdin_chunks(stdin: BinaryIO, progress: Progress) -> Iterator[bytes]:
    # read1: what is there, without waiting to fill a buffer, so one Ctrl-D at a
    # terminal ends the input (a full read() waits for a second one).
    reader = getattr(stdin, "read1", stdin.read)
    while chunk := reader(1024 * 1024):
        progress.advance(len(chunk))
        yield chunk


# -- cat ------------------------------------------------------------------------------


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


def _line_start(api: ApiCalls, artifact_id: str, number: int) -> int | None:
    """The byte offset where line ``number`` starts (None past the last line)."""
    page = api.lines(artifact_id, {"start": number, "count": 1, "max_bytes": 1})
    return int(page["lines"][0]["offset"]) if page["lines"] else None


def cmd_cat(ctx: CliContext, args: argparse.Namespace) -> int:
    # Parse every selector before touching the store: bad input fails first.
    line_sel = _parse_lines(args.lines) if args.lines else None
    start, end = _parse_range(args.range) if args.range else (0, None)
    args.id = ctx.artifact_id(args.id)
    api = ApiCalls(ctx.client())
    if args.tail is not None and not args.follow:
        done = _small_tail(api, args.id, args.tail)
        if done is not None:
            return done
    info = api.get(args.id)
    stored = info["size_bytes"]
    if line_sel is not None:
        first, count = line_sel
        begin = _line_start(api, args.id, first)
        if begin is None:
            raise CliError(f"{args.id} has no line {first}: it has {info['line_count']} lines")
        start, end = begin, _line_start(api, args.id, first + count)
    elif args.tail is not None:
        first = max(1, info["line_count"] - args.tail + 1)
        start, end = (_line_start(api, args.id, first) or 0) if stored else 0, None
        if not args.follow:
            end = stored
    elif start > stored or (start == stored and stored and not args.follow):
        raise CliError(f"--range starts at byte {start}, past the {stored} bytes {args.id} holds")
    stop = stored if end is None else min(end, stored)
    progress = Progress(None if args.follow else max(0, stop - start), "written", quiet=args.quiet)
    out = sys.stdout.buffer
    for chunk in api.content(args.id, start, end, follow=args.follow):
        out.write(chunk)
        progress.advance(len(chunk))
    progress.finish()
    out.flush()
    after = api.get(args.id) if args.follow else info
    return say_what_is_missing(after, wanted_end=end, follow=args.follow)


def _small_tail(api: ApiCalls, artifact_id: str, lines: int) -> int | None:
    """``--tail N`` in one request when the tail is small and its text is its
    bytes (no invalid UTF-8 to stand for): the window says where it starts and
    how the artifact stands. None when the bytes must be streamed instead."""
    w = api.tail(artifact_id, {"lines": lines, "max_bytes": 256 * 1024})
    if w["truncated"] or "\ufffd" in w["text"]:
        return None
    sys.stdout.buffer.write(w["text"].encode())
    sys.stdout.buffer.flush()
    state = {
        "id": artifact_id,
        **{k: w[k] for k in ("state", "size_bytes", "total_bytes", "error")},
    }
    return say_what_is_missing(state, wanted_end=None, follow=False)


def say_what_is_missing(info: JSON, *, wanted_end: int | None, follow: bool) -> int:
    """When what was written is less than the output (it was capped, the writer
    died or failed, it is still being written), one line on stderr and exit 1.
    A range asked that is wholly stored is no shortfall -- except when following:
    a follower asked for the whole output, and an output whose writer stopped
    never ended."""
    state, size, total = info["state"], info["size_bytes"], info["total_bytes"]
    reach = total if wanted_end is None else min(wanted_end, total)
    if state == "complete":
        return 0
    if not follow and wanted_end is not None and wanted_end <= size:
        return 0
    if state == "capped" and reach <= size:
        return 0
    if state == "writing":
        ended = "; the follow ended before its writer did" if follow else ""
        print(
            f"overspill: {info['id']} is still being written: {size} bytes stored so far{ended}",
            file=sys.stderr,
        )
        return EXIT_ERROR
    why = f" ({info['error']})" if info.get("error") else ""
    lost = f"; bytes {size}-{total} of the output are not stored" if total > size else ""
    how = {
        "incomplete": "its writer stopped before the output ended",
        "failed": "storing it failed",
        "capped": "it was capped",
    }.get(state, state)
    print(
        f"overspill: {info['id']} is {state}: {how}{why}; {size} bytes are stored{lost}",
        file=sys.stderr,
    )
    return EXIT_ERROR


# -- info and ls ----------------------------------------------------------------------


def cmd_info(ctx: CliContext, args: argparse.Namespace) -> int:
    info = ApiCalls(ctx.client()).get(ctx.artifact_id(args.id))
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    src = info["source"]
    gone = info["state"] in ("deleted", "expired")
    rows = [
        ("id", info["id"]),
        ("state", info["state"] + (f" ({info['error']})" if info.get("error") else "")),
        ("size", _size_line(info)),
        # (A gone output's frames may wait for the next sweep: not a size to show.)
        *([("on disk", _disk_line(info))] if not gone and info["state"] != "writing" else []),
        ("owner", info["owner"]),
        ("session", info["session_id"] or "-"),
        ("name", info["name"] or "-"),
    ]
    if src.get("command"):
        rows.append(("command", " ".join(str(src["command"]).split())))
    if "exit_code" in src or src.get("signal"):
        rows.append(("exit", exit_status(src)))
    redacted = redaction_note(src.get("redactions"))
    if redacted:
        rows.append(("redacted", redacted))
    rows.append(("created", when(time_of(info["created_at"]))))
    if gone:
        at = info.get("deleted_at") or info.get("expires_at")
        reason = info.get("delete_reason")
        rows.append(
            (info["state"], (when(time_of(at)) if at else "-") + (f" ({reason})" if reason else ""))
        )
    else:
        rows.append(("expires", _expiry(info)))
    if info.get("sha256"):
        rows.append(("sha256", info["sha256"]))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key + ':':<{width + 1}} {value}")
    return 0


def _size_line(info: JSON) -> str:
    stored, total = info["size_bytes"], info["total_bytes"]
    lines = info["line_count"]
    text = f"{format_bytes(stored)} ({stored} bytes, {lines} {'line' if lines == 1 else 'lines'})"
    if info["state"] in ("deleted", "expired"):
        return f"{format_bytes(total)} printed ({total} bytes); none of it can be read any more"
    if total > stored:
        text += f" stored of {total} bytes printed"
    return text


def _disk_line(info: JSON) -> str:
    """Which form the output is in: as written while it is hot (read at file
    speed), else what its compressed frames take (the figure quotas count)."""
    if not info.get("compressed"):
        return "as printed (hot: compacted once it goes unread for a while)"
    kept, size = info["stored_bytes"], info["size_bytes"]
    share = f", {kept * 100 / size:.1f}% of the output" if size else ""
    return f"{format_bytes(kept)} ({kept} bytes, compressed frames{share})"


def _expiry(info: JSON) -> str:
    if info["pinned"]:
        return f"never: pinned by {info['pinned_by']}"
    if info.get("expires_at") is None:
        return "never"
    return f"{when(time_of(info['expires_at']))} ({info['retention_source']})"


def cmd_ls(ctx: CliContext, args: argparse.Namespace) -> int:
    page = ApiCalls(ctx.client()).list(
        {
            "owner": args.owner,
            "session_id": args.session,
            "state": args.state,
            "kind": args.kind,
            "sort": args.sort,
            "limit": args.limit,
            "include_gone": args.all or None,
            "min_size": args.min_size,
            "cursor": args.cursor,
        }
    )
    if args.json:
        print(json.dumps(page))
        return 0
    width = terminal_width()
    wide = width >= 120  # room for the owner and session columns too
    items = page["items"]
    if items:
        header = ["ID", "SIZE", "STATE", "EXIT", "CREATED"]
        header += ["OWNER", "SESSION", "SOURCE"] if wide else ["SOURCE"]
        rows = [header] + [_row(i, wide) for i in items]
        for line in table(rows, right=frozenset({1})):
            print(_fit(line, width))
    matching = ""
    if page.get("total_bytes") is not None:
        matching = f" of {page['total_count']} matching, {format_bytes(page['total_bytes'])} in all"
    print(f"{len(items)} shown{matching}")
    if page["next_cursor"]:
        again = list(ctx.argv)
        if "--cursor" in again:  # drop the old cursor's value too
            at = again.index("--cursor")
            del again[at : at + 2]
        print(f"more: overspill {shlex.join(again)} --cursor {page['next_cursor']}")
    return 0


def _fit(line: str, width: int) -> str:
    return line if len(line) <= width else line[: max(10, width - 1)] + "…"


def _row(i: JSON, wide: bool) -> list[str]:
    src = i["source"]
    what = " ".join(str(src.get("command") or i["name"] or "").split())
    if src.get("stream"):
        short = {"stdout": "out", "stderr": "err"}.get(src["stream"], src["stream"])
        what = f"{short}: {what}"
    row = [i["id"], format_bytes(i["size_bytes"]), i["state"], exit_status(src)]
    row.append(when(time_of(i["created_at"])))
    if wide:
        row += [i["owner"][:24], (i["session_id"] or "-")[:16]]
    return [*row, what]


__all__ = ["OverspillError", "register"]
