"""The terminal's words and columns: times, exit statuses, the width, tables, and
the trailer a live ``run`` ends with. What a model reads is ``shell.wording``'s."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from overspill.shell.wording import MASKED

if TYPE_CHECKING:
    from datetime import datetime

    from overspill.shell.results import CollectedOutput, ExecResult


# datetime is imported where a time is read or shown: every verb's parser asks
# this module for the terminal's width, and `run` shows no time (1.3 ms).


def time_of(value: str | None) -> datetime | None:
    from datetime import datetime

    return datetime.fromisoformat(value) if value else None


def when(moment: datetime | None) -> str:
    """A time as people read it: local, and short when it is today."""
    if moment is None:
        return "never"
    local = moment.astimezone()
    from datetime import datetime

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


def trailer(result: ExecResult, markers: list[str]) -> str:
    """What follows the live output: per stream that was cut from the model's
    view, its size and where the whole is; then the exit markers."""
    lines = [
        _stream_line(name, out)
        for name, out in (("stdout", result.stdout), ("stderr", result.stderr))
    ]
    return "\n".join([line for line in lines if line] + markers)


def _stream_line(name: str, out: CollectedOutput) -> str | None:
    said: list[str] = []
    if out.redacted:
        said.append(f"{out.redacted}, {MASKED}")
    if out.truncated:
        art = out.artifact
        if out.storage_error or art is None or art.state == "failed":
            reason = (out.storage_error or "no store").splitlines()[0]
            said.append(f"{out.total_bytes} bytes; not stored: {reason}")
        else:
            said.append(f"{out.total_bytes} bytes, stored whole as artifact {art.id}")
            said.append(f"read it again: overspill cat {art.id}")
    return f"[{name}: {'; '.join(said)}]" if said else None
