"""The client interface behaves the same through both of its implementations:
the store in this process and a server over HTTP (the ``backend`` fixture is
each, on every store backend). Reads are covered where each read is; this file
holds the writes and the lifecycle, and that both are a ``StoreClient``."""

from __future__ import annotations

import pytest

from overspill.api.client.api import StoreClient
from overspill.api.client.http import OverspillClient
from overspill.api.client.in_process import InProcessClient
from overspill.artifacts.errors import Gone, NotFound
from overspill.artifacts.writing.writes import NewArtifact
from overspill.shell import ExecRequest, Executor, ShellSettings

pytestmark = pytest.mark.one_store

GITHUB = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"


def test_both_implementations_are_the_client_interface() -> None:
    # mypy checks these assignments against the Protocol; at run time they pin
    # that neither class was renamed away from it.
    clients: list[type[StoreClient]] = [InProcessClient, OverspillClient]
    assert len(clients) == 2


def test_put_stores_the_bytes_masked_and_reads_them_back(backend: StoreClient) -> None:
    data = f"line one\nexport TOKEN={GITHUB}\nlast\n".encode()
    info = backend.put([data[:20], data[20:]], NewArtifact(name="put.log", session_id="s1"))
    assert (info.name, info.session_id, info.state) == ("put.log", "s1", "complete")
    stored = b"".join(backend.iter_content(info.id))
    assert len(stored) == len(data) and GITHUB.encode() not in stored
    assert stored.startswith(b"line one\nexport TOKEN=ghp_****")
    assert info.source["redactions"]["count"] == 1


def test_pin_retention_and_delete_go_through_either_way(backend: StoreClient) -> None:
    art = backend.put([b"kept\n"], NewArtifact(name="keep"))
    pinned = backend.pin(art.id, reason="evidence")
    assert pinned.pinned and pinned.expires_at is None
    unpinned = backend.unpin(art.id)
    assert not unpinned.pinned and unpinned.expires_at is not None
    retained = backend.set_retention(art.id, 3600)
    assert retained.expires_at is not None
    gone = backend.delete(art.id)
    assert gone.state == "deleted"
    with pytest.raises(Gone):
        list(backend.iter_content(art.id))
    with pytest.raises(NotFound):
        backend.get("art_" + "0" * 26)


def test_run_is_an_executor_over_the_clients_sink(backend: StoreClient) -> None:
    sink = backend.sink(session_id="s2")
    result = Executor(ShellSettings(max_output_bytes=100), sink).run(
        ExecRequest(command="seq 1 5000")
    )
    assert result.stdout.artifact is not None
    info = backend.get(result.stdout.artifact.id)
    assert (info.session_id, info.size_bytes, info.state) == ("s2", 23_893, "complete")
