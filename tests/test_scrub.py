"""``redact --scrub``: a secret found after it was stored is masked in every
output kept, the blobs that held it are deleted (also where another output
shared them), each rewrite is audited, and a dry run changes nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from overspill.api.scrub import scrub_page
from overspill.artifacts.store import ArtifactStore
from overspill.artifacts.stored.frame_cache import FRAMES
from overspill.artifacts.stored.frames import FRAME_BYTES
from overspill.shell.redact.policy import Redaction
from tests.helpers import ALICE, cli_env, run_cli, write_artifact

PATTERN = Redaction(enabled=True, patterns=("ZZTOP-[0-9]{6}",))
SECRET = b"ZZTOP-123456"


def _clean(n: int, seed: int = 0) -> bytes:
    return b"".join(b"line %d of seed %d: nothing to hide here\n" % (i, seed) for i in range(n))


def _content(store: ArtifactStore, artifact_id: str) -> bytes:
    _, content = store.open_content(ALICE, artifact_id)
    return b"".join(content.iter_range(0, content.size))


def _keys(store: ArtifactStore) -> set[str]:
    return {b.key for b in store.blobs.list()}


def _scrub(store: ArtifactStore, *, dry_run: bool = False) -> dict[str, Any]:
    report = scrub_page(
        store, PATTERN, owner=None, after=None, limit=100, dry_run=dry_run, actor="user:root"
    )
    return report.model_dump()


def test_a_secret_stored_earlier_is_masked_and_its_old_bytes_deleted(store: ArtifactStore) -> None:
    data = _clean(2000) + b"deploy with key " + SECRET + b" now\n" + _clean(2000, 1)
    raw = write_artifact(store, data)
    packed = write_artifact(store, data.replace(b"deploy", b"DEPLOY"))
    assert store.compactor.compact(packed)
    _content(store, packed)  # its frames decoded, kept for the next read
    assert FRAMES.size > 0
    before = _keys(store)
    report = _scrub(store)
    assert FRAMES.size == 0  # no decoded copy of the secret is left in memory
    assert report["rewritten"] == 2 and report["secrets"] == 2
    assert list(report["rules"].values()) == [2]  # one rule (the pattern), twice
    for artifact_id in (raw, packed):
        now = _content(store, artifact_id)
        assert SECRET not in now and len(now) == len(data)
        info = store.get(ALICE, artifact_id)
        assert info.sha256 == hashlib.sha256(now).hexdigest()
        (entry,) = store.audit_log(artifact_id=artifact_id, action="scrub")
        assert entry.actor == "user:root" and entry.details["count"] == 1
    assert not (before & _keys(store))  # every blob that held it is gone


def test_a_blob_another_output_shares_is_rewritten_for_it_too(store: ArtifactStore) -> None:
    head = _clean(8000)[:FRAME_BYTES]  # one whole frame, shared by both
    leaky = write_artifact(store, head + b"key " + SECRET + b"\n")
    clean = write_artifact(store, head)
    assert store.compactor.compact(leaky) and store.compactor.compact(clean)
    assert store.get(ALICE, clean).stored_bytes == 0  # all of it in leaky's pack
    old = _keys(store)
    report = _scrub(store)
    assert report["rewritten"] == 1 and report["rehomed"] == 1
    assert _content(store, clean) == head  # the same bytes, in blobs of its own
    assert store.get(ALICE, clean).sha256 == hashlib.sha256(head).hexdigest()
    assert not (old & _keys(store))


def test_a_dry_run_counts_and_changes_nothing(store: ArtifactStore) -> None:
    data = b"a " + SECRET + b" b\n"
    artifact_id = write_artifact(store, data)
    keys = _keys(store)
    report = _scrub(store, dry_run=True)
    assert report["rewritten"] == 1 and report["secrets"] == 1
    assert _content(store, artifact_id) == data and _keys(store) == keys
    assert not store.audit_log(artifact_id=artifact_id, action="scrub")


def test_clean_outputs_are_read_and_left_as_they_are(store: ArtifactStore) -> None:
    artifact_id = write_artifact(store, _clean(3000))
    keys = _keys(store)
    report = _scrub(store)
    assert report["scanned"] == 1 and report["rewritten"] == 0
    assert _keys(store) == keys
    assert not store.audit_log(artifact_id=artifact_id, action="scrub")


def test_the_cli_scrubs_through_the_local_server_with_the_patterns_of_now(
    tmp_path: Path,
) -> None:
    env = cli_env(OVERSPILL_HOME=tmp_path / "home", OVERSPILL_OWNER="user:me")
    put = run_cli(env, "put", stdin=b"the key is " + SECRET + b"\n")
    artifact_id = put.stdout.decode().strip()
    assert SECRET in run_cli(env, "cat", artifact_id).stdout  # no rule knew it then
    env["OVERSPILL_REDACT_PATTERNS"] = "ZZTOP-[0-9]{6}"
    refused = run_cli(env, "redact")
    assert refused.returncode != 0 and b"--scrub" in refused.stderr
    dry = run_cli(env, "redact", "--scrub", "--dry-run", "--json")
    assert json.loads(dry.stdout)["rewritten"] == 1
    assert SECRET in run_cli(env, "cat", artifact_id).stdout
    done = run_cli(env, "redact", "--scrub")
    assert done.returncode == 0, done.stderr
    assert b"rewrote 1 holding 1 secrets" in done.stdout
    assert run_cli(env, "cat", artifact_id).stdout == b"the key is " + b"*" * len(SECRET) + b"\n"
    audit = run_cli(env, "audit", "--artifact", artifact_id).stdout.decode()
    assert "scrub" in audit
