"""Time as a dependency, so retention and lease rules are testable without sleeping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol

from overspill.artifacts.errors import InvalidArgument


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to (tests)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2030, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, **kwargs: float) -> None:
        self._now += timedelta(**kwargs)


def as_utc(value: datetime, name: str) -> datetime:
    """In UTC (a naive time is taken as UTC); a time with no UTC form (year 1 at
    +14:00, found by the API fuzz test) is a clear InvalidArgument naming the
    field ``name``, not a 500."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise InvalidArgument(f"{name} {value.isoformat()} is outside the range of dates") from None
