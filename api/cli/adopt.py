"""``overspill adopt``: take in the oversized outputs other tools left on disk, so
that one place holds them all under retention (see ``leftovers`` for where).

Each file becomes an artifact of the caller with its original path, its tool and
its modification time as the created time (the retention runs from the
adoption: an old file is not expired the moment it is taken in). With
``--remove`` the original goes only once its bytes are stored and checked: the
artifact is complete, holds exactly the file's size, and its sha256 is the
file's (or the store says it masked secrets, which keeps lengths), and the file
is still the one read (same inode, size and modification time). ``--dry-run``
lists what would be taken and the bytes that would be freed. The redactor runs
on adopted bytes as on any upload.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from overspill.artifacts.errors import OverspillError
from overspill.artifacts.units import format_bytes
from overspill.shell.wording import count

from ..client.calls import ApiCalls
from ..client.files import chunks, not_safe_to_remove
from ..client.wire import WireClient
from .context import EXIT_ERROR, CliContext, CliError
from .leftovers import OTHER_USER, SOURCES, Leftover, Skipped, find
from .progress import Progress, add_quiet

_WORKERS = 4


def register(sub: Any) -> None:
    p = sub.add_parser(
        "adopt",
        help="store the outputs other tools left on disk (and with --remove, free them)",
        description="Take in what Claude Code, opencode, Gemini CLI, Goose and the old "
        "spill files left on disk, or the files under PATH, as artifacts of yours. "
        "Never a symlink, a file of another user, or one a process holds open.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or directories to adopt")
    p.add_argument(
        "--from",
        dest="sources",
        action="append",
        choices=[*SOURCES, "all"],
        help="which tools' leftovers (repeatable; default: all, unless PATHs are given)",
    )
    p.add_argument("--remove", action="store_true", help="delete each original once stored")
    p.add_argument("--dry-run", action="store_true", help="list what would be adopted")
    p.add_argument("--json", action="store_true", help="one JSON object per file, then a total")
    add_quiet(p)
    p.set_defaults(func=cmd_adopt)


def cmd_adopt(ctx: CliContext, args: argparse.Namespace) -> int:
    sources = args.sources or ([] if args.paths else ["all"])
    chosen = list(SOURCES) if "all" in sources else sources
    found = list(find(chosen, args.paths, os.environ))
    client = ctx.client()
    todo, skipped = _sorted_out(found, ApiCalls(client), scanned=not args.paths)
    total = sum(f.size for f in todo)
    if args.dry_run:
        return _dry_run(todo, skipped, total, args)
    for s in skipped:  # every file passed over, with its reason, as the dry run lists it
        print(json.dumps({"path": s.path, "skipped": s.why}) if args.json else _passing(s))
    progress = Progress(total, "adopted", data_to_stdout=False, quiet=args.quiet)
    started = time.monotonic()
    done: list[dict[str, Any]] = []
    failed = 0
    for leftover, row in zip(todo, _adopt_all(client, todo, progress, args.remove), strict=True):
        failed += "error" in row
        done.append(row)
        if args.json:
            print(json.dumps(row))
        elif "error" in row:
            print(f"overspill: {leftover.path}: {row['error']}", file=sys.stderr)
        else:
            gone = ", removed" if row["removed"] else ""
            print(f"{row['id']}  {format_bytes(leftover.size):>9}  {leftover.path}{gone}")
    progress.finish()
    seconds = time.monotonic() - started
    stored = sum(row["bytes"] for row in done if "id" in row)
    summary = {
        "adopted": len(done) - failed,
        "failed": failed,
        "skipped": len(skipped),
        "bytes": stored,
        "bytes_freed": sum(r.get("freed", 0) for r in done),
        "seconds": round(seconds, 3),
    }
    if args.json:
        print(json.dumps({"total": summary}))
    else:
        rate = f", {format_bytes(int(stored / seconds))}/s" if seconds > 0 and stored else ""
        freed = f"; freed {format_bytes(summary['bytes_freed'])}" if args.remove else ""
        print(
            f"adopted {count(summary['adopted'], 'file')} ({format_bytes(stored)}{rate}){freed}; "
            f"passed over {len(skipped)}" + (f"; {failed} failed" if failed else ""),
            file=sys.stderr,
        )
    return EXIT_ERROR if failed else 0


def _adopt_all(
    client: WireClient, todo: list[Leftover], progress: Progress, remove: bool
) -> Iterator[dict[str, Any]]:
    """Each file's row, in order, _WORKERS at a time (each on a connection of its
    own): a file costs a few database commits besides its bytes, and those wait
    on the disk, not on this process."""
    from concurrent.futures import ThreadPoolExecutor

    local = threading.local()

    def one(leftover: Leftover) -> dict[str, Any]:
        api = getattr(local, "api", None)
        if api is None:
            api = local.api = ApiCalls(client.with_headers({}))
        try:
            return _adopt(api, leftover, progress, remove=remove)
        except (CliError, OverspillError) as exc:
            why = getattr(exc, "message", None) or str(exc)
            return {"path": leftover.path, "source": leftover.source, "error": why}

    with ThreadPoolExecutor(_WORKERS, thread_name_prefix="adopt") as pool:
        yield from pool.map(one, todo)


def _dry_run(
    todo: list[Leftover], skipped: list[Skipped], total: int, args: argparse.Namespace
) -> int:
    for f in todo:
        if args.json:
            print(json.dumps({"path": f.path, "source": f.source, "bytes": f.size}))
        else:
            print(f"would adopt  {format_bytes(f.size):>9}  {f.source:<11}  {f.path}")
    for s in skipped:
        print(json.dumps({"path": s.path, "skipped": s.why}) if args.json else _passing(s))
    freed = total if args.remove else 0
    if args.json:
        print(json.dumps({"total": {"files": len(todo), "bytes": total, "bytes_freed": freed}}))
    else:
        what = f", freeing {format_bytes(freed)}" if args.remove else ""
        print(
            f"would adopt {count(len(todo), 'file')} ({format_bytes(total)}){what}; "
            f"would pass over {len(skipped)}",
            file=sys.stderr,
        )
    return 0


def _adopt(
    api: ApiCalls, leftover: Leftover, progress: Progress, *, remove: bool
) -> dict[str, Any]:
    created = datetime.fromtimestamp(leftover.mtime, UTC)
    info = api.create(
        kind="output",
        name=os.path.basename(leftover.path),
        source={
            "tool": "adopt",
            "adopted_from": leftover.source,
            "path": leftover.path,
            "mtime": created.isoformat(),
        },
        created_at=created.isoformat(),
    )
    digest = hashlib.sha256()
    try:
        fd = os.open(leftover.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        api.delete(info["id"])
        raise CliError(f"cannot open: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if (st.st_dev, st.st_ino) != (leftover.device, leftover.inode):
            api.delete(info["id"])
            raise CliError("replaced while being adopted; left alone")
        stored = api.upload(info["id"], chunks(f, digest, progress.advance))
    row: dict[str, Any] = {
        "id": stored["id"],
        "path": leftover.path,
        "source": leftover.source,
        "bytes": leftover.size,
        "removed": False,
    }
    if remove:
        why = not_safe_to_remove(stored, digest.hexdigest(), leftover.path, st)
        if why:
            row["kept"] = why
        else:
            os.unlink(leftover.path)
            row["removed"], row["freed"] = True, leftover.size
    return row


def _passing(s: Skipped) -> str:
    return f"passing over  {s.path}: {s.why}"


def _sorted_out(
    found: list[Leftover | Skipped], api: ApiCalls, *, scanned: bool
) -> tuple[list[Leftover], list[Skipped]]:
    """What to adopt and what is passed over (and why), the same for a dry run
    and a run. A scan of the usual places (``scanned``) leaves out, unlisted,
    the spill files of outputs the store holds already (adopting one would
    store the output twice) and other users' files: neither is the caller's to
    take. Named PATHs are listed with the reason."""
    todo: list[Leftover] = []
    skipped: list[Skipped] = []
    for f in found:
        if isinstance(f, Skipped):
            if not (scanned and f.why == OTHER_USER):
                skipped.append(f)
            continue
        held_by = _held_by(api, f)
        if held_by is None:
            todo.append(f)
        elif not scanned:
            skipped.append(Skipped(f.path, f"the legacy spill file of {held_by}, stored already"))
    return todo, skipped


def _held_by(api: ApiCalls, leftover: Leftover) -> str | None:
    """The artifact this legacy spill file belongs to, if the store has one (it
    is deleted with it: adopting it would store the output twice)."""
    if not os.path.basename(leftover.path).startswith("dsh-"):
        return None
    page = api.list({"spill_path": leftover.path, "include_gone": True, "limit": 1})
    items = page.get("items") or []
    return str(items[0]["id"]) if items else None
