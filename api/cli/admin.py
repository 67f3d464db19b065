"""The admin verbs: ``usage``, ``token``, ``retention``, ``cleanup``, ``audit``, ``db``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from overspill.artifacts.bounds import TOKEN_CACHE_S
from overspill.artifacts.units import format_bytes, format_duration

from ..client.calls import JSON, ApiCalls
from .context import EXIT_ERROR, CliContext, CliError, duration, positive, size
from .manage import parse_retention
from .progress import Progress, add_quiet
from .text import time_of, when

# What "inherit" is written as on the command line: the field is cleared and
# the level above (the global policy, then the server's default) decides.
INHERIT = ("inherit", "default")


def register(sub: Any) -> None:
    usage = sub.add_parser("usage", help="bytes and counts by owner and state")
    usage.add_argument("--json", action="store_true", help="JSON")
    usage.set_defaults(func=cmd_usage)

    token = sub.add_parser("token", help="API tokens")
    tsub = token.add_subparsers(
        dest="token_verb", required=True, metavar="ACTION", prog="overspill token"
    )
    tc = tsub.add_parser("create", help="issue a token (printed alone on the last line)")
    tc.add_argument("--principal", required=True, help="who it acts as, e.g. agent:ci-bot")
    tc.add_argument(
        "--role", choices=["agent", "user", "admin"], default="agent", help="what it may do"
    )
    tc.add_argument("--label", help="a note shown in token lists")
    tc.add_argument("--expires-in", type=duration, help="until it stops working (3600, 12h, 7d)")
    tc.add_argument("--json", action="store_true", help="the token and its record as JSON")
    tl = tsub.add_parser("list", help="list tokens")
    tl.add_argument("--json", action="store_true", help="JSON Lines, one token a line")
    tr = tsub.add_parser("revoke", help="revoke a token by its id (tok_…)")
    tr.add_argument("id", help="tok_…")
    token.set_defaults(func=cmd_token)

    ret = sub.add_parser("retention", help="show or set retention policies (admin)")
    rsub = ret.add_subparsers(
        dest="retention_verb", required=True, metavar="ACTION", prog="overspill retention"
    )
    rshow = rsub.add_parser("show", help="the global policy, or one owner's")
    rshow.add_argument("--owner", help="omit for the global policy")
    rshow.add_argument("--json", action="store_true", help="the policy as JSON")
    rset = rsub.add_parser(
        "set", help="set a policy (prints the preview first); 'inherit' clears a field"
    )
    rset.add_argument("--owner", help="omit for the global policy")
    rset.add_argument("--default", help="default retention: 7d, or inherit")
    rset.add_argument("--max", help="ceiling: 30d, or inherit")
    forever = rset.add_mutually_exclusive_group()
    forever.add_argument(
        "--allow-forever", action="store_true", help="let artifacts be kept forever"
    )
    forever.add_argument("--no-forever", action="store_true", help="do not allow forever")
    rset.add_argument("--quota", help="bytes per owner: 10GiB, or inherit")
    rset.add_argument("--max-artifact-bytes", help="cap per artifact: 1GiB, or inherit")
    rset.add_argument("--over-quota", choices=["reject", "evict"], help="when over the quota")
    rset.add_argument(
        "--redact",
        choices=["on", "off", "inherit"],
        help="off lets the owner store output unmasked (OVERSPILL_REDACT=off); audited",
    )
    rset.add_argument(
        "--apply-to-existing", action="store_true", help="recompute existing expiries"
    )
    rset.add_argument("--preview", action="store_true", help="only show what would expire")
    rset.add_argument("--json", action="store_true", help="the policy as JSON")
    ret.set_defaults(func=cmd_retention)

    clean = sub.add_parser("cleanup", help="expire, purge and reconcile once")
    clean.add_argument("--dry-run", action="store_true", help="say what it would do")
    clean.add_argument("--json", action="store_true", help="the report as JSON")
    clean.set_defaults(func=cmd_cleanup)

    red = sub.add_parser(
        "redact",
        help="mask what is already stored with the current rules (--scrub)",
        description="Read every stored output through the current redaction rules and "
        "patterns; rewrite each one a secret is found in, masked, and delete its old bytes "
        "(each rewrite is in the audit log).",
    )
    red.add_argument("--scrub", action="store_true", help="rewrite stored outputs (required)")
    red.add_argument("--owner", help="only this owner's outputs")
    red.add_argument("--dry-run", action="store_true", help="say what would be rewritten")
    red.add_argument("--json", action="store_true", help="the report as JSON")
    add_quiet(red)
    red.set_defaults(func=cmd_redact)

    aud = sub.add_parser("audit", help="the audit log, newest first (admin)")
    aud.add_argument("--artifact", help="only this artifact's events")
    aud.add_argument("--owner", help="only this owner's")
    aud.add_argument("--action", help="only this action (create, delete, pin, …)")
    aud.add_argument("--limit", type=positive("--limit"), default=50, help="rows (50)")
    aud.add_argument("--json", action="store_true", help="JSON Lines, one event a line")
    aud.set_defaults(func=cmd_audit)

    db = sub.add_parser("db", help="database maintenance")
    dbsub = db.add_subparsers(dest="db_verb", required=True, metavar="ACTION", prog="overspill db")
    up = dbsub.add_parser("upgrade", help="apply schema migrations")
    up.set_defaults(func=cmd_db_upgrade)


def cmd_usage(ctx: CliContext, args: argparse.Namespace) -> int:
    rows = ApiCalls(ctx.client()).usage()
    if args.json:
        print(json.dumps(rows))
        return 0
    for row in rows:
        states = ", ".join(f"{k} {v['artifacts']}" for k, v in row["by_state"].items())
        count = row["artifacts"]
        noun = "artifact" if count == 1 else "artifacts"
        output = int(row.get("output_bytes") or row["bytes"])
        of = f" of {format_bytes(output)}" if output != row["bytes"] else ""
        print(
            f"{row['owner']:<24} {format_bytes(row['bytes']):>10}{of} stored "
            f"{count:>7} {noun} ({states})"
        )
    return 0


def cmd_token(ctx: CliContext, args: argparse.Namespace) -> int:
    api = ApiCalls(ctx.client())
    if args.token_verb == "create":
        issued = api.create_token(
            principal=args.principal, role=args.role, label=args.label, expires_in_s=args.expires_in
        )
        if args.json:
            print(json.dumps(issued))
            return 0
        info = issued["info"]
        print(
            f"token {info['id']} for {info['principal']} ({info['role']}); shown once:",
            file=sys.stderr,
        )
        print(issued["token"])
    elif args.token_verb == "list":
        tokens = api.list_tokens()
        if args.json:
            for t in tokens:
                print(json.dumps(t))
            return 0
        if not tokens:
            print("no tokens")
            return 0
        print(f"{'ID':<22} {'PRINCIPAL':<24} {'ROLE':<6} {'STATUS':<8} {'LAST USED':<16} LABEL")
        for t in tokens:
            status = "revoked" if t["revoked_at"] else "active"
            print(
                f"{t['id']:<22} {t['principal']:<24} {t['role']:<6} {status:<8} "
                f"{when(time_of(t['last_used_at'])):<16} {t['label'] or ''}"
            )
    else:
        if args.id.startswith("ovs_"):
            # A secret, not an id: never echo it back, say what to pass instead.
            raise CliError(
                "token revoke takes the token's id (tok_…), not its secret; see token list"
            )
        api.revoke_token(args.id)
        print(
            f"revoked {args.id}: refused at once by the server that revoked it; "
            f"any other server that checked it in the last {TOKEN_CACHE_S:g} s "
            f"refuses it within {TOKEN_CACHE_S:g} s"
        )
    return 0


def policy_line(p: JSON, parent: JSON | None = None) -> str:
    """One policy; an unset field says what it inherits (the global value for an
    owner's policy, else the server's default)."""

    def dur(field: str) -> str:
        v = p.get(field)
        if v is not None:
            return format_duration(v)
        above = parent.get(field) if parent is not None else None
        if above is not None:
            return f"inherit (global {format_duration(above)})"
        return "inherit (server default)" if field == "default_retention_s" else "inherit (none)"

    quota = "none" if p["quota_bytes"] is None else format_bytes(p["quota_bytes"])
    cap = "none" if p["max_artifact_bytes"] is None else format_bytes(p["max_artifact_bytes"])
    return (
        f"{p['owner']}: default {dur('default_retention_s')}, "
        f"ceiling {dur('max_retention_s')}, "
        f"forever {'allowed' if p['allow_forever'] else 'not allowed'}, quota {quota} "
        f"({p['over_quota']} when over), artifact cap {cap}"
        + ("" if p.get("redact") is None else f", redaction {'on' if p['redact'] else 'off'}")
    )


def _owner(value: str | None) -> str | None:
    """``--owner``: omitted means the global policy; given, it must name one."""
    if value is None:
        return None
    if not value.strip() or value.strip() != value or value == "*":
        raise CliError(f"--owner {value!r} names no owner; omit --owner for the global policy")
    return value


def _policy_value(flag: str, value: str | None, parse: Any) -> tuple[bool, Any]:
    """(given, value): ``inherit`` gives None (the field is cleared)."""
    if value is None:
        return False, None
    if value in INHERIT:
        return True, None
    try:
        return True, parse(value)
    except (ValueError, CliError) as exc:
        reason = str(exc).split(": ", 1)[-1]
        raise CliError(f"{flag}: {reason}; or 'inherit'") from None


def cmd_retention(ctx: CliContext, args: argparse.Namespace) -> int:
    api = ApiCalls(ctx.client())
    owner = _owner(args.owner)
    if args.retention_verb == "show":
        view = api.get_policy(owner)
        parent = api.get_policy(None) if owner else None
        print(json.dumps(view) if args.json else policy_line(view, parent))
        return 0

    def seconds(text: str) -> int:
        value = parse_retention(text, "a policy duration")
        if not isinstance(value, int):
            raise CliError(f"{text!r} is not a length of time")
        return value

    from overspill.artifacts.units import parse_size

    given: dict[str, Any] = {}
    for field, flag, value, parse in (
        ("default_retention_s", "--default", args.default, seconds),
        ("max_retention_s", "--max", args.max, seconds),
        ("quota_bytes", "--quota", args.quota, parse_size),
        ("max_artifact_bytes", "--max-artifact-bytes", args.max_artifact_bytes, parse_size),
    ):
        present, parsed = _policy_value(flag, value, parse)
        if present:
            given[field] = parsed
    if args.allow_forever or args.no_forever:
        given["allow_forever"] = bool(args.allow_forever)
    if args.over_quota:
        given["over_quota"] = args.over_quota
    if args.redact:
        given["redact"] = None if args.redact == "inherit" else args.redact == "on"
    if not given and not args.preview:
        raise CliError("retention set needs a field to change (see --help)")
    # Only what was given changes: `--default 1d` keeps the quota that is set.
    preview = api.preview_policy(owner, given)
    t = preview["total"]
    print(
        f"would expire now: {t['now']['artifacts']} artifacts ({format_bytes(t['now']['bytes'])}); "
        f"within 24h: {t['within_24h']['artifacts']} ({format_bytes(t['within_24h']['bytes'])}); "
        f"within 7d: {t['within_7d']['artifacts']} ({format_bytes(t['within_7d']['bytes'])}) "
        "if applied to existing",
        file=sys.stderr if args.json else sys.stdout,
    )
    if args.preview:
        return 0
    result = api.set_policy(owner, {**given, "apply_to_existing": args.apply_to_existing})
    if args.json:
        print(json.dumps(result))
        return 0
    print(policy_line(result["policy"]))
    if args.apply_to_existing:
        print(f"recomputed the expiry of {result['updated_artifacts']} existing artifacts")
    return 0


def cmd_cleanup(ctx: CliContext, args: argparse.Namespace) -> int:
    r = ApiCalls(ctx.client()).cleanup(dry_run=args.dry_run)
    if args.json:
        print(json.dumps(r))
        return 0
    verb, fin = ("would delete", "would finalise") if r["dry_run"] else ("deleted", "finalised")
    print(
        f"{verb}: {r['expired']} expired artifacts, bytes of {r['purged']} tombstones "
        f"({format_bytes(r['bytes_freed'])}), {r['orphan_blobs']} orphan blobs "
        f"({format_bytes(r['orphan_bytes'])}), {r['tombstones_removed']} old tombstones, "
        f"{r['partial_uploads']} partial uploads, {r['legacy_spill_files']} legacy spill files; "
        f"{fin} {r['writers_finalised']} dead writers"
    )
    if r.get("compacted"):
        print(
            f"compressed: {r['compacted']} artifacts, {format_bytes(r['compacted_bytes'])} "
            f"now take {format_bytes(r['compressed_bytes'])}"
            f" ({r['shared_frames']} frames already stored for the same owner)"
        )
    for err in r["errors"]:
        print(f"overspill: cleanup error: {err}", file=sys.stderr)
    return EXIT_ERROR if r["errors"] else 0


def cmd_redact(ctx: CliContext, args: argparse.Namespace) -> int:
    if not args.scrub:
        raise CliError("redact rewrites stored outputs only when told: add --scrub")
    api = ApiCalls(ctx.client())
    total: dict[str, Any] = {"scanned": 0, "scanned_bytes": 0, "rewritten": 0, "secrets": 0}
    total.update(rehomed=0, skipped=0, rules={}, artifact_ids=[])
    after = None
    progress = Progress(None, "read", data_to_stdout=False, quiet=args.quiet)
    while True:  # a page per call: each request is bounded
        page = api.scrub(dry_run=args.dry_run, owner=args.owner, after=after, limit=200)
        progress.advance(page["scanned_bytes"])
        for key in ("scanned", "scanned_bytes", "rewritten", "secrets", "rehomed", "skipped"):
            total[key] += page[key]
        for rule, n in page["rules"].items():
            total["rules"][rule] = total["rules"].get(rule, 0) + n
        total["artifact_ids"] += page["artifact_ids"][: 100 - len(total["artifact_ids"])]
        after = page["next_after"]
        if after is None:
            break
    progress.finish()
    if args.json:
        print(json.dumps({"dry_run": args.dry_run, **total}))
        return 0
    verb = "would rewrite" if args.dry_run else "rewrote"
    rules = ", ".join(f"{rule} {n}" for rule, n in sorted(total["rules"].items()))
    print(
        f"read {total['scanned']} outputs ({format_bytes(total['scanned_bytes'])}); "
        f"{verb} {total['rewritten']} holding {total['secrets']} secrets"
        + (f" ({rules})" if rules else "")
        + (f"; {total['rehomed']} sharing their bytes rewritten too" if total["rehomed"] else "")
        + (f"; {total['skipped']} changed meanwhile, run again" if total["skipped"] else "")
    )
    for artifact_id in total["artifact_ids"]:
        print(artifact_id)
    return 0


def cmd_audit(ctx: CliContext, args: argparse.Namespace) -> int:
    api = ApiCalls(ctx.client())
    if args.artifact:
        api.get(args.artifact)  # a missing id is an error, not an empty log
    entries = api.audit(
        artifact_id=args.artifact, owner=args.owner, action=args.action, limit=args.limit
    )
    if args.json:  # JSON Lines: one event a line
        for e in entries:
            print(json.dumps(e))
        return 0
    for e in entries:
        detail = " ".join(f"{k}={v}" for k, v in e["details"].items())
        at = time_of(e["at"])
        stamp = f"{at.astimezone():%Y-%m-%d %H:%M:%S}" if at else "-"
        print(f"{stamp} {e['actor']:<20} {e['action']:<10} {e['artifact_id'] or '-':<31} {detail}")
    return 0


def cmd_db_upgrade(ctx: CliContext, args: argparse.Namespace) -> int:
    from overspill.artifacts.db.engine import make_engine, upgrade

    settings = ctx.settings.store
    engine = make_engine(settings.resolved_database_url, home=settings.home)
    upgrade(engine)
    engine.dispose()
    print(f"database at {engine.url.render_as_string(hide_password=True)} is up to date")
    return 0


__all__ = ["register", "size"]
