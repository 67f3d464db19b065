"""A search across big outputs greps them ahead in worker processes: its answers
are the serial search's, call for call, whatever bound cuts a call short; a
worker that dies costs nothing but time; and no worker outlives the store or
the process that started it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from overspill.artifacts.config import StoreSettings
from overspill.artifacts.grep.search_pool import Lookahead, SearchPool, _Worker
from overspill.artifacts.queries import SearchQuery
from overspill.artifacts.records import GrepResult, Principal, SearchResult
from overspill.artifacts.store import ArtifactStore
from tests.helpers import ALICE, wait_until

pytestmark = pytest.mark.one_store  # the workers read local blobs only

MiB = 1024 * 1024


def _log(size: int, seed: int, dense: bool) -> bytes:
    """``size`` bytes of lines; ECONNREFUSED on every 50th line of a dense output,
    on one line in 20,000 otherwise (a few a output)."""
    every = 50 if dense else 20_000
    lines, n = [], 0
    total = 0
    while total < size:
        word = b"ECONNREFUSED 10.0.0.%d" % (n % 250) if n % every == seed % every else b"ok"
        line = b"%d worker-%d %s\n" % (n, seed, word)
        lines.append(line)
        total += len(line)
        n += 1
    return b"".join(lines)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve outputs, 24 MiB in all (a page worth sending to workers), written once."""
    path = tmp_path_factory.mktemp("pool")
    store = ArtifactStore.open(StoreSettings(home=str(path), search_workers=1))
    for i in range(12):
        with store.open_writer(ALICE, session_id="s", source={"command": f"job {i}"}) as w:
            w.write(_log(2 * MiB, i, dense=i % 4 == 0))
    store.close()
    return path


def _open(home: Path, workers: int) -> ArtifactStore:
    return ArtifactStore.open(StoreSettings(home=str(home), search_workers=workers))


@pytest.fixture
def pooled(home: Path) -> Iterator[ArtifactStore]:
    """A store whose workers are up (the first search starts them)."""
    store = _open(home, 2)
    store.search(ALICE, SearchQuery(pattern="ECONNREFUSED"))
    pool = store.reader.search_pool
    assert pool is not None
    assert wait_until(lambda: pool.up() == 2), "the workers did not start"
    yield store
    store.close()


def _walk(store: ArtifactStore, who: Principal, query: SearchQuery) -> list[SearchResult]:
    calls, cursor = [], None
    for _ in range(1_000):
        res = store.search(who, query.model_copy(update={"cursor": cursor}))
        calls.append(res)
        cursor = res.next_cursor
        if cursor is None:
            return calls
    raise AssertionError("the walk did not end")


def _taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The outputs whose answers came from a worker (recorded as they are taken)."""
    taken: list[str] = []
    keep = Lookahead.take

    def spy(self: Lookahead, matches_left: int, scan_left: int) -> GrepResult | None:
        found = keep(self, matches_left, scan_left)
        if found is not None:
            taken.append(found.artifact_id)
        return found

    monkeypatch.setattr(Lookahead, "take", spy)
    return taken


@pytest.mark.parametrize(
    "query",
    [
        SearchQuery(pattern="ECONNREFUSED"),  # default bounds: cut by max_matches
        SearchQuery(pattern="ECONNREFUSED", max_matches=1000, max_scan_bytes=5 * MiB),
        SearchQuery(pattern=r"10\.0\.0\.(1|2)[0-9]?$", max_matches=7),
        SearchQuery(pattern="econnrefused 10.0.0.3", ignore_case=True, max_matches=1000),
        SearchQuery(pattern="NOWHERE", max_scan_bytes=3 * MiB),
    ],
    ids=["matches", "scan_bytes", "regex", "ignore_case", "no_match"],
)
def test_a_walk_with_workers_is_the_serial_walk_call_for_call(
    home: Path, pooled: ArtifactStore, query: SearchQuery, monkeypatch: pytest.MonkeyPatch
) -> None:
    serial = _open(home, 1)
    try:
        expected = _walk(serial, ALICE, query)
    finally:
        serial.close()
    taken = _taken(monkeypatch)
    got = _walk(pooled, ALICE, query)
    assert [r.model_dump() for r in got] == [r.model_dump() for r in expected]
    assert taken, "no answer came from a worker"


def test_another_owner_sees_nothing_through_the_workers(pooled: ArtifactStore) -> None:
    bob = Principal(name="agent:bob", role="agent")
    res = pooled.search(bob, SearchQuery(pattern="ECONNREFUSED"))
    assert res.matches == 0 and res.groups == [] and res.artifacts_searched == 0


def test_workers_killed_mid_walk_cost_time_not_answers(
    home: Path, pooled: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = SearchQuery(pattern="ECONNREFUSED", max_matches=1000)
    serial = _open(home, 1)
    try:
        expected = [r.model_dump() for r in _walk(serial, ALICE, query)]
    finally:
        serial.close()
    pool = pooled.reader.search_pool
    assert pool is not None
    lend = pool.checkout

    def lend_dead() -> list[_Worker]:  # the workers die as a search takes them
        workers = lend()
        for w in workers:
            w.proc.kill()
            w.proc.wait()
        return workers

    monkeypatch.setattr(pool, "checkout", lend_dead)
    assert [r.model_dump() for r in _walk(pooled, ALICE, query)] == expected
    monkeypatch.undo()
    # The dead are replaced: a search starts new workers, and later ones use them.
    pooled.search(ALICE, query)
    assert wait_until(lambda: pool.up() == 2)
    taken = _taken(monkeypatch)
    assert [r.model_dump() for r in _walk(pooled, ALICE, query)] == expected
    assert taken


def test_closing_the_store_stops_its_workers(home: Path) -> None:
    store = _open(home, 2)
    store.search(ALICE, SearchQuery(pattern="x"))
    pids = _worker_pids()
    assert len(pids) == 2
    store.close()
    assert wait_until(lambda: not _alive(pids), timeout=10)


def test_the_workers_end_with_a_killed_parent(home: Path, tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, sys, time
        from overspill.artifacts.config import StoreSettings
        from overspill.artifacts.queries import SearchQuery
        from overspill.artifacts.store import ArtifactStore
        from tests.helpers import ALICE
        store = ArtifactStore.open(StoreSettings(home={str(home)!r}, search_workers=2))
        store.search(ALICE, SearchQuery(pattern="x"))
        print("started", flush=True)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline() == b"started\n"
        pids = _worker_pids(parent.pid)
        assert len(pids) == 2
    finally:
        parent.kill()
        parent.wait()
    assert wait_until(lambda: not _alive(pids), timeout=10), "a worker outlived its parent"


def test_a_worker_gets_no_setting_or_credential_of_its_parent(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "do-not-pass-me")
    monkeypatch.setenv("OVERSPILL_TOKEN", "ovs_not_for_workers")
    store = _open(home, 2)
    try:
        store.search(ALICE, SearchQuery(pattern="x"))
        pids = _worker_pids()
        assert len(pids) == 2
        for pid in pids:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            names = {item.split(b"=", 1)[0] for item in env if item}
            assert not names & {b"AWS_SECRET_ACCESS_KEY", b"OVERSPILL_TOKEN"}, names
    finally:
        store.close()


def test_a_pool_not_yet_up_lends_no_worker(tmp_path: Path) -> None:
    pool = SearchPool((tmp_path / "blobs").as_uri(), 2)
    try:
        assert pool.checkout() == []  # starts them, waits for none
    finally:
        pool.close()


def _worker_pids(parent: int | None = None) -> list[int]:
    """The search workers started by ``parent`` (this process by default)."""
    ppid = os.getpid() if parent is None else parent
    out = subprocess.run(
        ["pgrep", "-P", str(ppid), "-f", "overspill.artifacts.grep.search_worker"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return [int(p) for p in out.split()]


def _alive(pids: list[int]) -> bool:
    alive = False
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        # A zombie (exited, not yet reaped by a parent that is gone) is dead.
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        alive = alive or state != "Z"
    return alive


def test_the_default_count_of_workers_follows_the_cores_where_affinity_is_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from overspill.artifacts.grep import search_pool

    assert search_pool.cores() >= 1
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # as on macOS
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert search_pool.cores() == 3
