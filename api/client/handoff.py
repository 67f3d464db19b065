"""Outputs handed out of a harness's sandbox, and taken into the store outside it.

A harness that confines its commands (Claude Code's sandbox: bubblewrap, a
read-only file system but for the project and its temp dir, no Unix sockets)
confines ``overspill`` with them, since overspill runs inside the command's
shell. There the store's home cannot be written and the local server's socket
cannot be reached. So the output is handed out instead:

- inside, ``HandoffSink`` writes each overflowing stream (masked, like every
  copy) into ``ROOT/<id>.out`` in a directory the sandbox lets the command
  write (the harness's temp dir), under an artifact id chosen there and named in
  the model's view; ``ROOT/<id>.json`` (written last, by rename) says it is whole;
- outside, the harness's hook, which runs after the command and before the model
  sees its answer, ``ingest``s every ready hand-off: the artifact is created under
  the promised id, the bytes uploaded, the files removed.

The sandbox is not widened for this: the command writes only where it could
already write. Standard library only (a verb's process).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from overspill.artifacts.errors import OverspillError, StorageUnavailable
from overspill.artifacts.ids import check_artifact_id, new_artifact_id
from overspill.shell.results import ArtifactRef

from .files import chunks

if TYPE_CHECKING:
    from .calls import ApiCalls

MANIFEST_MAX = 1 << 20  # a hand-off's description is small; anything bigger is not ours


def handoff_root(tmpdir: str) -> Path:
    """Where hand-offs wait inside ``tmpdir`` (the harness's temp dir, the same
    path inside its sandbox and out)."""
    return Path(tmpdir) / "overspill-handoff"


def _private_dir(root: Path) -> None:
    """``root`` as a 0700 directory of ours, never through a link."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise StorageUnavailable(f"{root} is not a directory of this user's")
    if st.st_mode & 0o077:
        os.chmod(root, 0o700)


class HandoffSink:
    """The executor's sink inside a sandbox: each stream into a hand-off file."""

    def __init__(
        self, root: Path, *, session_id: str | None = None, max_bytes: int | None = None
    ) -> None:
        self._root = root
        self._session_id = session_id
        self._max_bytes = max_bytes

    def open(self, *, stream: str, source: dict[str, Any]) -> HandoffStream:
        _private_dir(self._root)
        return HandoffStream(self._root, stream, source, self._session_id, self._max_bytes)


class HandoffStream:
    def __init__(
        self,
        root: Path,
        stream: str,
        source: dict[str, Any],
        session_id: str | None,
        max_bytes: int | None,
    ) -> None:
        self.artifact_id = new_artifact_id()
        self._root = root
        self._meta: dict[str, Any] = {
            "id": self.artifact_id,
            "name": f"{source.get('tool', 'bash')} {stream}",
            "session_id": session_id,
            "source": source,
        }
        self._cap = max_bytes
        self._size = 0
        self._offered = 0
        self._hash = hashlib.sha256()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        self._fd = os.open(root / f"{self.artifact_id}.out", flags, 0o600)

    def progress(self) -> int:
        return self._size

    def known_id(self) -> str:
        return self.artifact_id

    def would_wait(self, n: int) -> bool:
        return False

    def write(self, data: bytes | memoryview, newlines: int | None = None) -> None:
        view = memoryview(data)
        self._offered += len(view)
        if self._cap is not None:
            view = view[: max(0, self._cap - self._size)]  # past the cap: capped, not failed
        self._hash.update(view)
        self._size += len(view)
        while view:
            view = view[os.write(self._fd, view) :]

    def close(
        self, source_update: dict[str, Any], total_bytes: int | None = None
    ) -> tuple[ArtifactRef | None, str | None]:
        total = max(self._offered, total_bytes or 0)
        meta = {
            **self._meta,
            "source": {**self._meta["source"], **source_update},
            "size_bytes": self._size,
            "total_bytes": total,
            "sha256": self._hash.hexdigest(),
            "made_at": time.time(),
        }
        state = "complete" if total == self._size else "capped"
        try:
            os.close(self._fd)
            tmp = self._root / f".{self.artifact_id}.json.part"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(tmp, flags, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(meta, f)
            os.rename(tmp, self._root / f"{self.artifact_id}.json")
        except OSError as exc:
            return None, f"cannot hand the output out of the sandbox: {exc.strerror}"
        ref = ArtifactRef(self.artifact_id, state, self._size, total, meta["sha256"])
        return ref, None


# -- outside: into the store ---------------------------------------------------------------


def ready(root: Path) -> list[Path]:
    """The hand-offs waiting in ``root`` (their ``.json``), oldest id first."""
    try:
        return sorted(p for p in root.iterdir() if p.suffix == ".json" and p.name[:4] == "art_")
    except OSError:
        return []


def ingest(root: Path, calls: ApiCalls) -> list[tuple[str, str | None]]:
    """Store every ready hand-off in ``root``; (id, error or None) for each.

    Each is claimed first by renaming its ``.json`` (two hooks at once never
    store one twice), then created under its promised id, uploaded from its file
    and completed with how much the command printed; its files go once stored.
    One that fails keeps its files under the claimed name and says why."""
    done: list[tuple[str, str | None]] = []
    for manifest in ready(root):
        claimed = manifest.with_name(f"{manifest.stem}.{os.getpid()}.claimed")
        try:
            os.rename(manifest, claimed)
        except OSError:
            continue  # another hook has it
        artifact_id = manifest.stem
        try:
            _store(claimed, root / f"{artifact_id}.out", calls)
        except (OverspillError, OSError, ValueError) as exc:
            reason = getattr(exc, "message", None) or str(exc)
            done.append((artifact_id, reason))
            continue
        for path in (claimed, root / f"{artifact_id}.out"):
            with contextlib.suppress(OSError):
                os.unlink(path)
        done.append((artifact_id, None))
    return done


def _store(manifest: Path, data: Path, calls: ApiCalls) -> None:
    fd = os.open(manifest, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        meta = json.loads(f.read(MANIFEST_MAX + 1)[:MANIFEST_MAX])
    if not isinstance(meta, dict):
        raise ValueError("a hand-off's description is not an object")
    artifact_id = check_artifact_id(str(meta.get("id")))
    source = dict(meta["source"]) if isinstance(meta.get("source"), dict) else {}
    shown = source.pop("shown_bytes", None)  # the ledger's, recorded with the end
    calls.create(
        id=artifact_id,
        kind="output",
        name=meta.get("name"),
        session_id=meta.get("session_id"),
        source=source,
    )
    fd = os.open(data, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        stored = calls.upload(artifact_id, chunks(f, hashlib.sha256()), complete=False)
    size = int(stored.get("size_bytes", 0))
    final = calls.complete(
        artifact_id,
        total_bytes=max(size, int(meta.get("total_bytes") or 0)),
        source={"shown_bytes": shown} if isinstance(shown, int) else {},
    )
    if meta.get("sha256") and final.get("sha256") not in (None, meta["sha256"]):
        raise ValueError(f"{artifact_id} was stored with other bytes than the command printed")
