"""API tokens: random secrets shown once, stored only as their SHA-256.

A token maps to a principal and a role; it may expire and can be revoked. Lookups
hash the presented secret and compare hashes, so the table never holds anything
that could be replayed.

A **ticket** is a short-lived capability derived from a token for one scope (one
artifact's content), for places that cannot send an Authorization header: a
browser download link. It is ``<token id>.<expiry>.<HMAC>`` keyed with the
token's stored hash, so every API process can check it without shared state,
and revoking the token (or letting it expire) kills its tickets too.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from overspill.artifacts.bounds import (
    MAX_OWNER_CHARS,
    MAX_TOKEN_LABEL_CHARS,
    MAX_TOKEN_LIFETIME_S,
    TOKEN_CACHE_S,
)
from overspill.artifacts.catalog import audit
from overspill.artifacts.clock import Clock
from overspill.artifacts.db.models import ApiToken, ServerKey
from overspill.artifacts.db.unit import Database
from overspill.artifacts.errors import InvalidArgument, NotFound
from overspill.artifacts.records import Principal, Role

TOKEN_PREFIX = "ovs_"
MAX_TICKET_S = 3600
_LAST_USED_RESOLUTION = timedelta(seconds=60)  # avoid a write on every request
# How long this process trusts what it last read of a token. A request then
# costs a hash and a dict lookup, not a query; a token revoked elsewhere (another
# API process) stops working here within this many seconds.
CACHE_S = TOKEN_CACHE_S
_CACHE_MAX = 10_000


class TokenInfo(BaseModel):
    """A token as listed (never its secret); read from its row's attributes."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    id: str
    principal: str
    role: str
    label: str | None
    created_at: datetime
    created_by: str | None
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None


class NewToken(BaseModel):
    """A token to issue: for whom, in which role, for how long. The one
    statement of a valid request (the admin route's body is this model)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    principal: str = Field(
        min_length=1,
        max_length=MAX_OWNER_CHARS,
        pattern=r"^\S+$",
        description="e.g. agent:ci-bot or user:alice",
    )
    role: Role = "agent"
    label: str | None = Field(default=None, max_length=MAX_TOKEN_LABEL_CHARS)
    expires_in_s: int | None = Field(default=None, gt=0, le=MAX_TOKEN_LIFETIME_S)

    @classmethod
    def checked(cls, **fields: Any) -> NewToken:
        """One from a caller's values (a setting, not a request body): a bad
        one is InvalidArgument naming the field, as a body's is a 400, so a
        command says it in one line."""
        try:
            return cls(**fields)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(part) for part in err["loc"])
            rule = _RULES.get(field, err["msg"])
            raise InvalidArgument(f"token {field} {fields.get(field)!r}: {rule}") from None


_RULES = {"principal": "1-200 characters without spaces, e.g. agent:ci-bot or user:alice"}


class IssuedToken(BaseModel):
    model_config = ConfigDict(frozen=True)

    token: str
    info: TokenInfo


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


_TICKET = re.compile(r"[A-Za-z0-9_]{1,64}\.[0-9]{1,12}\.[A-Za-z0-9_-]{1,128}\Z")


def _usable(row: ApiToken | None, now: datetime) -> bool:
    """The token exists, is not revoked and has not expired."""
    if row is None or row.revoked_at is not None:
        return False
    return row.expires_at is None or row.expires_at > now


def _ticket_mac(key: str, token_id: str, expires: int, scope: str) -> str:
    message = f"{token_id}|{expires}|{scope}".encode()
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()


def _info(row: ApiToken) -> TokenInfo:
    return TokenInfo.model_validate(row)


class TokenStore:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._server_secret: str | None = None
        self._clock = clock
        # digest -> (principal or None, remembered until (monotonic), token expiry)
        self._cache: dict[str, tuple[Principal | None, float, datetime | None]] = {}

    def cached(self, secret: str) -> tuple[bool, Principal | None]:
        """(known, principal) from this process's short-lived memory of the token;
        no I/O, so the server can answer a flood of requests on its event loop."""
        hit = self._cache.get(_digest(secret))
        if hit is None or hit[1] < time.monotonic():
            return False, None
        if hit[2] is not None and hit[2] <= self._clock.now():
            return False, None  # expired since: ask the database again
        return True, hit[0]

    def create(self, new: NewToken, *, created_by: str | None = None) -> IssuedToken:
        principal, role, label, expires_in_s = new.principal, new.role, new.label, new.expires_in_s
        now = self._clock.now()
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = ApiToken(
            id="tok_" + secrets.token_hex(8),
            token_sha256=_digest(secret),
            principal=principal,
            role=role,
            label=label,
            created_at=now,
            created_by=created_by,
            expires_at=now + timedelta(seconds=expires_in_s) if expires_in_s else None,
        )
        with self._db.write() as s:
            s.add(row)
            # The secret never reaches the log; who made which token for whom does.
            audit.record(
                s,
                now,
                created_by or principal,
                "token_create",
                owner=principal,
                token_id=row.id,
                role=role,
                label=label,
            )
        return IssuedToken(token=secret, info=_info(row))

    def authenticate(self, secret: str) -> Principal | None:
        """The principal behind a presented secret, or None if unknown/expired/revoked."""
        if not secret.startswith(TOKEN_PREFIX) or not (secret.isascii() and secret.isprintable()):
            return None
        principal, expires = self._authenticate(secret)
        if len(self._cache) >= _CACHE_MAX:
            self._cache.clear()
        self._cache[_digest(secret)] = (principal, time.monotonic() + CACHE_S, expires)
        return principal

    def _authenticate(self, secret: str) -> tuple[Principal | None, datetime | None]:
        now = self._clock.now()
        with self._db.read() as s:
            row = s.execute(
                select(ApiToken).where(ApiToken.token_sha256 == _digest(secret))
            ).scalar_one_or_none()
            if not _usable(row, now):
                return None, None
            assert row is not None
            principal = Principal(name=row.principal, role=row.role)  # type: ignore[arg-type]
            stale = row.last_used_at is None or now - row.last_used_at > _LAST_USED_RESOLUTION
            token_id, expires = row.id, row.expires_at
        if stale:
            with self._db.write() as s:
                tok = s.get(ApiToken, token_id)
                if tok is not None:
                    tok.last_used_at = now
        return principal, expires

    def ticket(self, secret: str, scope: str, ttl_s: int) -> tuple[str, datetime]:
        """A ticket for ``scope`` that acts as the token's principal for ``ttl_s``."""
        if not 0 < ttl_s <= MAX_TICKET_S:
            raise InvalidArgument(f"ticket lifetime must be 1..{MAX_TICKET_S} seconds")
        with self._db.read() as s:
            row = s.execute(
                select(ApiToken).where(ApiToken.token_sha256 == _digest(secret))
            ).scalar_one_or_none()
            if row is None:
                raise NotFound("token not found")
            expires = int(self._clock.now().timestamp()) + ttl_s
            token_id, token_hash = row.id, row.token_sha256
        mac = _ticket_mac(self._ticket_key(token_hash), token_id, expires, scope)
        return f"{token_id}.{expires}.{mac}", datetime.fromtimestamp(expires, UTC)

    def _ticket_key(self, token_hash: str) -> str:
        """The HMAC key of a ticket: the server's own secret and the token's hash.
        The hash alone would let whoever reads the api_tokens table mint tickets;
        the secret alone would not end a ticket when its token is revoked."""
        if self._server_secret is None:
            self._server_secret = self._load_server_secret()
        return self._server_secret + token_hash

    def _load_server_secret(self) -> str:
        with self._db.read() as s:
            row = s.get(ServerKey, "tickets")
            if row is not None:
                return row.secret
        try:
            with self._db.write() as s:
                if s.get(ServerKey, "tickets") is None:  # the write lock is held
                    s.add(
                        ServerKey(
                            name="tickets",
                            secret=secrets.token_urlsafe(48),
                            created_at=self._clock.now(),
                        )
                    )
        except IntegrityError:
            pass  # another process made it first (PostgreSQL): use theirs
        with self._db.read() as s:
            made = s.get(ServerKey, "tickets")
            assert made is not None
            return made.secret

    def redeem(self, ticket: str, scope: str) -> Principal | None:
        """The principal a ticket acts for, or None if forged, expired, for another
        scope, or its token is revoked or expired."""
        if len(ticket) > 200 or not _TICKET.match(ticket):
            return None  # (a NUL or any odd byte never reaches the database)
        parts = ticket.split(".")
        token_id, expires_s, mac = parts[0], int(parts[1]), parts[2]
        now = self._clock.now()
        if expires_s <= now.timestamp():
            return None
        with self._db.read() as s:
            row = s.get(ApiToken, token_id)
            if not _usable(row, now):
                return None
            assert row is not None
            expected = _ticket_mac(self._ticket_key(row.token_sha256), row.id, expires_s, scope)
            if not hmac.compare_digest(expected, mac):
                return None
            return Principal(name=row.principal, role=row.role)  # type: ignore[arg-type]

    def list(self) -> list[TokenInfo]:
        with self._db.read() as s:
            rows = s.execute(select(ApiToken).order_by(ApiToken.created_at)).scalars().all()
        return [_info(r) for r in rows]

    def revoke(self, token_id: str, *, by: str | None = None) -> TokenInfo:
        with self._db.write() as s:
            row = s.get(ApiToken, token_id)
            if row is None:
                raise NotFound(f"token {token_id} not found")
            self._cache.pop(row.token_sha256, None)
            if row.revoked_at is None:
                row.revoked_at = self._clock.now()
                audit.record(
                    s,
                    row.revoked_at,
                    by or "local",
                    "token_revoke",
                    owner=row.principal,
                    token_id=row.id,
                )
            return _info(row)

    def count_active(self) -> int:
        with self._db.read() as s:
            return int(
                s.execute(
                    select(func.count()).select_from(ApiToken).where(ApiToken.revoked_at.is_(None))
                ).scalar_one()
            )
