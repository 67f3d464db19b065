"""What ``main`` builds once and hands to every verb: the settings, the way to
the store, and the one place a verb's warnings are printed (click's
``ctx.obj`` is the model).

The way to the store is always the ``/v1`` API through the standard-library
client (``api.client.wire``): a server's when ``OVERSPILL_URL`` is set, else this
home's local server (started on demand; ``api.client.local_server``), else -- when the local
server is turned off or cannot start -- the same app in a thread of this
process, on a private socket. So a verb is written once, and imports neither
the store nor any HTTP library unless it runs the server itself.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..client.wire import WireClient
    from ..settings import Settings

EXIT_ERROR = 1


class CliError(Exception):
    """A problem with how the command was called, reported as one line."""


class CliContext:
    def __init__(self, settings: Settings, argv: list[str]) -> None:
        self.settings = settings
        self.argv = argv  # as given, for printing the command that continues a listing
        self._client: WireClient | None = None
        self._stop_in_process: Callable[[], None] | None = None
        self._warned: set[str] = set()

    def warn(self, message: str) -> None:
        """``overspill: warning: ...`` on stderr, once per message and process."""
        if message not in self._warned:
            self._warned.add(message)
            print(f"overspill: warning: {message}", file=sys.stderr)

    def client(self) -> WireClient:
        """The client every verb talks through (made on first use, then kept)."""
        if self._client is None:
            self._client = self._connect()
        return self._client

    def _connect(self) -> WireClient:
        from ..client.wire import Endpoint, WireClient

        c = self.settings.client
        if c.url:
            return WireClient(Endpoint.parse(c.url), token=c.token, timeout=300)
        from ..client.local_server import (
            PRINCIPAL_HEADER,
            ROLE_HEADER,
            LocalServer,
            LocalServerUnavailable,
        )

        # On this machine the verb acts as whoever owns the home: it sees every owner.
        headers = {PRINCIPAL_HEADER: c.owner, ROLE_HEADER: "admin"}
        if c.local_server:
            try:
                return LocalServer(self.settings).client(c.owner, "admin")
            except LocalServerUnavailable as exc:
                self.warn(f"{exc.message}; working in this process instead")
        from ..server.running import start_in_thread

        endpoint, self._stop_in_process = start_in_thread(self.settings)
        return WireClient(endpoint, headers=headers, timeout=300)

    def artifact_id(self, text: str) -> str:
        """The id of the artifact a person names: its id in any case, as
        ``artifact://art_…`` or with a marker's punctuation around it, or the path
        of the legacy spill file a truncation marker printed (while the store
        still holds that output)."""
        from overspill.artifacts.ids import normalize_artifact_id

        found = normalize_artifact_id(text)
        if found is not None:
            return found
        if "/" in text:
            import os

            from ..client.calls import ApiCalls

            query = {"spill_path": os.path.abspath(text), "include_gone": True, "limit": 1}
            items = ApiCalls(self.client()).list(query).get("items") or []
            if items:
                return str(items[0]["id"])
            raise CliError(
                f"no stored output holds the spill file {text} (or give its id: art_ and "
                "26 letters and digits)"
            )
        raise CliError(
            f"{text[:80]!r} is not an artifact id: art_ and 26 letters and digits (as a "
            "marker prints it, or artifact://art_…), or a spill file's path"
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if "overspill.api.cleanup" in sys.modules:  # a store was opened in this process
            sys.modules["overspill.api.cleanup"].finish_sweeps()
        if self._stop_in_process is not None:
            self._stop_in_process()


Handler = Callable[[CliContext, argparse.Namespace], int]


def handler(args: argparse.Namespace) -> Handler:
    func: Handler = args.func
    return func


def positive(what: str) -> Callable[[str], int]:
    """An argparse type: a whole number >= 1."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{what} takes a whole number >= 1, not {text!r}")
        return value

    return parse


def size(text: str) -> int:
    """An argparse type: a size as people write it (10MB, 1.5GiB)."""
    from overspill.artifacts.units import SIZE_FORMS, parse_size

    try:
        return parse_size(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size ({SIZE_FORMS})") from None


def duration(text: str) -> int:
    """An argparse type: a duration as people write it (3600, 12h, 7d)."""
    from overspill.artifacts.units import DURATION_FORMS, parse_duration

    try:
        return parse_duration(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration ({DURATION_FORMS})") from None


def json_line(data: Any) -> None:
    import json

    print(json.dumps(data))
