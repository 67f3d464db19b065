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
    import uvicorn

    settings = StoreSettings.load()
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
    interval = ServerSettings.load().sweep_interval_s
    sweeper = PeriodicSweeper(store, interval) if interval > 0 else None
    if sweeper:
        sweeper.start()
    try:
        uvicorn.run(app, host=host, port=port, log_level="info", access_log=False)
    finally:
        if sweeper:
            sweeper.stop()
        store.close()
    return 0
