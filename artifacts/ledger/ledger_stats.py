"""The context ledger's answers: the sums ``stats`` gives for a period, an owner,
a harness or a conversation (SQL sums over the outputs and their read-backs;
the commands grouped over the latest outputs), and the hints where outputs of
a command were read back again and again. The counting is ``artifacts.ledger.ledger``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session

from overspill.artifacts.db.models import Artifact, ReadBack
from overspill.artifacts.errors import PermissionDenied
from overspill.artifacts.records import Principal, _Record

TOKEN_BYTES = 4  # the estimate of bytes per token, said as an estimate wherever shown
COMMAND_ROWS = 10_000  # outputs grouped by command: the latest this many
HINT_READS = 3.0  # read back this often on average: the output was shown too little


class ReadCount(_Record):
    reader: str
    session_id: str | None
    tool: str
    reads: int
    bytes: int
    lines: int
    first_at: datetime
    last_at: datetime


class OutputLine(_Record):
    id: str
    name: str | None
    command: str | None
    created_at: datetime
    total_bytes: int
    shown_bytes: int | None
    read_backs: int
    read_bytes: int


class CommandLine(_Record):
    command: str
    outputs: int
    kept_out_bytes: int
    read_backs: int


class Stats(_Record):
    since: datetime | None
    owner: str | None
    session_id: str | None
    harness: str | None
    outputs: int  # outputs made in the period
    bytes_produced: int
    model_outputs: int  # of those, outputs a model was shown a view of
    bytes_shown: int
    bytes_kept_out: int
    tokens_kept_out_estimate: int  # bytes_kept_out / TOKEN_BYTES: an estimate
    read_backs: int  # reads of those outputs afterwards (the web pages' apart)
    bytes_read_back: int
    outputs_read_back: int
    ui_views: int
    most_read: list[OutputLine]
    commands: list[CommandLine]  # the commands whose outputs overflowed most
    outputs_list: list[OutputLine]  # a conversation's outputs, in order (session_id given)
    hints: list[str]


def stats(
    s: Session,
    principal: Principal,
    *,
    since: datetime | None = None,
    owner: str | None = None,
    session_id: str | None = None,
    harness: str | None = None,
    limit: int = 10,
) -> Stats:
    """The ledger's sums for the outputs made since ``since`` (all: None) of an
    owner (a non-admin: itself, whatever it asks), a conversation or a harness."""
    if owner is not None and owner != principal.name and not principal.is_admin:
        raise PermissionDenied("only an admin sees another owner's figures")
    if not principal.is_admin:
        owner = principal.name
    where: list[Any] = [Artifact.id.is_not(None)]
    if since is not None:
        where.append(Artifact.created_at >= since)
    where += Artifact.equal_to(owner=owner, session_id=session_id, harness=harness)
    cond = and_(*where)
    modelled = Artifact.shown_bytes.is_not(None)
    ui = ReadBack.tool == "ui"
    totals = s.execute(
        select(
            func.count(Artifact.id),
            func.coalesce(func.sum(Artifact.total_bytes), 0),
            func.count(Artifact.shown_bytes),
            func.coalesce(func.sum(Artifact.shown_bytes), 0),
            func.coalesce(
                func.sum(
                    case(
                        (modelled, _kept_out()),
                        else_=0,
                    )
                ),
                0,
            ),
        ).where(cond)
    ).one()
    reads = s.execute(
        select(
            func.coalesce(func.sum(case((ui, 0), else_=ReadBack.reads)), 0),
            func.coalesce(func.sum(case((ui, 0), else_=ReadBack.bytes)), 0),
            func.count(func.distinct(case((ui, None), else_=ReadBack.artifact_id))),
            func.coalesce(func.sum(case((ui, ReadBack.reads), else_=0)), 0),
        )
        .join(Artifact, Artifact.id == ReadBack.artifact_id)
        .where(cond)
    ).one()
    per_output = (
        select(
            ReadBack.artifact_id.label("aid"),
            func.sum(ReadBack.reads).label("n"),
            func.sum(ReadBack.bytes).label("b"),
        )
        .where(ReadBack.tool != "ui")
        .group_by(ReadBack.artifact_id)
        .subquery()
    )
    most = s.execute(
        select(Artifact, per_output.c.n, per_output.c.b)
        .join(per_output, per_output.c.aid == Artifact.id)
        .where(cond)
        .order_by(per_output.c.n.desc(), Artifact.id)
        .limit(limit)
    ).all()
    listed: Sequence[Any] = []
    if session_id is not None:
        listed = s.execute(
            select(Artifact, per_output.c.n, per_output.c.b)
            .outerjoin(per_output, per_output.c.aid == Artifact.id)
            .where(cond)
            .order_by(Artifact.created_at, Artifact.id)
            .limit(500)
        ).all()
    recent = s.execute(
        select(Artifact.source, Artifact.total_bytes, Artifact.shown_bytes, per_output.c.n)
        .outerjoin(per_output, per_output.c.aid == Artifact.id)
        .where(cond, modelled)
        .order_by(Artifact.created_at.desc())
        .limit(COMMAND_ROWS)
    ).all()
    commands = _by_command(recent)
    kept_out = int(totals[4])
    return Stats(
        since=since,
        owner=owner,
        session_id=session_id,
        harness=harness,
        outputs=int(totals[0]),
        bytes_produced=int(totals[1]),
        model_outputs=int(totals[2]),
        bytes_shown=int(totals[3]),
        bytes_kept_out=kept_out,
        tokens_kept_out_estimate=kept_out // TOKEN_BYTES,
        read_backs=int(reads[0]),
        bytes_read_back=int(reads[1]),
        outputs_read_back=int(reads[2]),
        ui_views=int(reads[3]),
        most_read=[_line(row, n, b) for row, n, b in most],
        commands=commands[:limit],
        outputs_list=[_line(row, n, b) for row, n, b in listed],
        hints=_hints(commands),
    )


def _kept_out() -> Any:
    """What a model was not shown of an output (never below zero)."""
    gap = Artifact.total_bytes - func.coalesce(Artifact.shown_bytes, 0)
    return case((gap > 0, gap), else_=0)


def _command(source: dict[str, Any] | None) -> str | None:
    command = (source or {}).get("command")
    if not isinstance(command, str) or not command.strip():
        return None
    return " ".join(command.split())[:200]


def _line(row: Artifact, reads: int | None, nbytes: int | None) -> OutputLine:
    return OutputLine(
        id=row.id,
        name=row.name,
        command=_command(row.source),
        created_at=row.created_at,
        total_bytes=row.total_bytes,
        shown_bytes=row.shown_bytes,
        read_backs=int(reads or 0),
        read_bytes=int(nbytes or 0),
    )


def _by_command(rows: Sequence[Any]) -> list[CommandLine]:
    """Outputs a model was shown a view of, by command, most outputs first."""
    sums: dict[str, list[int]] = {}
    for source, total, shown, reads in rows:
        command = _command(source)
        if command is None:
            continue
        row = sums.setdefault(command, [0, 0, 0])
        row[0] += 1
        row[1] += max(0, int(total) - int(shown or 0))
        row[2] += int(reads or 0)
    ranked = sorted(sums.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
    return [
        CommandLine(command=c, outputs=o, kept_out_bytes=k, read_backs=r) for c, (o, k, r) in ranked
    ]


def _hints(commands: list[CommandLine]) -> list[str]:
    """Commands whose outputs are read back again and again: shown too little."""
    hints = []
    for c in commands:
        if c.outputs >= 2 and c.read_backs / c.outputs >= HINT_READS:
            hints.append(
                f"outputs of `{c.command}` were read back {c.read_backs / c.outputs:.1f} times "
                "each: a larger OVERSPILL_MAX_OUTPUT_BYTES (the bytes shown inline) would "
                "have shown more of them at once"
            )
    return hints[:5]


def since_for(now: datetime, seconds: float | None) -> datetime | None:
    """The start of a period of ``seconds`` ending now (None: all time)."""
    return None if seconds is None else now - timedelta(seconds=seconds)


__all__ = ["CommandLine", "OutputLine", "Stats", "since_for", "stats"]
