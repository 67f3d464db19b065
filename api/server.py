"""``overspill serve``: open the store, make sure an admin can get in, run uvicorn.

On a fresh home (no active token at all) it issues an admin token and prints a
ready-to-open URL, as notebook servers do; the token travels in the URL fragment,
which browsers never send to the server, so it does not land in access logs.
"""

from __future__ import annotations

import sys

from overspill.api.app import create_app
from overspill.api.cleanup import PeriodicSweeper
from overspill.api.settings import ClientSettings, ServerSettings
from overspill.artifacts.config import StoreSettings
from overspill.artifacts.store import ArtifactStore


def serve(host: str, port: int) -> int:
    import socket

    import uvicorn

    settings = StoreSettings.load()
    interval = ServerSettings.load().sweep_interval_s  # every setting is checked first
    # Bind before saying where we serve: a port in use is one clear line, and the
    # URL printed is one that answers.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise RuntimeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    store = ArtifactStore.open(settings)
    owner = ClientSettings.load().owner
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    base = f"http://{shown_host}:{port}/"
    if store.tokens.count_active() == 0:
        issued = store.tokens.create(owner, "admin", label="created by overspill serve")
        print(f"overspill: created admin token {issued.info.id} for {owner}", file=sys.stderr)
        print(f"overspill: open {base}#token={issued.token}", file=sys.stderr)
        print(
            f"overspill: or use it from a shell: export OVERSPILL_URL={base} "
            f"OVERSPILL_TOKEN={issued.token}",
            file=sys.stderr,
        )
    else:
        print(
            f"overspill: serving {base} (sign in with a token: overspill token create ...)",
            file=sys.stderr,
        )
    app = create_app(store)
    sweeper = PeriodicSweeper(store, interval) if interval > 0 else None
    if sweeper:
        sweeper.start()
    try:
        config = uvicorn.Config(app, log_level="info", access_log=False)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        if sweeper:
            sweeper.stop()
        store.close()
    return 0
