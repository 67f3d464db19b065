"""The ``overspill`` command.

``main`` parses the arguments, loads the settings once, builds the context
every verb receives (``api.cli.context``) and is the one place an error
becomes one line on stderr and a non-zero exit. The verbs live in modules by
group: ``run``; ``read`` (put, cat, grep, info, ls); ``manage`` (rm, pin,
retain); ``admin`` (usage, token, retention, cleanup, redact, audit, db); ``adopt``;
``serving`` (serve, server, mcp). Only overspill's own errors and the CLI's are caught
here: anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from overspill.artifacts.errors import OverspillError

from .context import EXIT_ERROR, CliContext, CliError, handler

_EPILOG = """examples:
  overspill run -- 'make test'              what the model should see
  overspill ls --min-size 10MB --sort size  the largest outputs
  overspill grep ID -i -C 2 'error'         search one, as grep -n prints
  overspill cat ID --tail 40                the end of one, bytes as stored
  overspill mcp                             the tools for a local agent (stdio)

environment (OVERSPILL_*):
  HOME, DATABASE_URL, BLOB_URL, S3_ENDPOINT_URL  where the store lives
  URL, TOKEN                                     a server instead of the local store
  LOCAL_SERVER=off                               no local server: all in the verb's process
  OWNER, SESSION_ID                              stamped on artifacts made here
  TIMEOUT_MS, MAX_OUTPUT_BYTES, LEGACY_SPILL, …  the executor (see the README)
sizes read as 500000, 10MB, 1.5GiB; durations as 3600, 90m, 12h, 7d
"""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2), like every other error."""

    def error(self, message: str) -> Any:
        self.exit(2, f"overspill: {message} (see {self.prog} --help)\n")

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse builds a formatter for every add_argument (to check the
        # metavar), and one without a width imports shutil for the terminal's:
        # 2.7 ms of every verb's start, for help that is not printed.
        from .text import terminal_width

        formatter: Any = self.formatter_class  # argparse's own classes take a width
        return formatter(prog=self.prog, width=terminal_width() - 2)  # type: ignore[no-any-return]


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from ..version import VERSION

        print(f"overspill {VERSION}")
        parser.exit()


# Each verb and the module that defines it (its parser and its handler). A verb's
# process imports only that module and builds only that verb's parser: the whole
# parser (29 argparse parsers) cost ~15 ms, a fifth of a short `run`.
VERBS = {
    "run": "run",
    "put": "read",
    "ls": "read",
    "info": "read",
    "cat": "read",
    "grep": "grep",
    "search": "search",
    "rm": "manage",
    "pin": "manage",
    "retain": "manage",
    "stats": "stats",
    "usage": "admin",
    "token": "admin",
    "retention": "admin",
    "cleanup": "admin",
    "adopt": "adopt",
    "redact": "admin",
    "audit": "admin",
    "db": "admin",
    "serve": "serving",
    "server": "serving",
    "mcp": "serving",
    "install": "install",
    "uninstall": "install",
    "hook": "install",
    "completion": "",
}


class _Only:
    """The subparsers action, keeping only the verb being run (None: all)."""

    def __init__(self, sub: Any, verb: str | None) -> None:
        self._sub = sub
        self._verb = verb

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if self._verb is None or name == self._verb:
            return self._sub.add_parser(name, **kwargs)
        return _Ignored()


class _Ignored:
    """A parser of a verb not being run: every call is accepted and dropped."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The parser of every verb, or of ``verb`` alone."""
    import importlib

    p = _Parser(
        prog="overspill",
        description="Artifacts for oversized tool output: bounded tails for the model, "
        "the full output behind an owned, expiring id.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action=_VersionAction, help="show the version and exit")
    # prog given: argparse would otherwise build a help formatter (and import
    # shutil) just to work it out, for every verb.
    sub = _Only(
        p.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser, prog="overspill"),
        verb,
    )
    modules = dict.fromkeys(VERBS.values()) if verb is None else {VERBS[verb]: None}
    for name in modules:
        if name:
            importlib.import_module(f"overspill.api.cli.{name}").register(sub)
    comp = sub.add_parser("completion", help="print a shell completion script")
    comp.add_argument(
        "shell", choices=["bash", "zsh", "fish", "ids"], help="which shell's (ids: for the script)"
    )
    comp.add_argument("prefix", nargs="?", default="", help=argparse.SUPPRESS)
    comp.set_defaults(func=cmd_completion)
    return p


def cmd_completion(ctx: CliContext, args: argparse.Namespace) -> int:
    from .completion import SHELLS, ids

    if args.shell == "ids":  # what the scripts call to complete an artifact id
        from ..client.calls import ApiCalls

        print("\n".join(ids(ApiCalls(ctx.client()), args.prefix)))
        return 0

    sys.stdout.write(SHELLS[args.shell](build_parser()))
    return 0


# The server's name for a parameter, as the verb's flag: an out-of-bounds value
# the server refuses is reported in the words the person typed.
_FLAGS = {
    "limit": "--limit",
    "session_id": "--session",
    "min_size": "--min-size",
    "max_matches": "--max-count",
    "context": "--context",
    "offset": "--offset",
    "cursor": "--cursor",
    "pattern": "PATTERN",
}


def _as_flags(message: str) -> str:
    name, sep, rest = message.partition(": ")
    return f"{_FLAGS[name]}: {rest}" if sep and name in _FLAGS else message


def main(argv: Sequence[str] | None = None, *, exit_when_done: bool = False) -> int:
    """Run one verb; returns its exit status.

    ``exit_when_done`` (the console script) ends the process as soon as the verb
    has printed its result, without the interpreter's teardown: by then every
    artifact is closed and committed, and the teardown (collecting modules,
    joining idle threads) cost ~0.15 s per command when the store was in-process."""
    if exit_when_done:
        from overspill.shell.stdio import blocking_output

        blocking_output()
    args_list = list(sys.argv[1:] if argv is None else argv)
    negative = _negative_retention(args_list)
    if negative:  # argparse would take "-5d" for an option and ask for RETENTION
        print(
            f"overspill: retain: a retention is a positive duration (7d, 12h) or "
            f"forever, got {negative}",
            file=sys.stderr,
        )
        return EXIT_ERROR
    verb = args_list[0] if args_list and args_list[0] in VERBS else None
    parser = build_parser(verb)
    args, extra = parser.parse_known_args(args_list)
    if extra:  # said by the verb's own parser, whose --help lists what it takes
        where = f"overspill {verb}" if verb else "overspill"
        print(
            f"{where}: unrecognized arguments: {' '.join(extra)} (see {where} --help)",
            file=sys.stderr,
        )
        return 2
    if args.verb is None:  # bare `overspill`: what it can do, not an error
        parser.print_help()
        return 0
    code = _dispatch(args, args_list)
    if exit_when_done:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (BrokenPipeError, OSError):
            pass
        os._exit(code)
    return code


def _negative_retention(argv: list[str]) -> str | None:
    """``retain ID -5d``: the negative duration, named back to the user."""
    if not argv or argv[0] != "retain":
        return None
    return next((a for a in argv[1:] if a[:1] == "-" and a[1:2].isdigit()), None)


def _dispatch(args: argparse.Namespace, argv: list[str]) -> int:
    ctx: CliContext | None = None
    try:
        from ..settings import Settings

        settings = Settings.load()
        ctx = CliContext(settings, argv)
        for note in settings.warnings:
            ctx.warn(note)
        from overspill.artifacts.ledger.read_context import reading_as

        # What the verb reads is the verb's, in this conversation (the ledger).
        with reading_as(args.verb, settings.client.session_id):
            return handler(args)(ctx, args)
    except (OverspillError, CliError) as exc:
        text = getattr(exc, "message", None) or str(exc)
        message = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        print(f"overspill: {_as_flags(message)}", file=sys.stderr)
        return int(getattr(args, "error_exit", EXIT_ERROR))
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a file system the verb needed refused it
        from overspill.artifacts.home import describe_os_error

        where = f"{exc.filename}: " if exc.filename else ""
        print(f"overspill: {where}{describe_os_error(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    finally:
        if ctx is not None:
            ctx.close()


def entry() -> None:
    """The console script."""
    raise SystemExit(main(exit_when_done=True))


__all__ = ["build_parser", "entry", "main"]
