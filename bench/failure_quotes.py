"""How well the failure patterns pick out the lines a person would want quoted:
precision and recall on real outputs marked by hand, the patterns of an earlier
release measured in the same run as the reference.

The corpus is ``tests/failure_corpus``: compilers (gcc, javac, cargo), test
runners (pytest, unittest), linters and type checkers (ruff, mypy), package
managers (pip, npm), make, Python, Java and Node failures, a shell's own errors,
and outputs with no failure at all whose file names hold failure words
(``compileall`` of site-packages, ``find /usr -name '*.so*'``, ``ls -R``,
``git log -p`` / ``--stat`` of this repository, clean builds and test runs).
``marks.txt`` there lists, per file, the lines marked by hand.

A line counts as quoted when the patterns match it as ``artifact_grep`` and the
stream's failure scan do (RE2, ``never_nl``, one line at a time); the scan's
own count, literal prefilter included, is checked against that per file.

    python bench/failure_quotes.py [--quick] [--show]

``--show`` prints every line quoted but not marked, and marked but not quoted.
(``--quick`` changes nothing: the corpus is small.)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, arguments, report

from overspill.shell.config import DEFAULT_FAILURE_PATTERNS
from overspill.shell.failures import FailureMatcher, FailureScan, failure_matcher

CORPUS = ROOT / "tests" / "failure_corpus"

EARLIER = "\n".join(
    [
        r"(?i)\b(?:errors?|fatal|panic(?:ked)?|traceback|exception|fail(?:s|ed|ures?)?)\b",
        r"[a-z](?:Error|Exception)\b",
    ]
)
"""The default patterns up to release 0.2 (any failure word anywhere: file names too)."""


def marks() -> dict[str, set[int]]:
    """``marks.txt``: each corpus file's hand-marked line numbers."""
    out: dict[str, set[int]] = {}
    for raw in (CORPUS / "marks.txt").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, numbers = line.partition(":")
        lines: set[int] = set()
        for item in numbers.split():
            first, _, last = item.partition("-")
            lines.update(range(int(first), int(last or first) + 1))
        out[name.strip()] = lines
    files = {p.name for p in CORPUS.glob("*.txt")} - {"marks.txt"}
    if files != set(out):
        raise SystemExit(f"marks.txt and the corpus disagree: {sorted(files ^ set(out))}")
    return out


def matched(matcher: FailureMatcher, data: bytes) -> set[int]:
    return {n for n, line in enumerate(data.split(b"\n"), 1) if matcher.regex.search(line)}


def scanned(matcher: FailureMatcher, data: bytes) -> int:
    """The stream scan's count, fed as a pump feeds it (64 KiB chunks)."""
    scan = FailureScan(matcher)
    for at in range(0, len(data), 65_536):
        scan.feed(data[at : at + 65_536])
    scan.finish()
    return scan.count


def measure(setting: str, *, show: bool = False) -> dict[str, Any]:
    matcher = failure_matcher(setting)
    assert matcher is not None
    hand = marks()
    tp = fp = fn = 0
    per_file: dict[str, list[int]] = {}
    for name in sorted(hand):
        data = (CORPUS / name).read_bytes()
        found = matched(matcher, data)
        if scanned(matcher, data) != len(found):
            raise SystemExit(f"{name}: the failure scan counts other lines than grep finds")
        want = hand[name]
        per_file[name] = [len(want), len(found), len(found & want)]
        tp, fp, fn = tp + len(found & want), fp + len(found - want), fn + len(want - found)
        if show:
            lines = data.split(b"\n")
            for n in sorted(found ^ want):
                kind = "quoted, not marked" if n in found else "marked, not quoted"
                print(f"  {name}:{n}: {kind}: {lines[n - 1][:120].decode(errors='replace')}")
    return {
        "precision": round(tp / (tp + fp), 3) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 3) if tp + fn else 1.0,
        "quoted_not_marked": fp,
        "marked_not_quoted": fn,
        "files": per_file,
    }


def main() -> None:
    ap = arguments("(the same: the corpus is small)")
    ap.add_argument("--show", action="store_true", help="print each line the patterns get wrong")
    args = ap.parse_args()
    if args.show:
        print("earlier patterns:")
    earlier = measure(EARLIER, show=args.show)
    if args.show:
        print("current patterns:")
    now = measure(DEFAULT_FAILURE_PATTERNS, show=args.show)
    print(f"{'file':24} {'marked':>6} {'earlier: quoted/right':>22} {'now: quoted/right':>18}")
    for name, (want, e_found, e_right) in earlier["files"].items():
        _, n_found, n_right = now["files"][name]
        print(f"{name:24} {want:6} {e_found:>14}/{e_right:<7} {n_found:>10}/{n_right:<7}")
    figures = {
        "precision": now["precision"],
        "recall": now["recall"],
        "earlier_precision": earlier["precision"],
        "earlier_recall": earlier["recall"],
        "quoted_not_marked": now["quoted_not_marked"],
        "marked_not_quoted": now["marked_not_quoted"],
        "files": len(now["files"]),
        "marked_lines": sum(f[0] for f in now["files"].values()),
    }
    targets = {
        "precision": {
            "want": ">= 0.95",
            "got": now["precision"],
            "met": now["precision"] >= 0.95,
        },
        "recall": {
            "want": f">= {earlier['recall']} (the earlier patterns')",
            "got": now["recall"],
            "met": now["recall"] >= earlier["recall"],
        },
    }
    report("failure_quotes", figures, targets)


if __name__ == "__main__":
    main()
