"""``overspill stats``: what overspill kept out of models' contexts and what
they read back, for a period, an owner, a harness or a conversation (the
context ledger, ``GET /v1/stats``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from overspill.artifacts.units import format_bytes

from ..client.calls import ApiCalls
from .context import CliContext, duration


def register(sub: Any) -> None:
    p = sub.add_parser(
        "stats",
        help="what overspill kept out of models' contexts, and what they read back",
        description="Outputs made in a period (default: the last 7 days), the bytes they "
        "printed, what models were shown inline and what was kept out of their context "
        "(tokens estimated as bytes/4), what was read back afterwards, the outputs read "
        "back most and the commands that overflow most.",
    )
    p.add_argument("--since", type=duration, default=7 * 86400, help="period (12h, 7d, 30d)")
    p.add_argument("--all", action="store_true", help="all time, not a period")
    p.add_argument("--owner", help="one owner's figures (admins; default: yours)")
    p.add_argument("--session", help="one conversation: its outputs, in order")
    p.add_argument("--harness", help="one harness (claude-code, gemini, opencode, ...)")
    p.add_argument("--limit", type=int, default=5, help="rows of the ranked lists")
    p.add_argument("--json", action="store_true", help="the figures as JSON")
    p.set_defaults(func=cmd_stats)


def cmd_stats(ctx: CliContext, args: argparse.Namespace) -> int:
    answer = ApiCalls(ctx.client()).stats(
        {
            "since_s": None if args.all else args.since,
            "owner": args.owner,
            "session_id": args.session,
            "harness": args.harness,
            "limit": max(1, min(args.limit, 100)),
        }
    )
    if args.json:
        print(json.dumps(answer))
        return 0
    print("\n".join(render(answer, "all time" if args.all else f"the last {_span(args.since)}")))
    return 0


def render(s: dict[str, Any], period: str) -> list[str]:
    """The figures as a person reads them."""
    who = " of ".join(
        part
        for part in (
            f"session {s['session_id']}" if s.get("session_id") else "",
            f"harness {s['harness']}" if s.get("harness") else "",
            s.get("owner") or "every owner",
        )
        if part
    )
    out = [
        f"{period}, {who}:",
        f"  outputs           {s['outputs']} ({format_bytes(s['bytes_produced'])} printed)",
        f"  shown to models   {s['model_outputs']} outputs, {format_bytes(s['bytes_shown'])} inline",
        f"  kept out          {format_bytes(s['bytes_kept_out'])} "
        f"(~{s['tokens_kept_out_estimate']:,} tokens, estimated as bytes/4)",
        f"  read back         {s['read_backs']} reads of {s['outputs_read_back']} outputs, "
        f"{format_bytes(s['bytes_read_back'])}"
        + (f"; {s['ui_views']} views in the web pages" if s.get("ui_views") else ""),
    ]
    if s["most_read"]:
        out.append("read back most:")
        out += [f"  {r['read_backs']:>4}x  {r['id']}  {_what(r)}" for r in s["most_read"]]
    if s["commands"]:
        out.append("overflowed most:")
        out += [
            f"  {c['outputs']:>4}x  {format_bytes(c['kept_out_bytes']):>9} kept out, "
            f"{c['read_backs']} read back  {c['command'][:60]}"
            for c in s["commands"]
        ]
    if s["outputs_list"]:
        out.append("outputs of the session, in order:")
        out += [
            f"  {r['id']}  {format_bytes(r['total_bytes']):>9} printed, "
            f"{format_bytes(r['shown_bytes'] or 0):>9} shown, read back {r['read_backs']}x  "
            f"{_what(r)}"
            for r in s["outputs_list"]
        ]
    out += [f"hint: {h}" for h in s["hints"]]
    return out


def _what(row: dict[str, Any]) -> str:
    return str(row.get("command") or row.get("name") or "-")[:60]


def _span(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
