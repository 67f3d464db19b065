"""The reasons an artifact operation fails, one class per thing a caller can act on.

Each class carries its HTTP status and its wire code, so the server's error map
(``api/server/errors.py``) and the client's (``api/client/wire.py``) are both derived from
this one module instead of two tables kept in step by hand: a class added here
is a status on the server and the same class again at every client.

Standard library only: the CLI's client raises these without loading the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from datetime import datetime


class OverspillError(Exception):
    """Base of every error the store raises on purpose."""

    code: ClassVar[str] = "error"
    status: ClassVar[int] = 500

    def __init_subclass__(cls, *, code: str | None = None, status: int | None = None) -> None:
        """A class names its wire code and its HTTP status where they are not its base's."""
        super().__init_subclass__()
        if code is not None:
            cls.code = code
        if status is not None:
            cls.status = status

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def wire_extra(self) -> dict[str, Any]:
        """Fields the error body carries besides code and message."""
        return {}

    @classmethod
    def from_wire(cls, message: str, body: dict[str, Any]) -> OverspillError:
        """Rebuild the error from its wire body (the inverse of ``wire_extra``)."""
        return cls(message)


class ConfigurationError(OverspillError, code="configuration_error", status=503):
    """A setting is missing, malformed or names something that does not exist."""


class InvalidArgument(OverspillError, code="invalid_argument", status=400):
    """A request value is malformed or out of range (bad id, bad regex, bad window)."""


class InvalidRange(InvalidArgument, code="invalid_range"):
    """A byte or line range is negative, inverted or beyond what is stored."""


class RangeNotSatisfiable(InvalidRange, code="range_not_satisfiable", status=416):
    """An HTTP Range header names no byte that is stored."""


class Unauthorized(OverspillError, code="unauthorized", status=401):
    """No bearer token, or one that is unknown, expired or revoked."""


class NotFound(OverspillError, code="not_found", status=404):
    """No such artifact for this principal (another owner's looks exactly like this)."""


class MethodNotAllowed(OverspillError, code="method_not_allowed", status=405):
    """The path exists but not with this HTTP method."""


class Gone(OverspillError, code="gone", status=410):
    """The artifact existed but its bytes were removed (expired or deleted)."""

    def __init__(self, message: str, *, reason: str, since: datetime | None) -> None:
        super().__init__(message)
        self.reason = reason
        self.since = since

    def wire_extra(self) -> dict[str, Any]:
        return {"reason": self.reason, "since": self.since.isoformat() if self.since else None}

    @classmethod
    def from_wire(cls, message: str, body: dict[str, Any]) -> OverspillError:
        from datetime import datetime

        since = body.get("since")
        try:
            when = datetime.fromisoformat(since) if isinstance(since, str) else None
        except ValueError:
            when = None
        return cls(message, reason=str(body.get("reason") or "gone"), since=when)


class Conflict(OverspillError, code="conflict", status=409):
    """The artifact is not in a state that allows this (appending to a finished one)."""


class OffsetConflict(Conflict, code="offset_conflict"):
    """An append named an offset other than the artifact's current size."""

    def __init__(self, message: str, *, current_size: int) -> None:
        super().__init__(message)
        self.current_size = current_size

    def wire_extra(self) -> dict[str, Any]:
        return {"current_size": self.current_size}

    @classmethod
    def from_wire(cls, message: str, body: dict[str, Any]) -> OverspillError:
        size = body.get("current_size")
        return cls(message, current_size=size if isinstance(size, int) else 0)


# 403, not 413: the request may be one byte; it is the owner's quota that is
# spent. The body's code tells it from a role refusal.
class QuotaExceeded(OverspillError, code="quota_exceeded", status=403):
    """Storing this would take an owner past its byte quota."""

    def __init__(self, message: str, *, room: int = 0) -> None:
        super().__init__(message)
        self.room = room  # the bytes that still fit (a writer stores that prefix)


class PermissionDenied(OverspillError, code="permission_denied", status=403):
    """The principal is known but its role does not allow this operation."""


class StorageUnavailable(OverspillError, code="storage_unavailable", status=503):
    """The blob store or the database could not be reached or refused the operation."""


class DatabaseUnavailable(StorageUnavailable, code="database_unavailable"):
    """The database could not be reached or dropped the connection (a restart, a
    failover): brief, as a rule, so a producer retries a write for a few seconds
    before it gives up (``ArtifactWriter``'s ``retry_s``)."""


class DiskFull(StorageUnavailable, code="disk_full", status=507):
    """The file system that holds the bytes has no space left (or the user's quota
    on it is spent). Named apart from other storage trouble so every answer can say
    so, with where, instead of the symptom a later step meets."""


class TooManyRequests(OverspillError, code="too_many_requests", status=429):
    """The principal already holds as many of these long requests as allowed."""

    def __init__(self, message: str, *, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s

    def wire_extra(self) -> dict[str, Any]:
        return {"retry_after_s": self.retry_after_s}

    @classmethod
    def from_wire(cls, message: str, body: dict[str, Any]) -> OverspillError:
        after = body.get("retry_after_s")
        return cls(message, retry_after_s=after if isinstance(after, int) else 1)


def _all(cls: type[OverspillError]) -> list[type[OverspillError]]:
    found = [cls]
    for sub in cls.__subclasses__():
        found += _all(sub)
    return found


BY_CODE: dict[str, type[OverspillError]] = {
    **{c.code: c for c in _all(OverspillError)},
    # Codes older servers sent for the same things.
    "invalid_request": InvalidArgument,
    "forbidden": PermissionDenied,
}
"""Every wire code and the class it stands for (the client's whole map)."""

_BY_STATUS: dict[int, type[OverspillError]] = {
    c.status: c
    for c in (
        InvalidArgument,
        Unauthorized,
        PermissionDenied,
        NotFound,
        MethodNotAllowed,
        Gone,
        Conflict,
        RangeNotSatisfiable,
        TooManyRequests,
        StorageUnavailable,
    )
}


def error_from_wire(status: int, body: object) -> OverspillError:
    """The error an HTTP error response stands for: its code's class when the
    body is ours, else a StorageUnavailable that says what came back."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict) or not isinstance(err.get("message"), str):
        return StorageUnavailable(f"HTTP {status} from the server without an overspill error body")
    cls = BY_CODE.get(str(err.get("code")))
    if cls is None:  # a code of a newer server: keep its status's meaning
        cls = _BY_STATUS.get(status, OverspillError)
    return cls.from_wire(err["message"], err)
