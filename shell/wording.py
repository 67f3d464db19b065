"""Every sentence a model reads, in one place: what a window covers, whether the
whole output is stored, the call that continues, counts and errors (shared by
every surface); the executor's markers (a truncated stream, a clipped line, a
dropped part, how a command ended, the failure-like lines quoted from what is
not shown); the artifact tools' and the bash tools' answers; the saved-result
notice; the notes the harnesses' hooks add. Each is a function of the structured answer
(a window, a view, a result), so a sentence is changed here and in its golden
file (``tests/golden/model``), nowhere else.

Every continuation a model reads is ``tool_name {JSON arguments}``: valid JSON
that repeats every argument of the call it continues, so copying it verbatim
into a tool call works. ``find_calls`` reads them back (the tests follow them).

About 690 lines because it is all of them: split by surface, the same
sentence would again be worded in several places. Standard library only at
import (the records are types here), so ``overspill run`` pays nothing for it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from overspill.artifacts.records import (
        ArtifactInfo,
        Line,
        LineWindow,
        TailWindow,
        TextWindow,
        Window,
    )

    from .results import CollectedOutput, StreamView

RenderMode = Literal["artifact", "legacy"]

_CALL = re.compile(r"\b(artifact_[a-z]+|bash_[a-z]+) (?=\{)")


def call(tool: str, **arguments: Any) -> str:
    """``tool {"arg": value, ...}``; ``None`` values are left out."""
    import json  # a command that fits the window never writes a call

    args = {k: v for k, v in arguments.items() if v is not None}
    return f"{tool} {json.dumps(args, ensure_ascii=False)}"


def find_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Every ``tool {json}`` call in ``text``, in order."""
    import json

    found: list[tuple[str, dict[str, Any]]] = []
    decoder = json.JSONDecoder()
    for m in _CALL.finditer(text):
        try:
            args, _ = decoder.raw_decode(text, m.end())
        except json.JSONDecodeError:
            continue
        if isinstance(args, dict):
            found.append((m.group(1), args))
    return found


# -- counts and spans -----------------------------------------------------------------


def count(n: int, one: str, many: str | None = None) -> str:
    """``1 match``, ``2 matches``: singulars are singular."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def lines_span(first: int, last: int) -> str:
    """``line 5`` or ``lines 5-9``."""
    return f"line {first}" if first == last else f"lines {first}-{last}"


# -- what is stored ---------------------------------------------------------------------


def coverage(state: str, size: int, total: int, error: str | None = None) -> str:
    """Whether what is stored is the whole output, and if not, what is missing."""
    total = max(total, size)
    if state == "writing":
        return f"still being written: {size} bytes stored so far, more may come"
    if state == "complete":
        return "the whole output is stored"
    if state == "capped":
        return (
            f"capped: only the first {size} of {total} bytes were stored; "
            f"bytes {size}-{total} are not stored"
        )
    if state in ("deleted", "expired"):
        return "nothing is stored any more"
    why = f" ({clean(error)})" if error else ""
    if state == "failed":
        return f"storage failed{why}: only the first {size} of {total} bytes were stored"
    return f"{state}{why}: the writer stopped; only the first {size} of {total} bytes were stored"


def end_of_stored(state: str, size: int, total: int, error: str | None, again: str) -> str:
    """The footer of a window that reached the end of what is stored."""
    if state == "writing":
        return f"[end of what is stored so far; more may come: {again}]"
    if state == "complete":
        return "[end of output: you have seen up to its last byte]"
    return f"[end of the stored bytes, not of the output: {coverage(state, size, total, error)}]"


def searched(state: str, size: int, total: int, error: str | None, again: str) -> str:
    """How much of the output a search that reached the end of the stored bytes saw."""
    if state == "writing":
        return f"searched everything stored so far; more may come: {again}"
    if state == "complete":
        return "search complete: the whole output was searched"
    return (
        f"searched everything stored, not the whole output: {coverage(state, size, total, error)}"
    )


# -- a saved tool result ----------------------------------------------------------------


def retrieval_hint(artifact_id: str, offset: int = 0) -> str:
    """How to read (from ``offset``: where the part a preview leaves out starts) and
    search a stored result."""
    read = call("artifact_read", id=artifact_id, offset=offset)
    grep = call("artifact_grep", id=artifact_id, pattern="<regex>")
    what = "Read the omitted part" if offset else "Read it"
    return (
        f"{what} with {read} (continue at the offset each answer gives), or search it with {grep}."
    )


def saved_notice(
    artifact_id: str,
    omitted: int,
    gap_start: int,
    where: str,
    legacy_path: str | None = None,
    legacy_hint: str | None = None,
) -> str:
    """The line that replaces what a saved result's preview leaves out: the
    replaced system's wording (the legacy path right after "at: "), with the
    artifact, ``where`` (its size, lines and expiry) and the calls that read it."""
    hint = retrieval_hint(artifact_id, gap_start)
    if legacy_path:
        return (
            f"(Omitted {omitted} bytes. Full formatted result stored at: {legacy_path}. "
            f"{legacy_hint} Also stored as artifact://{artifact_id} ({where}). {hint})"
        )
    return (
        f"(Omitted {omitted} bytes. Full formatted result stored at: artifact://{artifact_id} "
        f"({where}). {hint})"
    )


# -- errors and inert text -------------------------------------------------------------

MAX_ERROR_CHARS = 1_000


def clean(text: str, limit: int = 300) -> str:
    """``text`` safe inside a bracketed marker: one line, no brackets, bounded."""
    return " ".join(text.replace("[", "(").replace("]", ")").split())[:limit]


def sentence(message: str) -> str:
    message = message.strip()
    return message if message.endswith(".") else message + "."


def tool_error(message: str) -> str:
    """The one form of a tool error: ``Error: <sentence>``, bounded whatever
    the message (an argument list a client made up can be any size)."""
    text = sentence(" ".join(message.split()))
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 1] + "…"
    return f"Error: {text}"


MASKED = "each masked with * at its own length (offsets unchanged)"
"""How a masked secret is shown, in every place that says so (the marker, the
terminal's closing line, ``info`` and the answers that describe an output)."""


def redaction_summary(redactions: object) -> str | None:
    """An artifact's ``source.redactions`` in the words of a stream's own account
    (``3 secrets redacted (github_token, url_password)``), or None."""
    if not isinstance(redactions, dict) or not int(redactions.get("count") or 0):
        return None
    n = int(redactions["count"])
    noun = "secret" if n == 1 else "secrets"
    return f"{n} {noun} redacted ({', '.join(sorted(redactions.get('rules') or {}))})"


def redaction_note(redactions: object) -> str | None:
    """An artifact's ``source.redactions`` as people and models read it:
    ``3 secrets masked (github_token, url_password), 120 bytes; each * at its
    own length``, or that it was stored unmasked; None when nothing was."""
    if not isinstance(redactions, dict):
        return None
    if redactions.get("off"):
        return "off for this owner (an admin's policy): stored as printed"
    n = int(redactions.get("count") or 0)
    if not n:
        return None
    rules = ", ".join(sorted(redactions.get("rules") or {}))
    noun = "secret" if n == 1 else "secrets"
    return f"{n} {noun} masked ({rules}), {redactions.get('bytes', 0)} bytes; {MASKED}"


# -- the executor's markers: a truncated stream, a dropped part, how it ended -------------


def hex_call(artifact_id: str, offset: int) -> str:
    """The call that shows bytes from ``offset`` as a hex dump (for binary output)."""
    return call("artifact_read", id=artifact_id, offset=offset, hex=True)


READ_WINDOW = 16_000  # bytes a read the model is offered asks for (one answer's worth)


def gap_line(head_end: int, start: int, artifact_id: str | None) -> str:
    """The line between a head and a tail: which bytes are not shown, and the
    call that reads them where an artifact holds them."""
    gap = f"[... bytes {head_end}-{start} not shown ({start - head_end} bytes)"
    if artifact_id is not None:
        gap += f"; read them: {call('artifact_read', id=artifact_id, offset=head_end)}"
    return gap + " ...]"


def binary_line(total: int, artifact_id: str) -> str:
    """What stands for binary output: its size, where it is stored, the hex call."""
    return (
        f"[binary output: {total} bytes, not shown; stored as artifact {artifact_id}; "
        f"see them as hex: {hex_call(artifact_id, 0)}]"
    )


def clipped_line(number: int, size: int, gap_start: int, gap_end: int, artifact_id: str) -> str:
    """What stands for the middle of a line too long to show whole."""
    read = call(
        "artifact_read",
        id=artifact_id,
        offset=gap_start,
        limit=min(READ_WINDOW, gap_end - gap_start),
    )
    return (
        f"[line {number} clipped: {size} bytes; bytes {gap_start}-{gap_end} not shown; "
        f"read them: {read}]"
    )


def truncation_line(out: CollectedOutput, view: StreamView | None, mode: RenderMode) -> str:
    art = out.artifact
    stored = art is not None and art.state != "failed"
    if mode == "legacy":
        # The old line exactly; where the old system had only "(unavailable)" but
        # an artifact holds the whole stream, it is named instead.
        where = out.spill_path or (f"artifact://{art.id}" if art is not None and stored else None)
        return f"[output truncated; full output: {where or '(unavailable)'}]"
    assert view is not None
    parts = ["output truncated"]
    # The spill path stays right after "full output: ", as in the legacy line.
    if out.spill_path:
        parts.append(f"full output: {out.spill_path}")
        if art is not None and stored:
            parts.append(f"artifact {art.id}")
    elif art is not None and stored:
        parts.append(f"full output: artifact {art.id}")
    else:
        parts.append("full output: (unavailable)")
    total = out.total_bytes
    not_shown: list[str] = []
    if view.binary:
        parts.append(f"binary output of {total} bytes, none of it shown")
    elif view.head_end:
        parts.append(f"shown {_head_and_tail(view)} of {view.total_lines} lines, {total} bytes")
        not_shown.append(_between(view))
    else:
        span = lines_span(view.first_line, view.last_line)
        shown = f"shown {span} of {view.total_lines} (bytes {view.start}-{view.end} of {total})"
        if view.mid_line:
            shown += f", line {view.first_line} from byte {view.start}"
        parts.append(shown)
        if view.start > 0:
            before = view.first_line - 1
            lines = f"{lines_span(1, before)}, " if before >= 1 else ""
            start_of = f" (with the start of line {view.first_line})" if view.mid_line else ""
            not_shown.append(f"{lines}bytes 0-{view.start}{start_of}")
    if len(view.clipped) == 1:
        ((line, lo, hi),) = view.clipped
        not_shown.append(f"bytes {lo}-{hi} of the clipped line {line}")
    elif view.clipped:
        hidden = sum(hi - lo for _, lo, hi in view.clipped)
        not_shown.append(
            f"{hidden} bytes from the middle of {len(view.clipped)} clipped long lines "
            "(each says which)"
        )
    if not_shown:
        parts.append("not shown: " + " and ".join(not_shown))
    if view.quoted:
        numbers = ", ".join(map(str, view.quoted))
        word = "line" if len(view.quoted) == 1 else "lines"
        parts.append(f"quoted before them: failure-like {word} {numbers} of the part not shown")
    if view.escapes_removed:
        parts.append("terminal escape sequences removed")
    if out.redacted:
        parts.append(f"{out.redacted}, {MASKED}")
    reason = (out.storage_error or "").replace("\n", " ").replace("]", ")")
    # A capped artifact (its cap, or the owner's quota) holds a readable prefix:
    # the reason says why the rest is missing, and the calls read what is there.
    prefix = art is not None and art.state == "capped" and art.size_bytes > 0
    if art is not None and art.state == "capped":
        parts.append(
            f"artifact holds the first {art.size_bytes} bytes (capped{': ' + reason if reason else ''}); "
            f"bytes {art.size_bytes}-{max(art.size_bytes, view.start)} are not stored"
        )
    if reason and not prefix:
        parts.append(f"artifact unavailable: {reason}")
    elif art is not None:
        grep = call("artifact_grep", id=art.id, pattern="<regex>")
        parts.append(f"read more: {_read_more(art.id, art.size_bytes, view)}, or search: {grep}")
    return "[" + "; ".join(parts) + "]"


def _read_more(artifact_id: str, stored: int, view: StreamView) -> str:
    """The call that reads on from what is shown: the window just before the shown
    tail (or, after a head, the gap's start), so the reader meets what it saw
    exactly; binary output as hex."""
    if view.binary:
        return hex_call(artifact_id, 0)
    if view.head_end:
        return call("artifact_read", id=artifact_id, offset=view.head_end)
    if view.max_lines and view.first_line > 1 and view.start <= stored:
        # A client that cuts by lines reads on by lines: those just before these.
        first = max(1, view.first_line - view.max_lines)
        lines = call(
            "artifact_read", id=artifact_id, start_line=first, line_count=view.first_line - first
        )
        return f"{lines} (the lines just before these)"
    end = min(view.start, stored)
    begin = max(0, end - READ_WINDOW)
    if end <= 0:
        return call("artifact_read", id=artifact_id, offset=0)
    which = "the bytes just before these" if end == view.start else "the last bytes stored"
    return f"{call('artifact_read', id=artifact_id, offset=begin, limit=end - begin)} ({which})"


def _head_and_tail(view: StreamView) -> str:
    """The lines and bytes a head and a tail show."""
    head = lines_span(1, view.head_lines) if view.head_lines else ""
    if view.head_cut_line:
        cut = f"the start of line {view.head_lines + 1}"
        head = f"{head} and {cut}" if head else cut
    tail = lines_span(view.first_line, view.last_line)
    if view.mid_line:
        tail = f"{tail} from byte {view.start}"
    return f"{head} (bytes 0-{view.head_end}) and {tail} (bytes {view.start}-{view.end})"


def _between(view: StreamView) -> str:
    """What lies between a head and a tail."""
    first = view.head_lines + 1
    said = []
    if view.head_cut_line:
        said.append(f"the rest of line {first}")
        first += 1
    last = view.first_line - (0 if view.mid_line else 1)
    if first <= last:
        said.append(lines_span(first, last))
    said.append(f"bytes {view.head_end}-{view.start}")
    return ", ".join(said)


def status_markers(
    *, exit_code: int | None, signal: str | None, timed_out: bool, timeout_ms: float | None
) -> list[str]:
    """The marker lines that end a rendered result (none for a plain exit 0)."""
    markers = []
    if timed_out:
        markers.append(f"[timed out after {_ms(timeout_ms)}ms]")
    if signal:
        markers.append(f"[killed by signal: {signal}]")
    elif exit_code not in (0, None):
        markers.append(f"[exit code: {exit_code}]")
    return markers


def dropped_line(
    missing: list[tuple[str, tuple[int, int], str | None, str | None]],
    paths: list[str],
    mode: RenderMode,
) -> str:
    """The lossy-read line. Its prefix is the legacy one (``…memory; full output: ``);
    the artifact form adds each stream's missing bytes and where they are."""
    where = ", ".join(paths) if paths else "(unavailable)"
    line = f"[some output was dropped from memory; full output: {where}"
    if mode == "legacy":
        return line + "]"
    for stream, (lo, hi), art, error in missing:
        if art and not error:
            holder = f"in artifact {art}: {call('artifact_read', id=art, offset=lo)}"
        else:
            reason = (error or "no artifact").replace("\n", " ").replace("]", ")")
            holder = f"not stored: {reason}"
        line += f"; {stream} bytes {lo}-{hi} not shown ({holder})"
    return line + "]"


def _ms(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else str(value)


# -- the failure-like lines quoted from the part not shown ---------------------------------

END_OF_QUOTES = "[end of the quoted lines; the output goes on]"


def quotes(
    rows: list[tuple[int, str]], unseen: int, part: str, grep: str, *, counted: int | None
) -> str:
    """The lines quoted from the part not shown (``part`` names it), each with its
    number, between a line that counts them all (``counted``: where the count
    stopped, if it did) and one that ends them."""
    if counted is not None:
        head = (
            f"[failure-like lines: {counted} or more in the output (counting stopped "
            f"there); the first {len(rows)} of {part} quoted below; "
        )
    else:
        which = "quoted below" if len(rows) == unseen else f"the first {len(rows)} quoted below"
        head = f"[failure-like lines in {part}: {unseen}, {which}; "
    body = "".join(f"line {n}: {text}\n" for n, text in rows)
    return f"{head}every such line: {grep}]\n{body}{END_OF_QUOTES}\n"


# -- the harnesses' hooks: notes beside an answer the harness made -----------------------


def not_kept(failed: list[tuple[str, str]]) -> str:
    """A hook's note when an output it was to store could not be."""
    said = "; ".join(f"{art} could not be stored ({why})" for art, why in failed)
    return f"[overspill: {said}; only the part shown above was kept]"


def gemini_stored(art: str, total: object, lines: object, state: str) -> str:
    """Gemini CLI's note: where the whole of the output it cut is, and how to read it.
    No "<regex>" placeholder: Gemini CLI escapes angle brackets in a hook's note."""
    read = call("artifact_read", id=art, offset=0)
    return (
        f"[overspill: this output as Gemini CLI handed it over ({total} bytes, {lines} "
        f"lines) is {state} as artifact {art}; read it: {read} (continue at the offset each "
        "answer gives), or search it with artifact_grep and this id]"
    )


# -- the artifact tools' answers ----------------------------------------------------------


LINE_CAP = 2_000  # a grep line longer than this is shown as a window around the match


def coverage_of(w: Window) -> str:
    """Whether what is stored is the whole output, and if not, what is missing."""
    return coverage(w.state, w.size_bytes, w.total_bytes, w.error)


def info_coverage(i: ArtifactInfo) -> str:
    return coverage(i.state, i.size_bytes, i.total_bytes, i.error)


def end_of(w: Window, again: str) -> str:
    return end_of_stored(w.state, w.size_bytes, w.total_bytes, w.error, again)


def searched_all(res: Window, again: str) -> str:
    return searched(res.state, res.size_bytes, res.total_bytes, res.error, again)


def line_span(first: int, last: int, text: str, end: int, size: int) -> str:
    if last < first:
        return ""
    more = f", line {last} continues" if end < size and not text.endswith("\n") else ""
    return f", lines {first}-{last}{more}" if last > first else f", line {first}{more}"


def grep_row(art: str, ln: Line, mark: str, span: tuple[int, int] | None) -> str:
    """One grep row: the whole line, or for a line longer than ``LINE_CAP`` a window
    around the match that says which bytes of the artifact it shows and the call
    that reads the line whole."""
    text = ln.text
    if len(text.encode()) <= LINE_CAP and not ln.truncated:
        return f"{ln.number}{mark}{text}"
    lo, hi = span or (0, 0)
    room = LINE_CAP // 4
    start = max(0, lo - room)
    piece = text[start : max(hi, lo) + room][: LINE_CAP // 2]
    # Byte offsets in the artifact: the text starts at the line (or at the window
    # the search took of it); characters before the piece are counted in bytes.
    base = ln.window_offset if ln.window_offset is not None else ln.offset
    first = base + len(text[:start].encode())
    last = first + len(piece.encode())
    span_of = f"bytes {ln.offset}-{ln.end}" if ln.end is not None else f"from byte {ln.offset}"
    size = f"{ln.end - ln.offset} bytes, " if ln.end is not None else ""
    whole = call("artifact_read", id=art, offset=ln.offset)
    return (
        f"{ln.number}{mark}{'…' if first > ln.offset else ''}{piece}… [line {ln.number} is "
        f"{size}{span_of}; shown: bytes {first}-{last}; all of it from byte {ln.offset}: {whole}]"
    )


def data(w: Window, start: int, end: int) -> dict[str, Any]:
    return {
        "start": start,
        "end": end,
        "size_bytes": w.size_bytes,
        "total_bytes": max(w.total_bytes, w.size_bytes),
        "state": w.state,
    }


# -- artifact_read: heads and feet ---------------------------------------------------


def continue_with(again: str) -> str:
    return f"[continue: {again}]"


def window_head(art: str, w: TextWindow, lines: str) -> str:
    """A byte window: its bytes, its lines, a character it starts inside of."""
    split = (
        f"; it starts inside a character: its first {count(w.split_start, 'byte')} show as \ufffd"
        if w.split_start
        else ""
    )
    return (
        f"[{art}: bytes {w.offset}-{w.next_offset} of {w.size_bytes} stored{lines}{split}; "
        f"{coverage_of(w)}]"
    )


def hex_head(art: str, start: int, end: int, info: ArtifactInfo) -> str:
    return (
        f"[{art}: bytes {start}-{end} of {info.size_bytes} stored, as hex; {info_coverage(info)}]"
    )


def no_such_line(art: str, number: int, w: LineWindow) -> str:
    return (
        f"[{art}: there is no line {number}; the stored bytes hold {w.line_count} lines; "
        f"{coverage_of(w)}]"
    )


def lines_head(art: str, first: int, last: int, w: LineWindow, start: int, end: int) -> str:
    span = lines_span(first, last)
    return f"[{art}: {span} of {w.line_count} stored (bytes {start}-{end}); {coverage_of(w)}]"


def long_line_head(art: str, line: Line, end: int, w: TextWindow) -> str:
    return (
        f"[{art}: line {line.number} is {end - line.offset} bytes (bytes {line.offset}-{end}), "
        f"longer than one answer; shown bytes {w.offset}-{w.next_offset} of it; {coverage_of(w)}]"
    )


def long_line_foot(rest: str, following: str) -> str:
    return f"[continue this line: {rest}; or skip to the next line: {following}]"


def tail_lines(t: TailWindow) -> str:
    """Which lines a tail shows (the end of a line it starts inside of)."""
    if t.first_line is None and t.offset > 0:
        more = f" and lines {t.line + 1}-{t.last_line}" if t.last_line > t.line else ""
        return f", the end of line {t.line}{more}"
    return f", {lines_span(t.line, t.last_line)}" if t.last_line >= t.line else ""


def tail_fewer(asked: int, whole: int, within: str) -> str:
    """Why a tail holds fewer whole lines than were asked for."""
    return f" (fewer than the {asked} lines asked: {count(max(0, whole), 'whole line')} fit in {within})"


def tail_head(art: str, t: TailWindow, fewer: str) -> str:
    size = t.size_bytes
    return (
        f"[{art}: the last {size - t.offset} bytes (bytes {t.offset}-{size} of {size} "
        f"stored{tail_lines(t)}){fewer}; {coverage_of(t)}]"
    )


def tail_foot(t: TailWindow, earlier: str, just_before: str) -> str:
    return (
        f"[bytes 0-{t.offset} are not shown; from the start: {earlier}; "
        f"just before this: {just_before}]"
    )


# -- artifact_grep, artifact_info, artifact_list, artifact_save ----------------------


def grep_full(found: str, scanned_from: int, resume: int, again: str) -> str:
    return (
        f"[{found} shown, bytes {scanned_from}-{resume} searched; the answer is full; "
        f"continue: {again}]"
    )


def grep_stopped(found: str, scanned_from: int, next_offset: int, why: str, again: str) -> str:
    return f"[{found} in bytes {scanned_from}-{next_offset}; {why}; continue: {again}]"


def grep_done(found: str, scanned_from: int, next_offset: int, done: str) -> str:
    return f"[{found} in bytes {scanned_from}-{next_offset}; {done}]"


def info_reads(artifact_id: str) -> str:
    return (
        f"[read: {call('artifact_read', id=artifact_id, offset=0)} or "
        f"{call('artifact_read', id=artifact_id, tail_lines=50)}; search: "
        f"{call('artifact_grep', id=artifact_id, pattern='<regex>')}]"
    )


def list_empty(scope: str, more_gone: str) -> str:
    return f"[no stored outputs in {scope}{more_gone}]"


def list_head(n: int, noun: str, scope: str, more_gone: str) -> str:
    return f"[{count(n, noun[:-1], noun)} in {scope}, newest first{more_gone}]"


def list_more(again: str) -> str:
    return f"[more: {again}]"


LIST_END = "[end of list]"


def saved_head(saved_id: str, nbytes: int, lines: int, hint: str) -> str:
    return f"[saved as {saved_id}: {nbytes} bytes, {lines} lines; {hint}]"


def outputs_searched(outputs: int, scope: str, nbytes: int) -> str:
    return f"{count(outputs, 'output')} of {scope} searched ({count(nbytes, 'byte')})"


def search_full(found: str, again: str) -> str:
    return f"[{found} shown; the answer is full; continue: {again}]"


def search_stopped(found: str, searched_: str, where: str, why: str, again: str) -> str:
    return f"[{found}; {searched_}, stopped in {where}: {why}; continue: {again}]"


def search_done(found: str | None, searched_: str) -> str:
    """Every output searched to its end (``found`` None: no line matched)."""
    return f"[{found or 'no matching line'}; {searched_}; every output searched to its end]"


# -- the bash tools ---------------------------------------------------------------------


def job_started(job_id: str) -> str:
    return (
        f"started background job {job_id}\n"
        f"[read its output: {call('bash_output', job_id=job_id)}; stop it: "
        f"{call('bash_kill', job_id=job_id)}]"
    )


def job_running(job_id: str) -> str:
    return f"[job {job_id} is still running; read on: {call('bash_output', job_id=job_id)}]"


def job_ended(job_id: str) -> str:
    return f"[job {job_id} has ended]"


def job_stopped(job_id: str, signalled: bool, ended: bool) -> str:
    """What ``bash_kill`` says: whether it stopped the job, and where its output is."""
    text = f"job {job_id} {'stopped' if signalled else 'had already ended'}"
    if ended:
        text += f"\n[its output: {call('bash_output', job_id=job_id)}]"
    return text
