"""``overspill grep [OPTIONS] PATTERN ID...``-style search, as ``grep -n`` prints it.

The server streams the rows already written as ``grep -n`` writes them
(``GET .../grep/lines``: ``N:line``, ``N-line`` for context, ``--`` between
groups, each line as stored) and this verb copies the bytes to stdout: no record
per match on either side. A stream ends with a status line (a NUL and JSON);
one that stopped on the server's time budget is followed by the next request
from the offset it gives, until the end or ``-m``.

The options are grep's: ``-i -F -v -c -l -L -m N -A N -B N -C N``; with several
ids each row (or count) is prefixed with its id, as ``grep -H`` does with file
names. Exit status as grep's: 0 a line was selected, 1 none, 2 an error.
``--json`` prints the server's JSON pages instead (records with offsets).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, BinaryIO

from overspill.artifacts.bounds import MAX_GREP_MATCHES as _MAX_PAGE  # the server's bound

from ..client.calls import JSON, ApiCalls
from .context import CliContext, CliError, positive
from .progress import Progress
from .read import say_what_is_missing

GREP_ERROR = 2  # grep's exit status for trouble (1 means: nothing selected)


def register(sub: Any) -> None:
    grep = sub.add_parser(
        "grep",
        help="search artifacts (linear-time regex), as grep -n",
        usage="%(prog)s [OPTIONS] ID [ID...] PATTERN",
    )
    grep.add_argument("id", help="art_…")
    grep.add_argument("pattern", help="RE2 regular expression")
    # (A default makes argparse stop calling this optional list "required".)
    grep.add_argument(
        "more", nargs="*", default=[], help="more ids (the pattern is then the last argument)"
    )
    grep.add_argument("-i", "--ignore-case", action="store_true", help="ignore case")
    # Every grep user types -n: rows are always numbered, so it is taken and changes nothing.
    grep.add_argument("-n", "--line-number", action="store_true", help="(always on)")
    grep.add_argument("-F", "--fixed-strings", action="store_true", help="match literally")
    grep.add_argument("-v", "--invert-match", action="store_true", help="lines that do not match")
    grep.add_argument("-c", "--count", action="store_true", help="only the number of lines")
    grep.add_argument(
        "-l", "--files-with-matches", action="store_true", help="only the ids that have a match"
    )
    grep.add_argument(
        "-L", "--files-without-match", action="store_true", help="only the ids that have none"
    )
    grep.add_argument("-C", "--context", type=int, default=0, help="lines around each match")
    grep.add_argument("-A", "--after-context", type=int, help="lines after each match")
    grep.add_argument("-B", "--before-context", type=int, help="lines before each match")
    grep.add_argument(
        "-m", "--max-count", type=positive("--max-count"), help="stop after this many lines"
    )
    grep.add_argument("--offset", type=int, default=0, help="start the scan at this byte")
    grep.add_argument("--json", action="store_true", help="the result pages as JSON Lines")
    grep.set_defaults(func=cmd_grep, error_exit=GREP_ERROR)


def _targets(args: argparse.Namespace) -> tuple[list[str], str]:
    """The ids and the pattern: ``grep ID PATTERN`` or ``grep ID ID... PATTERN``."""
    if not args.more:
        return [args.id], args.pattern
    return [args.id, args.pattern, *args.more[:-1]], args.more[-1]


def cmd_grep(ctx: CliContext, args: argparse.Namespace) -> int:
    for name in ("context", "after_context", "before_context"):
        value = getattr(args, name)
        if value is not None and value < 0:
            raise CliError(f"--{name.replace('_', '-')} takes a whole number >= 0")
    if args.offset < 0:
        raise CliError("--offset takes a byte offset >= 0")
    ids, pattern = _targets(args)
    ids = [ctx.artifact_id(art) for art in ids]
    api = ApiCalls(ctx.client())
    out = sys.stdout.buffer
    if args.json:
        if len(ids) > 1:
            raise CliError("--json takes one id")
        return _json_pages(api, ids[0], pattern, args, out)
    selected = False
    listed_without = False
    code = 0
    for art in ids:
        found, state = _stream(api, art, pattern, args, out, prefix=len(ids) > 1)
        selected = selected or found > 0
        if args.files_with_matches and found:
            out.write(art.encode() + b"\n")
        elif args.files_without_match and not found:
            out.write(art.encode() + b"\n")
            listed_without = True
        elif args.count:
            out.write((f"{art}:" if len(ids) > 1 else "").encode() + b"%d\n" % found)
        out.flush()
        missing = say_what_is_missing({"id": art, **state}, wanted_end=None, follow=False)
        if missing:
            code = missing
    if code:
        return code
    if args.files_without_match:  # grep -L: success when an id was listed
        return 0 if listed_without else 1
    return 0 if selected else 1


def _stream(
    api: ApiCalls,
    art: str,
    pattern: str,
    args: argparse.Namespace,
    out: BinaryIO,
    *,
    prefix: bool,
) -> tuple[int, dict[str, Any]]:
    """Copy one artifact's rows to ``out``; the lines selected and its state."""
    quiet = args.count or args.files_with_matches or args.files_without_match
    left = 1 if (args.files_with_matches or args.files_without_match) else args.max_count
    offset, found = args.offset, 0
    label = art.encode() + b":"
    progress = Progress(None, "searched")
    while True:
        params = {
            **_pattern_params(pattern, args),
            "invert": args.invert_match or None,
            "count": True if quiet else None,
            "after": args.after_context,
            "before": args.before_context,
            "max_count": left,
            "offset": offset,
        }
        status: JSON = {}
        pending = b""
        for chunk in api.grep_lines(art, params):
            data = pending + chunk
            cut = data.rfind(b"\n") + 1
            body, pending = data[:cut], data[cut:]
            # The status is the line that starts with a NUL (a row starts with its
            # number or "--"; a NUL inside a row's bytes is not it), wherever the
            # pieces of the stream were cut.
            nul = 0 if body.startswith(b"\0") else body.find(b"\n\0") + 1
            if nul or body.startswith(b"\0"):
                status = json.loads(body[nul + 1 :])
                body = body[:nul]
            if body:
                if prefix:
                    body = b"".join(label + row for row in body.splitlines(keepends=True))
                out.write(body)
        if not status and pending.startswith(b"\0"):
            status = json.loads(pending[1:])
        if not status:
            raise CliError(f"the search of {art} ended without its status")
        progress.advance(status["next_offset"] - offset)
        found += int(status["matches"])
        if left is not None:
            left -= int(status["matches"])
        if status["eof"] or (left is not None and left <= 0) or status["next_offset"] <= offset:
            break
        offset = status["next_offset"]
    progress.finish()
    state = {k: status.get(k) for k in ("state", "size_bytes", "total_bytes", "error")}
    return found, state


def _pattern_params(pattern: str, args: argparse.Namespace) -> dict[str, Any]:
    """What both ways of asking the server (rows, JSON pages) say of the pattern."""
    return {
        "pattern": pattern,
        "ignore_case": args.ignore_case or None,
        "fixed": args.fixed_strings or None,
        "context": args.context or None,
    }


# -- --json: the server's pages --------------------------------------------------------


def _json_pages(
    api: ApiCalls, art: str, pattern: str, args: argparse.Namespace, out: BinaryIO
) -> int:
    offset, left = args.offset, args.max_count
    page: JSON = {}
    found = 0
    while True:
        params = {
            **_pattern_params(pattern, args),
            "max_matches": min(left or _MAX_PAGE, _MAX_PAGE),
            "offset": offset,
            "final": True if left is not None and left <= _MAX_PAGE else None,
        }
        raw = api.grep(art, params)
        page = json.loads(raw)
        found += len(page["matches"])
        out.write(raw + b"\n")
        if left is not None:
            left -= len(page["matches"])
            if left <= 0:
                break
        if page["eof"] or page["next_offset"] <= offset:
            break
        offset = page["next_offset"]
    out.flush()
    return 0 if found else 1
