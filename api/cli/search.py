"""``overspill search PATTERN``: which of my outputs printed it, and where.

Prints ``ID:LINE:TEXT`` for every matching line of every output (newest output
first; ``--session`` narrows to one session), following the server's cursors to
the end or ``-m``, as ``grep -rn`` does over a tree of files. Exit 0 when
something matched, 1 when nothing did (as grep).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from overspill.artifacts.bounds import MAX_SEARCH_MATCHES as _MAX_PAGE  # the server's bound

from ..client.calls import ApiCalls
from .context import CliContext, positive
from .progress import Progress, add_quiet


def register(sub: Any) -> None:
    search = sub.add_parser("search", help="search all your outputs, as grep -rn")
    search.add_argument("pattern", help="RE2 regular expression")
    search.add_argument("-i", "--ignore-case", action="store_true", help="ignore case")
    search.add_argument("-F", "--fixed-strings", action="store_true", help="match literally")
    search.add_argument("--session", help="only this session's outputs")
    search.add_argument("--tool", help="only outputs of this tool (bash, web_fetch, …)")
    search.add_argument(
        "-m", "--max-count", type=positive("--max-count"), help="stop after this many lines"
    )
    search.add_argument("--json", action="store_true", help="the result pages as JSON Lines")
    add_quiet(search)
    # 2 for trouble (a bad pattern), as grep; 1 means nothing was found.
    search.set_defaults(func=cmd_search, error_exit=2)


def cmd_search(ctx: CliContext, args: argparse.Namespace) -> int:
    api = ApiCalls(ctx.client())
    out = sys.stdout.buffer
    left = args.max_count
    cursor: str | None = None
    found = 0
    progress = Progress(None, "searched", quiet=args.quiet)
    while True:
        params = {
            "pattern": args.pattern,
            "ignore_case": args.ignore_case or None,
            "fixed": args.fixed_strings or None,
            "session_id": args.session,
            "tool": args.tool,
            "max_matches": min(left or _MAX_PAGE, _MAX_PAGE),
            "cursor": cursor,
        }
        raw = api.search({k: v for k, v in params.items() if v is not None})
        page = json.loads(raw)
        if args.json:
            out.write(raw + b"\n")
        for group in page["groups"]:
            for m in group["matches"]:
                found += 1
                if not args.json:
                    line = m["line"]
                    out.write(
                        b"%s:%d:%s\n"
                        % (group["artifact_id"].encode(), line["number"], line["text"].encode())
                    )
        progress.advance(page["bytes_searched"])
        if left is not None:
            left -= page["matches"]
            if left <= 0:
                break
        cursor = page["next_cursor"]
        if cursor is None:
            break
    progress.finish()
    out.flush()
    return 0 if found else 1
