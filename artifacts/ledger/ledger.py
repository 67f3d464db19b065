"""The context ledger: what each output kept out of a model's context, and what
was read back of it afterwards -- counts only, never content.

Two facts are kept. When an output is made, the bytes its maker showed inline
(the ``shown_bytes`` column of the artifacts table, recorded with its end by the executor, or counted
from the reads a harness hook makes to build its view). Every later read
through the store's read paths (a window, lines, a tail, grep, a download) is
counted per artifact, reader, conversation and tool in ``read_backs``, the tool
and conversation taken from the call's ``read_context``.

Counting costs a read nothing it can measure: a read adds to a dict under a
lock; a daemon thread writes the sums once a second, in one transaction (and
``close`` writes what is left). A process that dies loses at most a second of
counts, never an output. ``stats`` answers for a period and an owner (an admin:
any), a harness or a conversation.
"""

from __future__ import annotations

import threading
from collections import Counter
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from overspill.artifacts.context import Part, StoreContext
from overspill.artifacts.db.models import Artifact, ReadBack
from overspill.artifacts.ledger import ledger_stats
from overspill.artifacts.ledger.ledger_stats import ReadCount, Stats
from overspill.artifacts.ledger.read_context import SHOWN, current
from overspill.artifacts.records import Principal, from_row

FLUSH_S = 1.0


_Key = tuple[str, str, str, str]  # artifact, reader, session ("" for none), tool


class Ledger(Part):
    def __init__(self, ctx: StoreContext) -> None:
        super().__init__(ctx)
        self._lock = threading.Lock()
        # One flush at a time: a flush that finds nothing to write returns only
        # once the one in flight (the background thread's) has committed, so an
        # answer that flushes first sees every read noted before it.
        self._flushing = threading.Lock()
        self._reads: dict[_Key, list[Any]] = {}
        self._shown: Counter[str] = Counter()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    # -- counting ----------------------------------------------------------------------

    def note(self, principal: Principal, artifact_id: str, nbytes: int, nlines: int) -> None:
        """A read of ``nbytes`` (``nlines`` lines) of an artifact, as the current
        read context names it (an API call that named nothing: "http")."""
        reading = current()
        tool = reading.tool if reading is not None else "api"
        now = self.clock.now()
        with self._lock:
            if tool == SHOWN:
                self._shown[artifact_id] += nbytes
            else:
                key = (artifact_id, principal.name, (reading and reading.session_id) or "", tool)
                row = self._reads.get(key)
                if row is None:
                    self._reads[key] = [1, nbytes, nlines, now, now]
                else:
                    row[0] += 1
                    row[1] += nbytes
                    row[2] += nlines
                    row[4] = now
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ledger", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(FLUSH_S):
            try:
                self.flush()
            except Exception:
                pass

    def flush(self) -> None:
        """Write the counts gathered so far (one transaction)."""
        with self._flushing:
            self._flush()

    def _flush(self) -> None:
        with self._lock:
            reads, self._reads = self._reads, {}
            shown, self._shown = self._shown, Counter()
        if not reads and not shown:
            return
        try:
            with self._write() as s:
                for artifact_id, n in shown.items():
                    s.execute(
                        update(Artifact)
                        .where(Artifact.id == artifact_id)
                        .values(shown_bytes=func.coalesce(Artifact.shown_bytes, 0) + n)
                    )
                live = _existing(s, {key[0] for key in reads})
                for key, (count, nbytes, nlines, first, last) in reads.items():
                    if key[0] in live:
                        _add(s, key, count, nbytes, nlines, first, last)
        except Exception:
            with self._lock:  # put them back: the next flush tries again
                for key, row in reads.items():
                    mine = self._reads.setdefault(key, [0, 0, 0, row[3], row[4]])
                    mine[0] += row[0]
                    mine[1] += row[1]
                    mine[2] += row[2]
                self._shown.update(shown)
            raise

    def close(self) -> None:
        self._stop.set()
        try:
            self.flush()
        except Exception:
            pass

    # -- answers -------------------------------------------------------------------------

    def reads_of(self, artifact_id: str) -> list[ReadCount]:
        """An artifact's read-backs (the caller checked it may see the artifact)."""
        self.flush()
        with self._read() as s:
            rows = s.execute(
                select(ReadBack)
                .where(ReadBack.artifact_id == artifact_id)
                .order_by(ReadBack.first_at)
            ).scalars()
            return [from_row(ReadCount, r, session_id=r.session_id or None) for r in rows]

    def stats(self, principal: Principal, **query: Any) -> Stats:
        """The sums for a period, an owner, a harness or a conversation
        (``ledger_stats.stats``), the counts of the last second included."""
        self.flush()
        with self._read() as s:
            return ledger_stats.stats(s, principal, **query)


def _existing(s: Session, ids: set[str]) -> set[str]:
    """Which of these artifacts still have a row (a read racing a purge adds none)."""
    if not ids:
        return set()
    return set(s.execute(select(Artifact.id).where(Artifact.id.in_(sorted(ids)))).scalars())


def _add(
    s: Session,
    key: _Key,
    count: int,
    nbytes: int,
    nlines: int,
    first: datetime,
    last: datetime,
) -> None:
    from sqlalchemy.dialects.postgresql import insert as pg_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    insert = pg_insert if s.get_bind().dialect.name == "postgresql" else sqlite_insert
    artifact_id, reader, session_id, tool = key
    stmt = insert(ReadBack).values(
        artifact_id=artifact_id,
        reader=reader,
        session_id=session_id,
        tool=tool,
        reads=count,
        bytes=nbytes,
        lines=nlines,
        first_at=first,
        last_at=last,
    )
    s.execute(
        stmt.on_conflict_do_update(
            index_elements=["artifact_id", "reader", "session_id", "tool"],
            set_={
                "reads": ReadBack.reads + count,
                "bytes": ReadBack.bytes + nbytes,
                "lines": ReadBack.lines + nlines,
                "last_at": last,
            },
        )
    )


__all__ = ["Ledger", "ReadCount", "Stats"]
