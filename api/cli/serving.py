"""The verbs that run a server: ``serve`` (the API, UI and /mcp on TCP),
``server`` (this home's local server: ``status``, ``stop``, and ``run``, which a
verb starts on its own), and ``mcp`` (the tools for one local agent over stdio).
These load the store or the server in this process, as their work needs."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .context import CliContext, CliError


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-65535)")
    return port


def register(sub: Any) -> None:
    serve = sub.add_parser("serve", help="serve the HTTP API, the web UI and /mcp")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8765, help="port to bind (8765)")
    serve.add_argument(
        "--sign-in-link",
        action="store_true",
        help="print a new sign-in link (an admin token valid 24 h)",
    )
    serve.set_defaults(func=cmd_serve)

    server = sub.add_parser("server", help="this home's local server: status, stop")
    ssub = server.add_subparsers(
        dest="server_verb", required=True, metavar="ACTION", prog="overspill server"
    )
    status = ssub.add_parser("status", help="whether it runs, its pid, version and socket")
    status.add_argument("--json", action="store_true", help="as JSON")
    ssub.add_parser("stop", help="stop it (the next verb starts a new one)")
    run = ssub.add_parser("run", help="run it in the foreground (verbs start it themselves)")
    run.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)
    run.add_argument("--hold-fd", type=int, help=argparse.SUPPRESS)
    server.set_defaults(func=cmd_server)

    mcp = sub.add_parser(
        "mcp", help="serve the tools (bash, artifact_*) to a local agent over stdio (MCP)"
    )
    mcp.set_defaults(func=cmd_mcp)


def cmd_serve(ctx: CliContext, args: argparse.Namespace) -> int:
    from ..server.running import serve

    return serve(ctx.settings, args.host, args.port, sign_in_link=args.sign_in_link)


def cmd_server(ctx: CliContext, args: argparse.Namespace) -> int:
    from ..client.local_server import LocalServer

    if ctx.settings.client.url:
        raise CliError("OVERSPILL_URL is set: verbs use that server, not a local one")
    local = LocalServer(ctx.settings)
    if args.server_verb == "run":
        from ..server.running import serve_local

        return serve_local(ctx.settings, args.ready_fd, args.hold_fd)
    if args.server_verb == "stop":
        stopped = local.stop()
        print("stopped the local server" if stopped else "no local server was running")
        return 0
    hello = local.hello()
    if args.json:
        print(json.dumps(hello))
    elif hello is None:
        print(f"no local server is running for {local.home}")
    else:
        print(f"running: pid {hello['pid']}, version {hello['version']}, socket {hello['socket']}")
    return 0


def cmd_mcp(ctx: CliContext, args: argparse.Namespace) -> int:
    """Serve the tools to one local agent over stdio (MCP), the store in this
    process (an agent's session keeps it open anyway)."""
    from ..agent.mcp_stdio import serve

    print("overspill: serving MCP on stdio", file=sys.stderr) if sys.stderr.isatty() else None
    serve(ctx.settings)
    return 0
