"""Compressed storage: what frames cost on disk and what they cost to read.

Five outputs of 32 MiB each (8 MiB with --quick), made to look like what agents
print: a compiler log, a pytest run, an npm install, a JSON-lines service log,
and random bytes. Each is stored twice in a fresh local store (SQLite + files):
one copy left as written, one compacted into compressed frames. Per output:

- ``stored_pct``: the compacted copy's blobs plus its frame rows (key, digest and
  six integers per frame), as a share of the output. Targets: <= 20% on the logs,
  <= 101% on random bytes.
- ``vs_codec``: that against the store's codec (``auto``: lz4 or zstd -3 per
  frame) over the same 256 KiB frames, in memory: what the frame rows and the
  layout add to the codec's own best for this frame size. Target <= 1.15.
  ``vs_zstd3`` is the same against ``zstd -3`` alone (what ``compression =
  "zstd"`` stores), a figure: what reading 3-4x faster costs in disk.
- ``capture_ratio``: writing the output through a store writer with compression
  on, against the same with it off, interleaved (compression happens after the
  end, on a server's background thread, so capture is the raw path; target
  >= 0.9). ``compact_mb_s`` is what that background work costs.
- ``window_ratio``/``tail_ratio``: a 64 KiB window at random offsets and a
  100-line tail, raw time / compressed time (target >= 1/1.5 = 0.667), each
  the first read (the process's frame and segment-row caches emptied before it);
  ``*_again_ratio``: the same reads once more, raw again / compressed again, as
  a model's follow-up reads find the rows and frames kept already
  (``artifacts/stored/frame_cache.py``).
- ``grep_ratio``: grep over the whole output, raw time / compressed time
  (target >= 0.8).

    python bench/storage.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, report

if TYPE_CHECKING:
    from overspill.artifacts.store import ArtifactStore

MiB = 1024 * 1024


def compiler_log(size: int, rng: random.Random) -> bytes:
    out, n = [], 0
    files = [f"src/{d}/{f}.c" for d in ("net", "fs", "mm", "core") for f in "abcdefgh"]
    while n < size:
        f, line = rng.choice(files), rng.randrange(1, 3000)
        r = rng.random()
        if r < 0.6:
            s = f"  CC      {f[:-2]}.o\n"
        elif r < 0.85:
            s = (
                f"{f}:{line}:{rng.randrange(1, 80)}: warning: unused variable "
                f"'tmp{rng.randrange(50)}' [-Wunused-variable]\n"
                f"  {line} |     int tmp{rng.randrange(50)} = 0;\n      |         ^~~~\n"
            )
        else:
            s = f"  LD      build/{rng.choice(files)[4:-2]}.so\n"
        out.append(s)
        n += len(s)
    return "".join(out).encode()[:size]


def pytest_run(size: int, rng: random.Random) -> bytes:
    out, n, i = [], 0, 0
    while n < size:
        i += 1
        mod = f"tests/test_{rng.choice(['api', 'store', 'cli', 'grep'])}.py"
        if rng.random() < 0.97:
            s = f"{mod}::test_case_{i} PASSED{' ' * rng.randrange(1, 30)}[{i % 100:3d}%]\n"
        else:
            s = (
                f"{mod}::test_case_{i} FAILED\n"
                f"    def test_case_{i}():\n>       assert result == {rng.randrange(999)}\n"
                f"E       AssertionError: assert {rng.randrange(999)} == {rng.randrange(999)}\n"
                f"\n{mod}:{rng.randrange(900)}: AssertionError\n"
            )
        out.append(s)
        n += len(s)
    return "".join(out).encode()[:size]


def npm_install(size: int, rng: random.Random) -> bytes:
    out, n = [], 0
    names = [f"pkg-{a}{b}" for a in "abcdefghij" for b in "klmnopqrst"]
    while n < size:
        p, v = rng.choice(names), f"{rng.randrange(9)}.{rng.randrange(30)}.{rng.randrange(20)}"
        r = rng.random()
        if r < 0.5:
            s = f"npm http fetch GET 200 https://registry.npmjs.org/{p}/-/{p}-{v}.tgz {rng.randrange(900)}ms (cache miss)\n"
        elif r < 0.8:
            s = f"npm timing reifyNode:node_modules/{p} Completed in {rng.randrange(4000)}ms\n"
        else:
            s = f"npm WARN deprecated {p}@{v}: this version is no longer supported\n"
        out.append(s)
        n += len(s)
    return "".join(out).encode()[:size]


def json_lines(size: int, rng: random.Random) -> bytes:
    out, n, t = [], 0, 1_765_000_000.0
    while n < size:
        t += rng.random() / 10
        rec = {
            "ts": round(t, 3),
            "level": rng.choice(["info", "info", "info", "debug", "warn"]),
            "service": rng.choice(["api", "worker", "scheduler"]),
            "msg": rng.choice(["request done", "cache hit", "job queued", "retrying"]),
            "status": rng.choice([200, 200, 200, 404, 500]),
            "duration_ms": rng.randrange(2000),
            "request_id": f"{rng.getrandbits(64):016x}",
        }
        s = json.dumps(rec) + "\n"
        out.append(s)
        n += len(s)
    return "".join(out).encode()[:size]


def random_bytes(size: int, rng: random.Random) -> bytes:
    return os.urandom(size)


OUTPUTS: dict[str, Callable[[int, random.Random], bytes]] = {
    "compiler": compiler_log,
    "pytest": pytest_run,
    "npm": npm_install,
    "jsonl": json_lines,
    "random": random_bytes,
}


def _store(home: Path, level: int):  # type: ignore[no-untyped-def]
    """A store that compacts with the default codec (``level`` 0: compression off)."""
    from overspill.artifacts.config import StoreSettings
    from overspill.artifacts.store import ArtifactStore

    return ArtifactStore.open(StoreSettings(home=str(home), compression_level=level))


def _write(store, who, data: bytes) -> str:  # type: ignore[no-untyped-def]
    writer = store.open_writer(who)
    view = memoryview(data)
    for i in range(0, len(data), 64 * 1024):
        writer.write(bytes(view[i : i + 64 * 1024]))
    return str(writer.close().id)


def _timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _windows(store, who, aid: str, offsets: list[int]) -> None:  # type: ignore[no-untyped-def]
    for o in offsets:
        store.read_bytes(who, aid, o, o + 65536)


def _metadata_bytes(store, artifact_id: str) -> int:  # type: ignore[no-untyped-def]
    """What the frame rows hold: key, digest and codec strings, six integers each."""
    from sqlalchemy import select

    from overspill.artifacts.db.models import Segment

    with store.db.read() as s:
        rows = s.execute(
            select(Segment.blob_key, Segment.digest, Segment.codec).where(
                Segment.artifact_id == artifact_id
            )
        ).all()
    return sum(len(k) + len(d or "") + len(c or "") + 6 * 8 for k, d, c in rows)


def measure(
    name: str,
    data: bytes,
    on: ArtifactStore,
    off: ArtifactStore,
    reps: int,
    rng: random.Random,
    figures: dict[str, object],
    targets: dict[str, dict[str, object]],
) -> None:
    """One output's figures and targets (see the module doc)."""
    from overspill.artifacts.queries import GrepQuery, TailQuery
    from overspill.artifacts.records import Principal
    from overspill.artifacts.stored.frame_cache import clear_read_caches
    from overspill.artifacts.stored.frames import FRAME_BYTES, ZSTD, encode

    who = Principal(name="user:bench", role="user")
    size = len(data)
    frames = [data[i : i + FRAME_BYTES] for i in range(0, len(data), FRAME_BYTES)]
    codec, level = on.settings.compression, on.settings.compression_level
    ref = sum(len(encode(f, codec, level)[1]) for f in frames)
    zstd3 = sum(len(encode(f, ZSTD, 3)[1]) for f in frames)
    del frames
    # Capture: compression on against off, interleaved.
    cap_on, cap_off = [], []
    raw_id = packed_id = ""
    for _ in range(reps):
        cap_off.append(_timed(lambda: off.delete(who, _write(off, who, data))))
        cap_on.append(_timed(lambda: on.delete(who, _write(on, who, data))))
    on.sweeper.run()
    off.sweeper.run()
    raw_id, packed_id = _write(off, who, data), _write(on, who, data)
    compact_s = _timed(lambda: on.compactor.compact(packed_id))
    info = on.get(who, packed_id)
    assert info.compressed and info.stored_bytes is not None
    stored = info.stored_bytes + _metadata_bytes(on, packed_id)

    offsets = [rng.randrange(0, size - 65536) for _ in range(20)]
    win: dict[str, list[float]] = {"raw": [], "packed": []}
    tail: dict[str, list[float]] = {"raw": [], "packed": []}
    grep: dict[str, list[float]] = {"raw": [], "packed": []}
    query = GrepQuery(pattern="NO_SUCH_TOKEN")
    # A model's next read of the same parts, raw and compacted alike: the rows
    # and the frames the first read left in the process's caches serve it.
    again: dict[str, dict[str, list[float]]] = {
        "raw": {"window": [], "tail": []},
        "packed": {"window": [], "tail": []},
    }
    for _ in range(reps):
        for key, st, aid in (("raw", off, raw_id), ("packed", on, packed_id)):
            # The first read of each kind: nothing decoded by an earlier one.
            window = partial(_windows, st, who, aid, offsets)
            clear_read_caches()
            win[key].append(_timed(window) / len(offsets))
            clear_read_caches()
            tail[key].append(_timed(partial(st.tail, who, aid, TailQuery(lines=100))))
            clear_read_caches()
            grep[key].append(_timed(partial(st.grep, who, aid, query)))
            _windows(st, who, aid, offsets)
            again[key]["window"].append(_timed(window) / len(offsets))
            again[key]["tail"].append(_timed(partial(st.tail, who, aid, TailQuery(lines=100))))
    pct = stored * 100 / len(data)
    vs = stored / ref
    figures[f"{name}_stored_pct"] = round(pct, 2)
    figures[f"{name}_codec_pct"] = round(ref * 100 / len(data), 2)
    figures[f"{name}_vs_codec"] = round(vs, 3)
    figures[f"{name}_zstd3_pct"] = round(zstd3 * 100 / len(data), 2)
    figures[f"{name}_vs_zstd3"] = round(stored / zstd3, 3)
    figures[f"{name}_compact_mb_s"] = round(len(data) / compact_s / 1e6, 1)
    cap = median(cap_off) / median(cap_on)
    figures[f"{name}_capture_off_s"] = round(median(cap_off), 4)
    figures[f"{name}_capture_on_s"] = round(median(cap_on), 4)
    figures[f"{name}_capture_ratio"] = round(cap, 3)
    ratios = {
        "window": median(win["raw"]) / median(win["packed"]),
        "tail": median(tail["raw"]) / median(tail["packed"]),
        "grep": median(grep["raw"]) / median(grep["packed"]),
    }
    figures[f"{name}_window_raw_ms"] = round(median(win["raw"]) * 1000, 3)
    figures[f"{name}_window_packed_ms"] = round(median(win["packed"]) * 1000, 3)
    figures[f"{name}_tail_raw_ms"] = round(median(tail["raw"]) * 1000, 3)
    figures[f"{name}_tail_packed_ms"] = round(median(tail["packed"]) * 1000, 3)
    figures[f"{name}_grep_raw_s"] = round(median(grep["raw"]), 4)
    figures[f"{name}_grep_packed_s"] = round(median(grep["packed"]), 4)
    for key, value in ratios.items():
        figures[f"{name}_{key}_ratio"] = round(value, 3)
    for key in ("window", "tail"):
        raw_again, packed_again = median(again["raw"][key]), median(again["packed"][key])
        figures[f"{name}_{key}_again_raw_ms"] = round(raw_again * 1000, 3)
        figures[f"{name}_{key}_again_packed_ms"] = round(packed_again * 1000, 3)
        figures[f"{name}_{key}_again_ratio"] = round(raw_again / packed_again, 3)
    limit = 101.0 if name == "random" else 20.0
    targets[f"{name}_stored"] = {
        "want": f"<= {limit:g}% of the output",
        "got": round(pct, 2),
        "met": pct <= limit,
    }
    targets[f"{name}_vs_codec"] = {
        "want": "<= 1.15",
        "got": round(vs, 3),
        "met": vs <= 1.15,
    }
    targets[f"{name}_capture"] = {"want": ">= 0.9", "got": round(cap, 3), "met": cap >= 0.9}
    for key, want in (("window", 1 / 1.5), ("tail", 1 / 1.5), ("grep", 0.8)):
        targets[f"{name}_{key}"] = {
            "want": f">= {want:.3g}",
            "got": round(ratios[key], 3),
            "met": ratios[key] >= want,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 MiB outputs, fewer repetitions")
    args = parser.parse_args()
    size, reps = (8 * MiB, 3) if args.quick else (32 * MiB, 5)

    figures: dict[str, object] = {"size_mib": size // MiB}
    targets: dict[str, dict[str, object]] = {}
    rng = random.Random(42)
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp:
        on, off = _store(Path(tmp) / "on", 3), _store(Path(tmp) / "off", 0)
        for name, make in OUTPUTS.items():
            measure(name, make(size, rng), on, off, reps, rng, figures, targets)
        on.close()
        off.close()
    report("storage", figures, targets)


if __name__ == "__main__":
    main()
