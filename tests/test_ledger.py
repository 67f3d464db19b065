"""The context ledger: what each output showed a model inline, what was read
back of it afterwards (by tool and conversation), and the sums ``stats`` gives
-- exact against a scripted session, owner-scoped, gone with the output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from overspill.api.agent.tools import ArtifactTools
from overspill.api.client.in_process import InProcessClient
from overspill.artifacts.errors import NotFound, PermissionDenied
from overspill.artifacts.records import Principal
from overspill.artifacts.store import ArtifactStore
from overspill.shell import ExecRequest, Executor, ShellSettings, StoreSink
from overspill.shell.wording import find_calls
from tests.api_helpers import make_api
from tests.helpers import ADMIN, ALICE, BOB, cli_env, run_cli

AGENT = Principal(name="agent:claude-code", role="agent")
SEQ = b"".join(b"%d\n" % n for n in range(1, 100_001))


def _session(store: ArtifactStore, session: str) -> tuple[str, int, ArtifactTools]:
    """A command that overflows in a conversation, as the MCP bash tool makes it."""
    sink = StoreSink(store, AGENT, session_id=session)
    ex = Executor(ShellSettings(max_output_bytes=4_000, grace_ms=300, legacy_spill=False), sink)
    result = ex.run(ExecRequest(command="seq 1 100000"))
    art = result.stdout.artifact
    assert art is not None and art.state == "complete"
    tools = ArtifactTools(InProcessClient(store, AGENT), session_id=session)
    return art.id, len(result.stdout.text.encode()), tools


def test_a_scripted_session_is_counted_exactly(store: ArtifactStore) -> None:
    art, shown, tools = _session(store, "conv-1")
    assert store.get(AGENT, art).shown_bytes == shown  # what the model was shown inline
    # The model reads on as the view says, greps, and reads a window.
    view_calls = find_calls(str(tools.handle("artifact_read", {"id": art, "tail_lines": 10}).text))
    assert view_calls
    window = tools.handle("artifact_read", {"id": art, "offset": 0, "limit": 1_000})
    grep = tools.handle("artifact_grep", {"id": art, "pattern": "^9999[0-9]$"})
    assert not window.is_error and not grep.is_error
    store.ledger.flush()
    reads = {r.tool: r for r in store.reads_of(AGENT, art)}
    assert set(reads) == {"artifact_read", "artifact_grep"}
    assert all(r.session_id == "conv-1" and r.reader == AGENT.name for r in reads.values())
    read = reads["artifact_read"]
    assert read.reads == 2
    # The tail: its last 10 lines; the window: bytes 0-1000, lines 1-277 whole.
    tail = b"".join(b"%d\n" % n for n in range(99_991, 100_001))
    assert SEQ[:1000].endswith(b"\n277\n")
    assert read.bytes == len(tail) + 1_000 and read.lines == 10 + 277
    assert (reads["artifact_grep"].reads, reads["artifact_grep"].lines) == (1, 10)
    assert reads["artifact_grep"].bytes == len(
        b"".join(b"%d\n" % n for n in range(99_990, 100_000))
    )
    s = store.stats(AGENT, session_id="conv-1")
    assert (s.outputs, s.model_outputs, s.bytes_produced) == (1, 1, len(SEQ))
    assert (s.bytes_shown, s.bytes_kept_out) == (shown, len(SEQ) - shown)
    assert s.tokens_kept_out_estimate == (len(SEQ) - shown) // 4
    assert (s.read_backs, s.outputs_read_back) == (3, 1)
    assert s.bytes_read_back == read.bytes + reads["artifact_grep"].bytes
    assert [o.id for o in s.outputs_list] == [art] and s.outputs_list[0].read_backs == 3
    assert s.commands[0].command == "seq 1 100000" and s.commands[0].read_backs == 3


def test_outputs_read_back_again_and_again_get_a_hint(store: ArtifactStore) -> None:
    for _ in range(2):
        art, _, tools = _session(store, "conv-2")
        for offset in (0, 1000, 2000):
            tools.handle("artifact_read", {"id": art, "offset": offset, "limit": 1000})
    hints = store.stats(AGENT, session_id="conv-2").hints
    assert hints == [
        "outputs of `seq 1 100000` were read back 3.0 times each: a larger "
        "OVERSPILL_MAX_OUTPUT_BYTES (the bytes shown inline) would have shown more of "
        "them at once"
    ]


def test_the_ledger_is_owner_scoped(store: ArtifactStore) -> None:
    art, _, tools = _session(store, "conv-3")
    tools.handle("artifact_read", {"id": art, "offset": 0})
    with pytest.raises(NotFound):
        store.reads_of(BOB, art)  # another owner's is as missing as a missing one
    with pytest.raises(PermissionDenied):
        store.stats(BOB, owner=AGENT.name)
    assert store.stats(BOB).outputs == 0 and store.stats(BOB).read_backs == 0
    assert store.stats(ADMIN, owner=AGENT.name).read_backs == 1
    assert store.stats(ADMIN).outputs >= 1


def test_reads_go_with_their_output(store: ArtifactStore) -> None:
    art, _, tools = _session(store, "conv-4")
    tools.handle("artifact_read", {"id": art, "offset": 0})
    store.ledger.flush()
    store.delete(AGENT, art)
    store.sweeper.run()
    from sqlalchemy import select

    from overspill.artifacts.db.models import Artifact, ReadBack

    with store.db.read() as s:  # the tombstone keeps them until its row goes
        kept = s.execute(select(ReadBack).where(ReadBack.artifact_id == art)).all()
        assert len(kept) == 1
    with store.db.write() as s:
        s.delete(s.get(Artifact, art))
    with store.db.read() as s:
        assert s.execute(select(ReadBack).where(ReadBack.artifact_id == art)).all() == []


def test_the_http_api_answers_stats_and_reads_and_keeps_owners_apart(store: ArtifactStore) -> None:
    api = make_api(store)
    mine = api.client.post("/v1/artifacts", json={"name": "log"}, headers=api.h(api.alice)).json()[
        "id"
    ]
    api.client.put(f"/v1/artifacts/{mine}/content", content=SEQ, headers=api.h(api.alice))
    headers = {**api.h(api.alice), "X-Overspill-Tool": "cat", "X-Overspill-Session": "s-9"}
    assert api.client.get(f"/v1/artifacts/{mine}/content", headers=headers).content == SEQ
    reads = api.client.get(f"/v1/artifacts/{mine}/reads", headers=api.h(api.alice)).json()
    assert [(r["tool"], r["session_id"], r["reads"], r["bytes"], r["lines"]) for r in reads] == [
        ("cat", "s-9", 1, len(SEQ), 100_000)
    ]
    theirs = api.client.get(f"/v1/artifacts/{mine}/reads", headers=api.h(api.bob))
    assert theirs.status_code == 404
    refused = api.client.get("/v1/stats", params={"owner": ALICE.name}, headers=api.h(api.bob))
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "permission_denied"
    stats = api.client.get("/v1/stats", headers=api.h(api.alice)).json()
    assert stats["owner"] == ALICE.name and stats["read_backs"] == 1
    assert stats["model_outputs"] == 0  # an upload: no model was shown a view of it
    ui = {**api.h(api.alice), "X-Overspill-Tool": "ui"}
    api.client.get(f"/v1/artifacts/{mine}/content", headers=ui)
    again = api.client.get("/v1/stats", headers=api.h(api.alice)).json()
    assert (again["read_backs"], again["ui_views"]) == (1, 1)  # a person's look apart


def test_overspill_stats_through_the_cli(tmp_path: Path) -> None:
    env = cli_env(
        OVERSPILL_HOME=tmp_path, OVERSPILL_OWNER="agent:claude-code", OVERSPILL_SESSION_ID="c-7"
    )
    out = run_cli(env, "run", "--", "seq 1 100000").stdout.decode()
    art = re.search(r"artifact (art_\w{26})", out)
    assert art
    assert run_cli(env, "cat", art.group(1), "--tail", "3").stdout == b"99998\n99999\n100000\n"
    answer = json.loads(run_cli(env, "stats", "--json").stdout)
    assert (answer["outputs"], answer["model_outputs"], answer["read_backs"]) == (1, 1, 1)
    assert answer["bytes_produced"] == len(SEQ)
    assert answer["bytes_shown"] + answer["bytes_kept_out"] == len(SEQ)
    text = run_cli(env, "stats", "--session", "c-7").stdout.decode()
    assert text.startswith("the last 7d, session c-7 of every owner:")
    assert f"{art.group(1)}" in text and "read back 1x" in text
    assert "(~" in text and "tokens, estimated as bytes/4)" in text


def test_an_answer_waits_for_the_flush_in_flight_and_sees_every_read_noted(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The background flush takes the counts, then commits them; an answer that
    flushes meanwhile finds nothing left to write and must not read before that
    commit (a download's read was missing from /reads on a loaded machine)."""
    import contextlib
    import threading
    import time
    from collections.abc import Iterator
    from typing import Any

    from tests.helpers import write_artifact

    art = write_artifact(store, SEQ)
    ledger = store.ledger
    ledger.note(ALICE, art, len(SEQ), 100_000)
    real = ledger._write
    slow_once = [True]

    @contextlib.contextmanager
    def slow_write() -> Iterator[Any]:
        if slow_once:  # the first: the background thread's commit, late
            slow_once.clear()
            time.sleep(0.5)
        with real() as s:
            yield s

    monkeypatch.setattr(ledger, "_write", slow_write)
    background = threading.Thread(target=ledger.flush)
    background.start()
    time.sleep(0.1)  # it has taken the counts and waits to write them
    counted = ledger.reads_of(art)
    background.join()
    assert [(r.reads, r.bytes, r.lines) for r in counted] == [(1, len(SEQ), 100_000)]
