"""Words and columns for people: times, exit statuses, the terminal's width."""

from __future__ import annotations

import os
import sys
from datetime import datetime
from typing import Any


def time_of(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def when(moment: datetime | None) -> str:
    """A time as people read it: local, and short when it is today."""
    if moment is None:
        return "never"
    local = moment.astimezone()
    if local.date() == datetime.now().astimezone().date():
        return f"{local:%H:%M:%S}"
    return f"{local:%Y-%m-%d %H:%M}"


def exit_status(src: dict[str, Any]) -> str:
    if src.get("timed_out"):
        return "timeout"
    if src.get("signal"):
        return str(src["signal"]).removeprefix("SIG")
    code = src.get("exit_code")
    return "-" if code is None else str(code)


def terminal_width() -> int:
    """COLUMNS, else the terminal's width, else 100 (as shutil's, without
    importing shutil for every verb)."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError):
        return 100


def table(rows: list[list[str]], *, right: frozenset[int] = frozenset()) -> list[str]:
    """Rows (the first is the header) as aligned columns; the last column is
    left ragged, and the columns in ``right`` are aligned right (numbers)."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for r in rows:
        pairs = enumerate(zip(r[:-1], widths, strict=True))
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in pairs]
        lines.append(" ".join([*cells, r[-1]]).rstrip())
    return lines
