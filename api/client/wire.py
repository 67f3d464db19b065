"""The /v1 API on the wire: a small HTTP/1.1 client on the standard library.

Every CLI verb and the executor's remote and local sinks talk to a server
through this module, over a Unix socket (the local server in ``OVERSPILL_HOME``)
or TCP (``OVERSPILL_URL``). It is written on ``socket`` alone because a verb
runs once per agent command: ``http.client`` pulls in the ``email`` package and
``urllib.parse`` (together ~30 ms here, more than the interpreter's own start),
and the CLI must cost little more than that start.

What it does: one keep-alive connection per client, TCP_NODELAY (a small
request never waits on Nagle and delayed ACKs), requests with a body of bytes
or a stream of chunks (sent with chunked transfer coding), responses read by
Content-Length, chunked coding or to the connection's close, each body read in
bounded pieces. An error response becomes the store's own exception class
(``artifacts.errors``), so a caller handles a server exactly as the store.
A URL's userinfo (``http://user:secret@host``) is never shown in a message.

About 460 lines because an HTTP/1.1 exchange is one protocol: framing a request
(a body of bytes or chunks), reading a response (by length, chunks or close),
retrying once on a kept-alive connection the server closed, and turning an
error body into its exception are checked best side by side.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple, Self

from overspill.artifacts.errors import (
    InvalidArgument,
    OverspillError,
    StorageUnavailable,
    error_from_wire,
)
from overspill.artifacts.ledger.read_context import headers as reading_headers

_READ = 256 * 1024
_MAX_HEADER = 64 * 1024
_MAX_ERROR_BODY = 1024 * 1024
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def quote(text: str, safe: bytes = b"") -> str:
    """Percent-encode ``text`` as UTF-8 (RFC 3986 unreserved characters stay)."""
    keep = _SAFE | frozenset(safe)
    return "".join(chr(b) if b in keep else f"%{b:02X}" for b in text.encode())


def query_string(params: Mapping[str, Any] | None) -> str:
    """``?a=1&b=true`` from a mapping; None values are left out, booleans are
    ``true``/``false`` (what FastAPI reads), lists repeat the name."""
    if not params:
        return ""
    parts = []
    for key, value in params.items():
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            if v is None:
                continue
            if isinstance(v, bool):
                v = "true" if v else "false"
            elif hasattr(v, "isoformat"):
                v = v.isoformat()
            parts.append(f"{quote(str(key))}={quote(str(v))}")
    return ("?" + "&".join(parts)) if parts else ""


class Endpoint(NamedTuple):
    """Where a server listens: a Unix socket path, or a host and port (TLS for
    https). ``shown`` is the address as messages print it (no userinfo)."""

    shown: str
    unix_path: str | None = None
    host: str = ""
    port: int = 0
    tls: bool = False
    base_path: str = ""

    @classmethod
    def unix(cls, path: str) -> Endpoint:
        return cls(shown=f"local server ({path})", unix_path=path)

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        """An ``http://`` or ``https://`` URL; the userinfo, if any, is dropped
        from what is shown (it is not sent either: tokens go in a header)."""
        scheme, sep, rest = url.partition("://")
        scheme = scheme.lower()
        if not sep or scheme not in ("http", "https"):
            raise InvalidArgument(
                f"OVERSPILL_URL must start with http:// or https:// (got {_hide(url)!r})"
            )
        authority, slash, path = rest.partition("/")
        authority = authority.rpartition("@")[2]
        host, port_s = authority, ""
        if authority.startswith("["):  # [::1]:8765
            host, _, tail = authority[1:].partition("]")
            port_s = tail.removeprefix(":")
        elif authority.count(":") == 1:
            host, port_s = authority.split(":")
        if not host:
            raise InvalidArgument(f"OVERSPILL_URL has no host: {_hide(url)!r}")
        try:
            port = int(port_s) if port_s else (443 if scheme == "https" else 80)
        except ValueError:
            raise InvalidArgument(f"OVERSPILL_URL has a bad port: {_hide(url)!r}") from None
        base = ("/" + path).rstrip("/") if slash else ""
        netloc = f"[{host}]" if ":" in host else host
        shown = f"{scheme}://{netloc}{'' if port_s == '' else ':' + str(port)}{base}"
        return cls(shown=shown, host=host, port=port, tls=scheme == "https", base_path=base)


def _hide(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    return f"{scheme}{sep}{authority}{slash}{path}"


class Response:
    """A response whose body is read on demand, in bounded pieces."""

    def __init__(self, conn: _Connection, status: int, headers: dict[str, str]) -> None:
        self._conn = conn
        self.status = status
        self.headers = headers
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        self._left: int | None = int(length) if length is not None and not self._chunked else None
        self._chunk_left = 0
        self._done = status in (204, 304) or self._left == 0
        self._to_close = not self._chunked and self._left is None and not self._done

    def iter_bytes(self) -> Iterator[bytes]:
        while True:
            piece = self.read_some()
            if not piece:
                return
            yield piece

    def read_some(self) -> bytes:
        """Up to 256 KiB of the body; b"" at its end."""
        if self._done:
            return b""
        conn = self._conn
        if self._chunked:
            if not self._chunk_left:
                size_line = conn.read_line()
                try:
                    self._chunk_left = int(size_line.split(b";", 1)[0].strip() or b"x", 16)
                except ValueError:
                    raise conn.broken("a malformed chunk size") from None
                if not self._chunk_left:
                    while conn.read_line() not in (b"", b"\r\n", b"\n"):  # trailers
                        pass
                    self._finish()
                    return b""
            data = conn.read_up_to(min(self._chunk_left, _READ))
            if not data:
                raise conn.broken("the connection closed inside a chunk")
            self._chunk_left -= len(data)
            if not self._chunk_left:
                conn.read_line()  # the CRLF after the chunk
            return data
        want = _READ if self._left is None else min(self._left, _READ)
        data = conn.read_up_to(want)
        if self._left is not None:
            if not data:
                raise conn.broken("the connection closed before the whole body arrived")
            self._left -= len(data)
            if not self._left:
                self._finish()
        elif not data:
            self._finish()
        return data

    def read(self, limit: int | None = None) -> bytes:
        """The whole body (at most ``limit`` bytes are kept; the rest is read and
        dropped so the connection stays usable)."""
        parts: list[bytes] = []
        kept = 0
        while piece := self.read_some():
            if limit is None or kept < limit:
                parts.append(piece)
                kept += len(piece)
        body = b"".join(parts)
        return body if limit is None else body[:limit]

    def json(self) -> Any:
        body = self.read()
        try:
            return json.loads(body)
        except ValueError:
            raise StorageUnavailable(
                f"{self._conn.endpoint.shown} answered HTTP {self.status} with a body that is "
                "not JSON"
            ) from None

    def close(self) -> None:
        """Stop reading: the connection is dropped unless the body was read."""
        if not self._done:
            self._conn.drop()
            self._done = True

    def _finish(self) -> None:
        self._done = True
        if self._to_close or self.headers.get("connection", "").lower() == "close":
            self._conn.drop()


class _Connection:
    """One socket to the endpoint, with a read buffer."""

    def __init__(self, endpoint: Endpoint, timeout: float) -> None:
        self.endpoint = endpoint
        self._timeout = timeout
        self._sock: socket.socket | None = None
        self._buf = b""

    @property
    def open(self) -> bool:
        return self._sock is not None

    def connect(self) -> None:
        ep = self.endpoint
        try:
            if ep.unix_path is not None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(self._timeout)
                try:
                    sock.connect(ep.unix_path)
                except BaseException:
                    sock.close()
                    raise
            else:
                sock = socket.create_connection((ep.host, ep.port), timeout=self._timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if ep.tls:
                    import ssl  # only for https

                    sock = ssl.create_default_context().wrap_socket(sock, server_hostname=ep.host)
        except OSError as exc:
            raise Unreachable(f"{ep.shown} unreachable: {_reason(exc)}") from exc
        self._sock = sock
        self._buf = b""

    def send(self, data: bytes) -> None:
        assert self._sock is not None
        try:
            self._sock.sendall(data)
        except OSError as exc:
            self.drop()
            raise Unreachable(f"{self.endpoint.shown}: connection lost: {_reason(exc)}") from exc

    def _fill(self) -> bytes:
        assert self._sock is not None
        try:
            data = self._sock.recv(_READ)
        except OSError as exc:
            self.drop()
            raise Unreachable(f"{self.endpoint.shown}: connection lost: {_reason(exc)}") from exc
        return data

    def read_line(self) -> bytes:
        while b"\n" not in self._buf:
            if len(self._buf) > _MAX_HEADER:
                raise self.broken("a header line that never ends")
            data = self._fill()
            if not data:
                line, self._buf = self._buf, b""
                return line
            self._buf += data
        line, _, self._buf = self._buf.partition(b"\n")
        return line + b"\n"

    def read_up_to(self, n: int) -> bytes:
        if not self._buf:
            self._buf = self._fill()
        data, self._buf = self._buf[:n], self._buf[n:]
        return data

    def broken(self, what: str) -> StorageUnavailable:
        self.drop()
        return StorageUnavailable(f"{self.endpoint.shown} sent {what}")

    def drop(self) -> None:
        sock, self._sock = self._sock, None
        self._buf = b""
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass


class Unreachable(StorageUnavailable):
    """The server could not be reached, or the connection broke mid-request."""


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


Body = bytes | Iterable[bytes] | None


class ClosedOnExit:
    """``with client:`` closes the client when the block ends."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class WireClient(ClosedOnExit):
    """Requests to one server, as one caller (a bearer token, or on the local
    server's socket the principal the socket's owner acts as)."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.endpoint = endpoint
        self._headers = dict(headers or {})
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._conn = _Connection(endpoint, timeout)
        self._active: Response | None = None

    def with_headers(self, headers: Mapping[str, str]) -> WireClient:
        """Another client for the same server with more headers (its own connection)."""
        other = WireClient(self.endpoint, timeout=self._conn._timeout)
        other._headers = {**self._headers, **headers}
        return other

    def close(self) -> None:
        self._conn.drop()

    # -- requests ----------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        body: Body = None,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        """Send a request and read the status line and headers. An error status
        raises its store error; the caller reads (or closes) a 2xx body."""
        if self._active is not None:  # an unread body of the last request
            self._active.close()
            self._active = None
        extra = dict(headers or {})
        if json_body is not None:
            body = json.dumps(json_body).encode()
            extra.setdefault("Content-Type", "application/json")
        target = self.endpoint.base_path + path + query_string(params)
        # A request on a reused connection that the server closed meanwhile (its
        # keep-alive ran out) is sent again once, if its body can be sent again.
        replayable = body is None or isinstance(body, bytes)
        for attempt in (0, 1):
            reused = self._conn.open
            if not reused:
                self._conn.connect()
            try:
                self._send(method, target, body, extra)
                response = self._read_head()
            except Unreachable:
                if reused and replayable and attempt == 0:
                    continue
                raise
            break
        if response.status >= 400:
            try:
                data = json.loads(response.read(_MAX_ERROR_BODY) or b"null")
            except ValueError:
                data = None
            raise error_from_wire(response.status, data)
        self._active = response
        return response

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.request(method, path, **kwargs)
        self._active = None
        return response.json()

    def stream(self, method: str, path: str, **kwargs: Any) -> Iterator[bytes]:
        """The response body in bounded pieces (the request is sent at once)."""
        response = self.request(method, path, **kwargs)
        return self._pieces(response)

    def _pieces(self, response: Response) -> Iterator[bytes]:
        try:
            yield from response.iter_bytes()
        finally:
            response.close()
            if self._active is response:
                self._active = None

    def _send(self, method: str, target: str, body: Body, extra: Mapping[str, str]) -> None:
        ep = self.endpoint
        host = "localhost" if ep.unix_path is not None else ep.host
        if ep.port and ep.port not in (80, 443):
            host = f"{host}:{ep.port}"
        head = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Accept: application/json"]
        # (Which tool reads, for the server's context ledger: read_context.)
        for name, value in {**self._headers, **reading_headers(), **extra}.items():
            head.append(f"{name}: {value}")
        if body is None:
            if method in ("POST", "PUT", "PATCH"):
                head.append("Content-Length: 0")
            self._conn.send(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        elif isinstance(body, bytes):
            head.append(f"Content-Length: {len(body)}")
            self._conn.send(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        else:
            head.append("Transfer-Encoding: chunked")
            self._conn.send(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
            for chunk in body:
                if chunk:
                    self._conn.send(b"%x\r\n" % len(chunk) + bytes(chunk) + b"\r\n")
            self._conn.send(b"0\r\n\r\n")

    def _read_head(self) -> Response:
        conn = self._conn
        while True:
            line = conn.read_line()
            if not line:
                conn.drop()
                raise Unreachable(f"{self.endpoint.shown}: the server closed the connection")
            parts = line.split(None, 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
                raise conn.broken("a response that is not HTTP")
            try:
                status = int(parts[1])
            except ValueError:
                raise conn.broken("a malformed status line") from None
            headers: dict[str, str] = {}
            while True:
                h = conn.read_line()
                if h in (b"\r\n", b"\n", b""):
                    break
                name, _, value = h.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            if status != 100:  # 100 Continue: the real answer follows
                return Response(conn, status, headers)


__all__ = [
    "Endpoint",
    "OverspillError",
    "Response",
    "Unreachable",
    "WireClient",
    "query_string",
    "quote",
]
