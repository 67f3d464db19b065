"""The reasons an artifact operation fails, one class per thing a caller can act on.

The HTTP layer maps these to status codes in one place and the CLI maps them to a
single stderr line in one place; nothing below them should leak a vendor exception.
"""

from __future__ import annotations

from datetime import datetime


class OverspillError(Exception):
    """Base of every error the store raises on purpose."""

    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigurationError(OverspillError):
    """A setting is missing, malformed or names something that does not exist."""

    code = "configuration_error"


class InvalidArgument(OverspillError):
    """A request value is malformed or out of range (bad id, bad regex, bad window)."""

    code = "invalid_argument"


class InvalidRange(InvalidArgument):
    """A byte or line range is negative, inverted or beyond what is stored."""

    code = "invalid_range"


class NotFound(OverspillError):
    """No such artifact for this principal (another owner's looks exactly like this)."""

    code = "not_found"


class Gone(OverspillError):
    """The artifact existed but its bytes were removed (expired or deleted)."""

    code = "gone"

    def __init__(self, message: str, *, reason: str, since: datetime | None) -> None:
        super().__init__(message)
        self.reason = reason
        self.since = since


class Conflict(OverspillError):
    """The artifact is not in a state that allows this (appending to a finished one)."""

    code = "conflict"


class OffsetConflict(Conflict):
    """An append named an offset other than the artifact's current size."""

    code = "offset_conflict"

    def __init__(self, message: str, *, current_size: int) -> None:
        super().__init__(message)
        self.current_size = current_size


class QuotaExceeded(OverspillError):
    """Storing this would take an owner past its byte quota."""

    code = "quota_exceeded"


class PermissionDenied(OverspillError):
    """The principal is known but its role does not allow this operation."""

    code = "permission_denied"


class StorageUnavailable(OverspillError):
    """The blob store or the database could not be reached or refused the operation."""

    code = "storage_unavailable"


class TooManyRequests(OverspillError):
    """The principal already holds as many of these long requests as allowed."""

    code = "too_many_requests"
