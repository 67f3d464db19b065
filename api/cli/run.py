"""``overspill run -- CMD``: a command through the executor, printing what the
model should see (``--json``: the result object). Where an overflowing stream
goes is ``api.client.output_sink``'s choice."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any

from . import live
from .context import CliContext, CliError, positive, size


def register(sub: Any) -> None:
    run = sub.add_parser(
        "run", help="run a command through the executor", usage="%(prog)s [OPTIONS] -- COMMAND..."
    )
    run.add_argument("--json", action="store_true", help="print the result object")
    run.add_argument(
        "--timeout-ms", type=positive("--timeout-ms"), help="deadline in ms (capped at the maximum)"
    )
    run.add_argument(
        "--max-output-bytes", type=size, help="bytes of stdout kept and shown (default 64000)"
    )
    run.add_argument(
        "--answer-budget",
        type=size,
        help="keep the whole answer (both tails and their lines) within this many bytes",
    )
    run.add_argument("--session-id", help="the session the outputs belong to")
    run.add_argument(
        "--live",
        choices=("auto", "on", "off"),
        help="show the output as the command writes it (auto: on a terminal, not under a harness)",
    )
    run.add_argument(
        "--no-live", dest="live", action="store_const", const="off", help="same as --live off"
    )
    run.add_argument("--cwd", help="working directory of the command")
    run.add_argument("command", nargs=argparse.REMAINDER, help="after --: the command")
    run.set_defaults(func=cmd_run)


def cmd_run(ctx: CliContext, args: argparse.Namespace) -> int:
    from overspill.shell import ExecRequest, Executor
    from overspill.shell.process import abort_on_signals
    from overspill.shell.results import exit_status

    from ..client.output_sink import output_sink

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CliError("run needs a command: overspill run [OPTIONS] -- COMMAND...")
    if args.session_id:
        ctx.settings = ctx.settings._replace(
            client=ctx.settings.client.replace(session_id=args.session_id)
        )
    shell = ctx.settings.shell
    stdout_window = args.max_output_bytes
    if args.answer_budget:
        from ..agent.harnesses import Budget

        windows = Budget(args.answer_budget).stream_windows(shell.max_output_bytes)
        shell = shell.replace(max_output_bytes=windows.stderr)
        stdout_window = stdout_window or windows.stdout
    request = ExecRequest(
        # One argument is the command as written; several are quoted back into one
        # (`run -- grep "a b" f` runs grep with "a b", not with a and b).
        command=command[0] if len(command) == 1 else shlex.join(command),
        workdir=args.cwd,
        timeout_ms=args.timeout_ms,
        max_output_bytes=stdout_window,
    )
    abort, received = abort_on_signals()
    c = ctx.settings.client
    # The local server sweeps old legacy spill files on its interval; the
    # command's process need not walk the temp dir as well.
    by_server = not c.url and c.local_server
    if not shell.redact and not _may_store_unmasked(ctx):
        shell = shell.replace(redact=True)
    executor = Executor(shell, output_sink(ctx.settings, ctx.warn), sweep_spill_files=not by_server)
    terminal = None
    if live.wanted(args.live or c.live, json_out=args.json, env=os.environ):
        terminal = live.LiveTerminal()
        sys.stdout.flush()
    echo = terminal.echoes() if terminal is not None else None
    result = executor.run(request, abort=abort, echo=echo)
    for stream in (result.stdout, result.stderr):
        if stream.truncated and stream.storage_error:  # stdout stays the model's text
            reason = stream.storage_error.splitlines()[0]
            ctx.warn(f"full output not stored: {reason}")
    if args.json:
        import json

        print(json.dumps(result.contract_json()))
    elif terminal is not None:
        # Seen already as it came: what is left to say is where the rest is.
        from overspill.shell.render import result_markers

        from .text import trailer

        if text := trailer(result, result_markers(result)):
            sys.stdout.write(("" if terminal.ended_line else "\n") + text + "\n")
    else:
        # The text, ended as a line, so that what a terminal, a log or a model's
        # transcript shows next starts a line of its own. (A program that parses
        # the status markers takes --json, whose "text" ends exactly at the last
        # marker, or drops this one newline.)
        text = result.text
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    return exit_status(result, received)


def _may_store_unmasked(ctx: CliContext) -> bool:
    """``OVERSPILL_REDACT=off`` is honoured only where an admin's policy turns
    redaction off for this owner (``retention set --owner O --redact off``); asked
    of the store only then, so the default path costs nothing."""
    from overspill.artifacts.errors import OverspillError

    owner = ctx.settings.client.owner
    try:
        allowed = ctx.client().json("GET", "/v1/redaction")["redact"] is False
    except OverspillError as exc:
        ctx.warn(
            f"redaction stays on: the store could not say whether it may be off ({exc.message})"
        )
        return False
    if not allowed:
        ctx.warn(f"redaction stays on: no admin policy turns it off for {owner}")
    return allowed
