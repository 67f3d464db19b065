"""The verbs that change one artifact's life: ``rm``, ``pin``, ``retain``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..client.calls import ApiCalls
from .context import CliContext, CliError
from .text import time_of, when


def register(sub: Any) -> None:
    rm = sub.add_parser("rm", help="delete artifacts (a tombstone remains)")
    rm.add_argument("ids", nargs="+", help="art_…")
    rm.add_argument("--json", action="store_true", help="each tombstone as a JSON line")
    rm.set_defaults(func=cmd_rm)

    pin = sub.add_parser("pin", help="pin an artifact so it never expires (--unpin lifts it)")
    pin.add_argument("id", help="art_…")
    pin.add_argument("--reason", help="why (kept with the pin)")
    pin.add_argument("--unpin", action="store_true", help="lift the pin")
    pin.add_argument("--json", action="store_true", help="the artifact as JSON")
    pin.set_defaults(func=cmd_pin)

    retain = sub.add_parser("retain", help="ask for an artifact's retention (7d, 12h, forever)")
    retain.add_argument("id", help="art_…")
    retain.add_argument(
        "retention", metavar="RETENTION", help="a duration (3600, 12h, 7d), 'forever' or 'default'"
    )
    retain.add_argument("--json", action="store_true", help="the artifact as JSON")
    retain.set_defaults(func=cmd_retain)


def parse_retention(value: str, what: str = "retention") -> int | str | None:
    """A duration, ``forever``, or ``default`` (None: the policy's)."""
    if value in ("forever", "default"):
        return None if value == "default" else value
    from overspill.artifacts.units import DURATION_FORMS, parse_duration

    try:
        return parse_duration(value, what)
    except ValueError:
        raise CliError(
            f"{what}: {value!r} is not a duration ({DURATION_FORMS}), 'forever' or 'default'"
        ) from None


def cmd_rm(ctx: CliContext, args: argparse.Namespace) -> int:
    api = ApiCalls(ctx.client())
    for art in [ctx.artifact_id(a) for a in args.ids]:
        info = api.delete(art)
        print(json.dumps(info) if args.json else f"deleted {art}")
    return 0


def cmd_pin(ctx: CliContext, args: argparse.Namespace) -> int:
    api = ApiCalls(ctx.client())
    art = ctx.artifact_id(args.id)
    info = api.unpin(art) if args.unpin else api.pin(art, args.reason)
    if args.json:
        print(json.dumps(info))
    elif info["pinned"]:
        print(
            f"pinned {info['id']} (by {info['pinned_by']}: {info['pin_reason'] or 'no reason given'})"
        )
    else:
        expires = when(time_of(info["expires_at"]))
        print(f"unpinned {info['id']}; expires {expires} ({info['retention_source']})")
    return 0


def cmd_retain(ctx: CliContext, args: argparse.Namespace) -> int:
    retention = parse_retention(args.retention)
    info = ApiCalls(ctx.client()).set_retention(ctx.artifact_id(args.id), retention)
    if args.json:
        print(json.dumps(info))
        return 0
    clamp = " (clamped)" if info["retention_clamped"] else ""
    expires = when(time_of(info["expires_at"]))
    print(f"{info['id']} expires {expires}: {info['retention_source']}{clamp}")
    return 0
