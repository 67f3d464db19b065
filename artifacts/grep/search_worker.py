"""A search worker: a process that greps batches of outputs for a search.

``python -m overspill.artifacts.grep.search_worker BLOB_URL`` opens the
blob store, writes ``+`` when it is up, then reads batches from stdin and
writes each batch's answers to stdout, pickled with an 8-byte length before
each (the parent is the only writer and reader of its pipes). It ends when
stdin closes -- which is also how it ends with its parent, however that ended.

A worker never touches the database: it is sent each output's segments (see
``search_pool``), and an output whose segments moved since (a compaction, a
scrub, a delete) or a batch the backend failed comes back without an answer,
for the caller to grep itself and meet what happened there.
"""

from __future__ import annotations

import pickle
import sys
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from overspill.artifacts.blobs.base import BlobStore
    from overspill.artifacts.records import GrepResult
    from overspill.artifacts.stored.content import SegmentRef


@dataclass(frozen=True)
class Output:
    """One output to grep, as the search listed it."""

    artifact_id: str
    size: int
    line_count: int
    segments: list[SegmentRef]
    offset: int
    complete: bool


@dataclass(frozen=True)
class Batch:
    """Outputs grepped in order with what the call had left when it was sent."""

    outputs: list[Output]
    query: dict[str, Any]  # a GrepQuery's fields but max_matches and offset, checked
    max_matches: int
    scan_bytes: int
    max_bytes: int


Answers = list["GrepResult | None"]
"""A batch's answers in its order; shorter when a bound was reached (or the
batch failed); None for an output whose segments moved."""


def send(pipe: IO[bytes], value: object) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(len(data).to_bytes(8, "little") + data)
    pipe.flush()


def receive(pipe: IO[bytes]) -> Any:
    head = pipe.read(8)
    if len(head) < 8:
        raise EOFError("the pipe closed")
    size = int.from_bytes(head, "little")
    data = pipe.read(size)
    if len(data) < size:
        raise EOFError("the pipe closed mid-message")
    return pickle.loads(data)


class _Moved(Exception):
    """A segment this worker was sent is gone."""


def _moved() -> Exception:
    return _Moved()


def grep_batch(blobs: BlobStore, batch: Batch) -> Answers:
    """The batch's outputs in order, each with what the batch has left, until a
    bound is reached (the caller greps the rest itself)."""
    from overspill.artifacts.grep.grep import grep
    from overspill.artifacts.queries import GrepQuery
    from overspill.artifacts.stored.content import Content

    answers: Answers = []
    matches, scan = batch.max_matches, batch.scan_bytes
    for out in batch.outputs:
        if matches <= 0 or scan <= 0:
            break
        content = Content.detached(
            blobs, out.artifact_id, out.size, out.line_count, out.segments, _moved
        )
        query = GrepQuery.model_construct(**batch.query, max_matches=matches, offset=out.offset)
        try:
            res = grep(
                content, query, max_bytes=batch.max_bytes, scan_bytes=scan, complete=out.complete
            )
        except _Moved:
            answers.append(None)
            continue
        answers.append(res)
        matches -= len(res.matches)
        scan -= res.next_offset - res.scanned_from
        if not res.eof:
            break
    return answers


def main() -> None:
    from overspill.artifacts.blobs.registry import open_blob_store

    blobs = open_blob_store(sys.argv[1])
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    try:
        stdout.write(b"+")
        stdout.flush()
        while True:
            try:
                batch = receive(stdin)
            except EOFError:
                return
            try:
                answers = grep_batch(blobs, batch)
            except Exception:  # the caller greps these itself and meets the error
                answers = []
            send(stdout, answers)
    except (BrokenPipeError, KeyboardInterrupt):
        return


if __name__ == "__main__":
    main()
