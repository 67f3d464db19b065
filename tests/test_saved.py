"""The result-spill seam for any tool: content streams into an artifact, the model
gets a bounded head/tail preview whose notice names the id, the expiry and the
calls that read the rest; the legacy file is written while the layer is on."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from overspill.api.agent.result_saver import ResultSaver
from overspill.api.client.api import StoreClient
from overspill.api.client.http import OverspillClient
from overspill.api.client.in_process import InProcessClient
from overspill.api.results import PreviewBuffer
from overspill.artifacts.errors import InvalidArgument
from overspill.artifacts.store import ArtifactStore
from overspill.shell.result_spill import (
    LegacyResultRoot,
    safe_name,
    session_dir_name,
    sweep_old_result_files,
)
from overspill.shell.wording import find_calls
from tests.helpers import ALICE

pytestmark = pytest.mark.one_store


def chunks(data: bytes, size: int = 7777) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


def stored(backend: StoreClient, art: str) -> bytes:
    return b"".join(backend.iter_content(art))


def test_saved_content_comes_back_byte_exact_with_its_counts(backend: StoreClient) -> None:
    data = "".join(f"{i} ✓ ok\n" for i in range(30000)).encode()
    saved = ResultSaver(backend, session_id="conv").save(
        chunks(data), tool="web_fetch", name="page.txt", source={"url": "http://127.0.0.1/x"}
    )
    assert saved.id and saved.bytes == len(data) and saved.lines == 30000
    assert stored(backend, saved.id) == data
    info = backend.get(saved.id)
    assert info.kind == "result" and info.name == "page.txt" and info.session_id == "conv"
    assert info.source == {"url": "http://127.0.0.1/x", "tool": "web_fetch"}


def test_the_notice_is_pinned_whole(backend: StoreClient) -> None:
    data = b"".join(b"%05d\n" % i for i in range(20000))
    saved = ResultSaver(backend).save(data, tool="t", budget=2000)
    info = backend.get(saved.id or "")
    expiry = f"{info.expires_at:%Y-%m-%d %H:%M}"
    head, notice, tail = saved.preview.split("\n(Omitted ")[0], None, None
    notice = saved.preview.split("\n")[len(head.split("\n"))]
    assert notice == (
        f"(Omitted {saved.omitted_bytes} bytes. Full formatted result stored at: "
        f"artifact://{saved.id} (120000 bytes, 20000 lines, kept until {expiry} UTC). "
        f'Read the omitted part with artifact_read {{"id": "{saved.id}", "offset": '
        f"{len(head) + 1}}} (continue at the "
        f'offset each answer gives), or search it with artifact_grep {{"id": "{saved.id}", '
        f'"pattern": "<regex>"}}.)'
    )
    tail = saved.preview.split(notice + "\n")[1]
    assert data.startswith((head + "\n").encode()) and data.endswith(tail.encode())
    assert saved.omitted_bytes == len(data) - len(head) - 1 - len(tail)
    assert head.endswith("\n") is False and tail.startswith("1")  # cut at line boundaries


@pytest.mark.parametrize(
    "kind",
    ["ascii", "multibyte", "one-giant-line"],
)
def test_the_preview_stays_within_its_budget(backend: StoreClient, kind: str) -> None:
    data = {
        "ascii": b"abc def\n" * 40000,
        "multibyte": "日本語のテキスト😀\n".encode() * 20000,
        "one-giant-line": "é".encode() * 200_000,
    }[kind]
    for budget in (2000, 50_000):
        saved = ResultSaver(backend).save(chunks(data), tool="t", budget=budget)
        assert saved.id and len(saved.preview.encode()) <= budget
        assert "\ufffd" not in saved.preview  # never cut inside a character
        assert saved.omitted_bytes > 0
        assert stored(backend, saved.id) == data


def test_content_that_fits_is_its_own_preview(backend: StoreClient) -> None:
    saved = ResultSaver(backend).save("small result\n", tool="t")
    assert saved.preview == "small result\n" and saved.omitted_bytes == 0


def test_a_budget_outside_the_bounds_is_refused(backend: StoreClient) -> None:
    with pytest.raises(InvalidArgument):
        ResultSaver(backend).save("x", tool="t", budget=10)


def test_an_empty_result_is_refused_and_leaves_nothing(
    backend: StoreClient, store: ArtifactStore, tmp_path: Path
) -> None:
    from overspill.artifacts.queries import ListQuery

    root = tmp_path / "r"
    saver = ResultSaver(backend, legacy=True, legacy_root=str(root))
    with pytest.raises(InvalidArgument, match="the result is empty: there is nothing to store"):
        saver.save(b"", tool="t")
    assert store.list(ALICE, ListQuery()).items == []
    assert not any(p.is_file() for p in root.rglob("*"))


def test_a_storage_failure_keeps_nothing_and_says_why(store: ArtifactStore, tmp_path: Path) -> None:
    from tests.test_store import _break_blob_backend

    _break_blob_backend(store)
    saver = ResultSaver(InProcessClient(store, ALICE), legacy=True, legacy_root=str(tmp_path / "r"))
    saved = saver.save(b"x" * 20_000_000, tool="t")
    assert saved.id is None and saved.preview == ""
    assert saved.error and saved.error.startswith("the result could not be stored: ")
    # The original result is the caller's to keep; no legacy file is left behind.
    assert not any(p.is_file() for p in (tmp_path / "r").rglob("*"))


def test_the_legacy_file_has_the_replaced_layout_and_modes(
    store: ArtifactStore, tmp_path: Path
) -> None:
    root = tmp_path / "spill"
    saver = ResultSaver(
        InProcessClient(store, ALICE), session_id="sess", legacy=True, legacy_root=str(root)
    )
    data = b"row\n" * 50_000
    saved = saver.save(chunks(data), tool="read_file", name="/etc/../a b/report.log")
    path = Path(saved.legacy_path or "")
    assert path.parent == root / session_dir_name("sess")
    assert path.parent.name == "session-" + __import__("hashlib").sha256(b"sess").hexdigest()[:12]
    assert len(path.name.split("-", 1)[0]) == 12 and path.name.endswith("-report.log")
    assert path.read_bytes() == data
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert f"Full formatted result stored at: {path}. " in saved.preview
    assert f"Also stored as artifact://{saved.id} " in saved.preview
    (name, args), _ = find_calls(saved.preview)
    # It reads on where the preview's head ends: the omitted part starts there.
    head_bytes = saved.preview.split("\n(Omitted ")[0].encode() + b"\n"
    assert data.startswith(head_bytes)
    assert name == "artifact_read" and args == {"id": saved.id, "offset": len(head_bytes)}


def test_the_default_legacy_root_is_a_private_temp_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(LegacyResultRoot, "_made", None)
    root = LegacyResultRoot().path()
    assert root.parent == tmp_path and root.name.startswith("dsh-spill-") and len(root.name) == 16
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700


def test_safe_names_are_one_harmless_segment() -> None:
    assert safe_name("../../etc/passwd") == "passwd"
    assert safe_name("a b;c.txt") == "a_b_c.txt"
    assert safe_name("..") == "result.txt" and safe_name(None) == "result.txt"
    assert safe_name("C:\\temp\\x.json") == "x.json"


def _private_session(tmp_path: Path) -> tuple[Path, Path]:
    """A legacy root and one session directory in it, both 0700, as overspill makes them."""
    root = tmp_path / "dsh-spill-AbC123"
    session = root / "session-0123456789ab"
    session.mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    return root, session


def _ages() -> tuple[float, float]:
    """``(old, later)``: an mtime 40 days back, and a time 40 days on at which
    the sweeps run (setting an mtime back does not make a file old: its ctime
    stays now)."""
    now = time.time()
    return now - 40 * 86400, now + 40 * 86400


def test_the_startup_sweep_only_deletes_old_regular_files_in_session_dirs(tmp_path: Path) -> None:
    root, session = _private_session(tmp_path)
    old, later = _ages()
    stale, fresh = session / "aaaaaaaaaaaa-old.txt", session / "bbbbbbbbbbbb-new.txt"
    stale.write_text("old")
    fresh.write_text("new")
    os.utime(stale, (old, old))
    os.utime(fresh, (later, later))  # written "then": not old
    outside = root / "notes.txt"  # not in a session directory: never touched
    outside.write_text("keep")
    os.utime(outside, (old, old))
    elsewhere = tmp_path / "precious"
    elsewhere.write_text("keep")
    link = session / "cccccccccccc-link"
    link.symlink_to(elsewhere)
    os.utime(link, (old, old), follow_symlinks=False)
    lonely = root / "session-ba9876543210"
    lonely.mkdir(mode=0o700)
    gone = lonely / "dddddddddddd-x"
    gone.write_text("x")
    os.utime(gone, (old, old))
    assert sweep_old_result_files(30, tmpdir=str(tmp_path), now=later) == 2
    assert not stale.exists() and fresh.exists() and outside.exists() and link.is_symlink()
    assert elsewhere.read_text() == "keep" and not lonely.exists()  # emptied, then pruned
    assert sweep_old_result_files(0, tmpdir=str(tmp_path)) == 0  # 0 disables


def test_the_sweep_skips_roots_writable_by_others(tmp_path: Path) -> None:
    root = tmp_path / "dsh-spill-XyZ789"
    session = root / "session-0123456789ab"
    session.mkdir(parents=True)
    root.chmod(0o777)
    victim = session / "aaaaaaaaaaaa-x"
    victim.write_text("x")
    old, later = _ages()
    os.utime(victim, (old, old))
    assert sweep_old_result_files(30, tmpdir=str(tmp_path), now=later) == 0 and victim.exists()


def test_the_preview_buffer_keeps_only_its_bound() -> None:
    buf = PreviewBuffer(4000)
    for _ in range(1000):
        buf.feed(b"z" * 10_000)
    assert buf.total == 10_000_000 and len(buf.head) <= 2000 and len(buf.tail) <= 2000


@pytest.mark.parametrize("mode", [0o755, 0o777, 0o1777])
def test_a_shared_configured_root_keeps_its_mode_and_gets_a_private_dir_inside(
    store: ArtifactStore, tmp_path: Path, mode: int
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    saver = ResultSaver(InProcessClient(store, ALICE), legacy=True, legacy_root=str(shared))
    saved = saver.save(b"row\n" * 20_000, tool="t", name="r.txt")
    assert stat.S_IMODE(os.stat(shared).st_mode) == mode  # never changed
    path = Path(saved.legacy_path or "")
    private = path.parent.parent
    assert private.parent == shared and private.name.startswith("dsh-spill-")
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o700
    assert path.read_bytes() == b"row\n" * 20_000


def test_a_session_dir_open_to_others_is_refused_not_chmodded(
    store: ArtifactStore, tmp_path: Path
) -> None:
    root = tmp_path / "spill"
    root.mkdir(mode=0o700)
    session = root / session_dir_name("s")
    session.mkdir()
    session.chmod(0o777)
    saver = ResultSaver(InProcessClient(store, ALICE), legacy=True, legacy_root=str(root))
    saved = saver.save(b"row\n" * 20_000, tool="t", session_id="s")
    assert saved.id and saved.legacy_path is None  # stored; the legacy file was not written
    assert stat.S_IMODE(os.stat(session).st_mode) == 0o777 and not any(session.iterdir())


def test_the_sweep_deletes_only_files_shaped_and_owned_as_ours(tmp_path: Path) -> None:
    _, session = _private_session(tmp_path)
    old, later = _ages()
    ours, odd, foreign = (
        session / "aaaaaaaaaaaa-report.log",
        session / "draft.txt",
        session / "bbbbbbbbbbbb-theirs.txt",
    )
    for path in (ours, odd, foreign):
        path.write_text("x")
        os.utime(path, (old, old))
    if os.geteuid() == 0:
        os.chown(foreign, 65534, 65534)
    removed = sweep_old_result_files(30, tmpdir=str(tmp_path), now=later)
    assert not ours.exists() and odd.exists()
    if os.geteuid() == 0:
        assert removed == 1 and foreign.exists()


def test_the_sweep_reaches_private_roots_made_inside_a_shared_configured_root(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    session = shared / "dsh-spill-Q1w2E3" / "session-0123456789ab"
    session.mkdir(parents=True, mode=0o700)
    (shared / "dsh-spill-Q1w2E3").chmod(0o700)
    shared.chmod(0o1777)
    stale = session / "cccccccccccc-x.txt"
    stale.write_text("x")
    old, later = _ages()
    os.utime(stale, (old, old))
    done = sweep_old_result_files(30, root=str(shared), tmpdir=str(tmp_path / "t"), now=later)
    assert done == 1


def test_a_long_or_control_character_name_still_saves(backend: StoreClient) -> None:
    saved = ResultSaver(backend).save(b"x\n" * 40_000, tool="web_fetch", name="u\x00" + "a" * 900)
    assert saved.id and saved.error is None
    name = backend.get(saved.id).name or ""
    assert len(name) == 500 and "\x00" not in name and name.endswith("…")


def test_a_bad_session_id_is_one_sentence_naming_it(backend: StoreClient) -> None:
    with pytest.raises(InvalidArgument) as err:
        ResultSaver(backend).save(b"x", tool="t", session_id="s" * 300)
    assert err.value.message.startswith("session_id: ") and len(err.value.message) < 200


def test_an_unreachable_server_stores_nothing_and_says_why(
    store: ArtifactStore, tmp_path: Path
) -> None:
    import socket

    with socket.socket() as probe:  # a closed port on loopback
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with OverspillClient(f"http://127.0.0.1:{port}", "tok_x") as client:
        saver = ResultSaver(client, legacy=True, legacy_root=str(tmp_path / "r"))
        saved = saver.save(b"row\n" * 30_000, tool="t")
    assert saved.id is None and saved.preview == ""
    assert saved.error and "127.0.0.1" in saved.error
    assert not any(p.is_file() for p in (tmp_path / "r").rglob("*"))


def test_a_tools_own_budget_applies_and_a_bad_one_is_refused_at_load(
    store: ArtifactStore,
) -> None:
    from overspill.api.agent.result_saver import tool_budgets
    from overspill.artifacts.errors import ConfigurationError

    budgets = tool_budgets("web_fetch=4KB, read_file=80000")
    assert budgets == {"web_fetch": 4000, "read_file": 80000}
    saver = ResultSaver(InProcessClient(store, ALICE), budgets=budgets)
    small = saver.save(b"x\n" * 40_000, tool="web_fetch")
    other = saver.save(b"x\n" * 40_000, tool="shell")
    assert len(small.preview.encode()) <= 4000 < len(other.preview.encode()) <= 50_000
    for bad in ("web_fetch", "=100", "web_fetch=10", "web_fetch=lots"):
        with pytest.raises(ConfigurationError, match="OVERSPILL_RESULT_BUDGETS"):
            tool_budgets(bad)


def test_a_never_persisted_tool_is_written_nowhere_and_says_so(
    store: ArtifactStore, tmp_path: Path
) -> None:
    from overspill.api.agent.result_saver import tool_names
    from overspill.artifacts.queries import ListQuery

    root = tmp_path / "r"
    saver = ResultSaver(
        InProcessClient(store, ALICE),
        legacy=True,
        legacy_root=str(root),
        never_persist=tool_names("vault_read, env_dump"),
    )
    saved = saver.save(b"secret\n" * 10_000, tool="vault_read")
    assert saved.id is None and saved.preview == ""
    assert saved.error == (
        "the result could not be stored: results of vault_read are never persisted "
        "(OVERSPILL_NEVER_PERSIST)"
    )
    assert store.list(ALICE, ListQuery()).items == []
    assert not any(p.is_file() for p in root.rglob("*"))
