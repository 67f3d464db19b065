"""``overspill grep ID PATTERN``: every match, printed as ``grep -n`` prints it.

The server answers in pages (``/grep``, at most 10,000 matches each, bounded in
bytes and time); this verb follows the pages to the end (or ``-m``) and merges
them: a line is printed once, a match as a match (never as the context of the
one before), groups that touch are one group, and ``--`` separates the others.
Lines are written as stored: one the server clipped, or whose bytes are not
plain UTF-8, is fetched whole from the artifact's bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, BinaryIO

from overspill.artifacts.bounds import MAX_GREP_MATCHES as _MAX_PAGE  # the server's bound
from overspill.artifacts.grep_groups import Groups, Row

from ..client.calls import JSON, ApiCalls
from .context import CliContext, CliError, positive
from .progress import Progress
from .read import say_what_is_missing


def register(sub: Any) -> None:
    grep = sub.add_parser("grep", help="search an artifact (linear-time regex), as grep -n")
    grep.add_argument("id", help="art_…")
    grep.add_argument("pattern", help="RE2 regular expression")
    grep.add_argument("-i", "--ignore-case", action="store_true", help="ignore case")
    grep.add_argument("-F", "--fixed-strings", action="store_true", help="match literally")
    grep.add_argument("-C", "--context", type=int, default=0, help="lines around each match")
    grep.add_argument(
        "-m", "--max-count", type=positive("--max-count"), help="stop after this many matches"
    )
    grep.add_argument("--offset", type=int, default=0, help="start the scan at this byte")
    grep.add_argument("--json", action="store_true", help="the result pages as JSON Lines")
    grep.set_defaults(func=cmd_grep)


class _GrepPrinter:
    """Matches as ``grep -n`` prints them (``artifacts.grep_groups``): ``N:line`` for
    a match, ``N-line`` for context, every line once, groups merged, ``--``
    between groups that do not touch. Lines are written as stored: a line the
    server clipped, or whose bytes are not plain UTF-8, is fetched whole from the
    artifact's bytes."""

    def __init__(self, api: ApiCalls, artifact_id: str, context: int, out: BinaryIO) -> None:
        self._api = api
        self._id = artifact_id
        self._out = out
        self._groups: Groups[JSON] = Groups(lambda ln: int(ln["number"]), context=context)
        self.matches = 0

    def match(self, m: JSON) -> None:
        self._print(self._groups.take(m["line"], m["before"], m["after"]))
        self.matches += 1

    def finish(self) -> None:
        self._print(self._groups.finish())

    def _print(self, rows: list[Row[JSON]]) -> None:
        for row in rows:
            if row.gap_before:
                self._out.write(b"--\n")
            self._emit(row.line, b":" if row.is_match else b"-")

    def _emit(self, ln: JSON, mark: bytes) -> None:
        self._out.write(b"%d%s" % (ln["number"], mark))
        text: str = ln["text"]
        encoded = text.encode()
        end = ln.get("end")
        exact = end is None or (
            not ln.get("truncated") and "\ufffd" not in text and end - ln["offset"] == len(encoded)
        )
        if exact:
            self._out.write(encoded)
        else:
            for chunk in self._api.content(self._id, ln["offset"], end):
                self._out.write(chunk)
        self._out.write(b"\n")


def cmd_grep(ctx: CliContext, args: argparse.Namespace) -> int:
    if args.context < 0:
        raise CliError("--context takes a whole number >= 0")
    if args.offset < 0:
        raise CliError("--offset takes a byte offset >= 0")
    api = ApiCalls(ctx.client())
    out = sys.stdout.buffer
    printer = _GrepPrinter(api, args.id, args.context, out)
    offset, left = args.offset, args.max_count
    progress = Progress(None, "searched")
    page: JSON = {}
    found = 0
    while True:
        params = {
            "pattern": args.pattern,
            "ignore_case": args.ignore_case or None,
            "fixed": args.fixed_strings or None,
            "context": args.context or None,
            "max_matches": min(left or _MAX_PAGE, _MAX_PAGE),
            "offset": offset,
            # -m's last page: its last match's trailing context shows the lines
            # that match too, as GNU grep -m prints them.
            "final": True if left is not None and left <= _MAX_PAGE else None,
        }
        raw = api.grep(args.id, params)
        page = json.loads(raw)
        if offset == args.offset and args.offset > page["size_bytes"]:
            raise CliError(
                f"--offset {args.offset} is past the end: {args.id} holds "
                f"{page['size_bytes']} bytes"
            )
        found += len(page["matches"])
        if args.json:
            out.write(raw + b"\n")
        else:
            for m in page["matches"]:
                printer.match(m)
        progress.advance(page["next_offset"] - offset)
        if left is not None:
            left -= len(page["matches"])
            if left <= 0:
                break
        if page["eof"] or page["next_offset"] <= offset:
            break
        offset = page["next_offset"]
    printer.finish()
    progress.finish()
    out.flush()
    if not page.get("eof") and left is not None and left <= 0:
        return 0  # stopped where -m said: as grep -m
    state = {"id": args.id, **{k: page[k] for k in ("state", "size_bytes", "total_bytes", "error")}}
    missing = say_what_is_missing(state, wanted_end=None, follow=False)
    if missing:
        return missing
    return 0 if found else 1
