"""The artifact tools' handlers: ``ArtifactTools.handle(name, arguments)`` checks
the arguments against the schema it published, runs the read through a
``StoreClient`` (the store in this process, or a server) and puts the answer
together from the sentences of ``shell.wording``.

Every answer says exactly what it shows (bytes and lines), whether the reader
has now seen the end of the *output* (not only of what is stored: a capped or
failed artifact holds less than was produced), and the exact call that
continues it, written as ``tool {JSON}`` so it works when copied.

The handlers decide what to read and in which bounds; every sentence of the
answers is in ``shell.wording``, with every other sentence a model reads.
About 530 lines because the tools share one class, its
composing helpers and its argument checks: apart, each tool would re-import
them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from overspill.artifacts import bounds as b
from overspill.artifacts.errors import Gone, OverspillError
from overspill.artifacts.grep.grep_groups import Groups, Row
from overspill.artifacts.queries import GrepQuery, LineQuery, ListQuery, TailQuery, TextQuery
from overspill.artifacts.records import ArtifactInfo, Line, Window
from overspill.shell import wording
from overspill.shell.wording import (
    call,
    count,
    data,
    end_of,
    end_of_stored,
    grep_row,
    info_coverage,
    line_span,
    redaction_note,
    searched_all,
    tool_error,
)

from ...client.api import StoreClient
from .arguments import ToolArgumentError, check_arguments, query_of
from .schemas import (
    DEFAULT_CHARS,
    MAX_CHARS,
    save_definition,
    tool_definitions,
)
from .search import search_answer

_HEX_ROW = 79  # characters of one hexdump row (16 bytes) and its newline


def _hex_row(offset: int, chunk: bytes) -> str:
    hexed = " ".join(f"{b:02x}" for b in chunk)
    hexed = (hexed[:23] + " " + hexed[23:]) if len(chunk) > 8 else hexed
    text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
    return f"{offset:08x}  {hexed:<48}  |{text}|"


_STOPPED = {
    "max_matches": "max_matches reached",
    "answer_full": "the answer is full",
    "scan_limit": "the search scanned as much as one call may",
    "time_budget": "the search used its time budget",
}


def _list_row(i: ArtifactInfo, same_run: list[ArtifactInfo]) -> str:
    src = i.source
    what = " ".join(str(src.get("command") or i.name or src.get("tool") or "").split())
    if len(what) > 80:
        what = what[:77] + "..."
    stream = f" {src['stream']}" if src.get("stream") else ""
    state = i.state
    if i.state in ("deleted", "expired"):
        when = i.deleted_at or i.expires_at
        state += f" {when:%Y-%m-%d %H:%M} UTC" if when else ""
        state += f" ({i.delete_reason})" if i.delete_reason else ""
    exit_ = ""
    if "exit_code" in src and src["exit_code"] is not None:
        exit_ = f" exit {src['exit_code']}"
    elif src.get("signal"):
        exit_ = f" killed by {src['signal']}"
    if src.get("timed_out"):
        exit_ += " timed out"
    pair = "".join(f"; same run: {o.source.get('stream')} {o.id}" for o in same_run if o.id != i.id)
    return (
        f"{i.id}{stream} {count(i.size_bytes, 'byte')} {count(i.line_count, 'line')} {state}"
        f"{exit_} {i.created_at:%Y-%m-%d %H:%M:%S} UTC: {what}{pair}"
    )


def _grep_rows(art: str, rows: list[Row[Line]], spans: dict[int, Any]) -> str:
    text = []
    for row in rows:
        if row.gap_before:
            text.append("--\n")
        mark = ":" if row.is_match else "-"
        text.append(grep_row(art, row.line, mark, spans.get(row.number) if row.is_match else None))
        text.append("\n")
    return "".join(text)


def _exit_words(src: dict[str, Any]) -> str:
    """How the command ended, in words (never a Python ``None``)."""
    if src.get("signal"):
        words = [f"killed by signal {src['signal']}"]
    elif src.get("exit_code") is not None:
        words = [f"code {src['exit_code']}"]
    else:
        words = ["no exit status (the command did not finish)"]
    if src.get("timed_out"):
        words.append("timed out")
    return ", ".join(words)


class ToolResult(NamedTuple):
    text: str
    is_error: bool = False
    data: dict[str, Any] = {}


class ArtifactTools:
    """The tool handlers over one StoreClient, as one principal.

    ``session_id`` scopes ``artifact_list``; a ``saver`` (``ResultSaver``) enables
    ``artifact_save``.
    """

    def __init__(
        self,
        backend: StoreClient,
        *,
        max_chars: int = DEFAULT_CHARS,
        max_lines: int | None = None,
        session_id: str | None = None,
        saver: Any = None,
        failure_patterns: str | None = None,
    ) -> None:
        self._backend = backend
        # What ``failures: true`` searches for: this side's OVERSPILL_FAILURE_PATTERNS
        # (None: the default), the lines a truncated output's quotes counted.
        self._failure_patterns = failure_patterns
        self._max = min(max_chars, MAX_CHARS)
        # Where the client cuts answers by lines too (opencode), none shows more.
        self._max_lines = max_lines
        self._session = session_id
        self._saver = saver
        self._schemas = {d["name"]: d["input_schema"] for d in self.definitions()}

    def definitions(self) -> list[dict[str, Any]]:
        """The schemas as this instance enforces them (byte bounds = its answer size)."""
        defs = tool_definitions(self._max)
        return defs + ([save_definition()] if self._saver is not None else [])

    def handle(self, name: str, arguments: object) -> ToolResult:
        """Run one tool call. Bad arguments and store errors come back as text."""
        handlers = {
            "artifact_read": self._read,
            "artifact_grep": self._grep,
            "artifact_search": self._search,
            "artifact_info": self._info,
            "artifact_list": self._list,
            "artifact_save": self._save,
        }
        schema = self._schemas.get(name)
        if schema is None:
            known = ", ".join(self._schemas)
            return ToolResult(tool_error(f"there is no tool {name[:100]!r}; tools: {known}"), True)
        from overspill.artifacts.ledger.read_context import reading_as

        try:
            args = check_arguments(name, schema, arguments)
            with reading_as(name, self._session):  # the reads it makes, for the ledger
                return handlers[name](args)
        except ToolArgumentError as exc:
            return ToolResult(tool_error(str(exc)), True)
        except Gone as exc:
            return ToolResult(
                tool_error(f"{exc.message}. Its bytes are gone; nothing can be read"), True
            )
        except OverspillError as exc:
            return ToolResult(tool_error(exc.message), True)

    # -- artifact_read ---------------------------------------------------------------

    def _read(self, a: dict[str, Any]) -> ToolResult:
        modes = [k for k in ("offset", "start_line", "tail_lines", "tail_bytes") if k in a]
        if len(modes) > 1:
            raise ToolArgumentError(
                f"give one of offset, start_line, tail_lines or tail_bytes, not {' and '.join(modes)}."
            )
        if "limit" in a and modes and modes[0] != "offset":
            raise ToolArgumentError("'limit' goes with 'offset' (a byte window) only.")
        if "line_count" in a and modes != ["start_line"]:
            raise ToolArgumentError("'line_count' goes with 'start_line' only.")
        if a.get("hex") and modes not in ([], ["offset"]):
            raise ToolArgumentError("'hex' goes with a byte window (offset, limit) only.")
        if "start_line" in a:
            return self._lines(a)
        if "tail_lines" in a or "tail_bytes" in a:
            return self._tail(a)
        if a.get("hex"):
            return self._hex(a, a.get("offset", 0), a.get("limit"))
        return self._bytes(a, a.get("offset", 0), a.get("limit"))

    def _bytes(self, a: dict[str, Any], offset: int, limit: int | None) -> ToolResult:
        art = a["id"]
        w = self._backend.text(
            art, query_of(TextQuery, a, offset=offset, limit=min(limit or self._max, self._max))
        )
        cap = self._max_lines
        while cap is not None and w.text.count("\n") > cap and w.next_offset > w.offset + 1:
            # Fewer bytes, so that the window holds no more lines than the client keeps.
            kept = len("\n".join(w.text.split("\n")[:cap]).encode()) + 1
            fewer = TextQuery(offset=offset, limit=min(kept, w.next_offset - w.offset - 1))
            w = self._backend.text(art, fewer)
        lines = line_span(w.first_line, w.last_line, w.text, w.next_offset, w.size_bytes)
        head = wording.window_head(art, w, lines)
        nxt = {"id": art, "offset": w.next_offset, "limit": limit}
        if not w.eof:
            foot = wording.continue_with(call("artifact_read", **nxt))
        else:
            foot = end_of(w, call("artifact_read", **nxt))
        return ToolResult(f"{head}\n{w.text}\n{foot}", data=data(w, w.offset, w.next_offset))

    def _hex(self, a: dict[str, Any], offset: int, limit: int | None) -> ToolResult:
        """A byte window as ``hexdump -C`` shows it: 16 bytes a row, offsets, the
        bytes in hex and as ASCII; as many rows as fit in one answer."""
        art = a["id"]
        info = self._backend.get(art)
        room = max(16, self._max // _HEX_ROW * 16)
        if self._max_lines is not None:
            room = min(room, max(16, self._max_lines * 16))
        size = info.size_bytes
        start = min(offset, size)
        end = min(size, start + min(limit or room, room))
        raw = b"".join(self._backend.iter_content(art, start, end)) if end > start else b""
        rows = [_hex_row(start + i, raw[i : i + 16]) for i in range(0, len(raw), 16)]
        head = wording.hex_head(art, start, end, info)
        nxt = {"id": art, "offset": end, "limit": limit, "hex": True}
        if end < size:
            foot = wording.continue_with(call("artifact_read", **nxt))
        else:
            foot = end_of_stored(
                info.state, size, info.total_bytes, info.error, call("artifact_read", **nxt)
            )
        body = "\n".join(rows)
        facts = data(
            Window(state=info.state, size_bytes=size, total_bytes=info.total_bytes), start, end
        )
        return ToolResult(f"{head}\n{body}\n{foot}" if body else f"{head}\n{foot}", data=facts)

    def _lines(self, a: dict[str, Any]) -> ToolResult:
        art, start = a["id"], a["start_line"]
        count = a.get("line_count", 200)
        if self._max_lines is not None:
            count = min(count, self._max_lines)
        query = query_of(LineQuery, a, start=start, count=count, max_bytes=self._max + 1)
        w = self._backend.lines(art, query)
        if not w.lines:
            head = wording.no_such_line(art, start, w)
            again = call("artifact_read", id=art, start_line=start, line_count=a.get("line_count"))
            return ToolResult(
                head + ("\n" + end_of(w, again) if w.state == "writing" else ""),
                data=data(w, w.next_offset, w.next_offset),
            )
        ends = [ln.offset for ln in w.lines[1:]] + [w.next_offset]
        shown: list[Line] = []
        used = 0
        for ln, end in zip(w.lines, ends, strict=True):
            size = end - ln.offset
            if ln.truncated or used + size > self._max:
                break
            shown.append(ln)
            used += size
        if not shown:  # the first line alone is longer than one answer
            return self._long_line(a, w.lines[0], ends[0], w)
        last = shown[-1].number
        end_offset = ends[len(shown) - 1]
        head = wording.lines_head(art, start, last, w, shown[0].offset, end_offset)
        body = "\n".join(ln.text for ln in shown)
        nxt = call("artifact_read", id=art, start_line=last + 1, line_count=a.get("line_count"))
        if end_offset >= w.size_bytes:
            foot = end_of(w, nxt)
        else:
            foot = wording.continue_with(nxt)
        return ToolResult(f"{head}\n{body}\n{foot}", data=data(w, shown[0].offset, end_offset))

    def _long_line(self, a: dict[str, Any], line: Line, end: int, lw: Window) -> ToolResult:
        art = a["id"]
        w = self._backend.text(art, TextQuery(offset=line.offset, limit=self._max))
        head = wording.long_line_head(art, line, end, w)
        rest = call("artifact_read", id=art, offset=w.next_offset)
        following = call(
            "artifact_read", id=art, start_line=line.number + 1, line_count=a.get("line_count")
        )
        foot = wording.long_line_foot(rest, following)
        return ToolResult(f"{head}\n{w.text}\n{foot}", data=data(w, w.offset, w.next_offset))

    def _tail(self, a: dict[str, Any]) -> ToolResult:
        art = a["id"]
        cap = self._max_lines
        if "tail_bytes" in a:
            t = self._backend.tail(
                art, query_of(TailQuery, a, bytes=a["tail_bytes"], max_bytes=self._max)
            )
            if cap is not None and t.text.count("\n") > cap:  # the client keeps fewer lines
                t = self._backend.tail(art, query_of(TailQuery, a, lines=cap, max_bytes=self._max))
        else:
            lines = a["tail_lines"] if cap is None else min(a["tail_lines"], cap)
            t = self._backend.tail(art, query_of(TailQuery, a, lines=lines, max_bytes=self._max))
        size = t.size_bytes
        fewer = ""
        whole = t.last_line - (t.line if t.first_line is None else t.line - 1)
        if "tail_lines" in a and t.offset > 0 and whole < a["tail_lines"]:
            within = f"{self._max} bytes"
            if cap is not None and whole >= cap:
                within = f"the {cap} lines one answer of this client holds"
            fewer = wording.tail_fewer(a["tail_lines"], whole, within)
        head = wording.tail_head(art, t, fewer)
        if t.offset > 0:
            earlier = call("artifact_read", id=art, offset=0)
            before = max(0, t.offset - self._max)
            just_before = call("artifact_read", id=art, offset=before, limit=t.offset - before)
            foot = wording.tail_foot(t, earlier, just_before)
        else:
            foot = end_of(t, call("artifact_read", id=art, offset=size))
        return ToolResult(f"{head}\n{t.text}\n{foot}", data=data(t, t.offset, size))

    # -- artifact_grep ---------------------------------------------------------------

    def _grep(self, a: dict[str, Any]) -> ToolResult:
        """Rows as ``grep -n -C`` prints them (groups merged, every line once, a match
        as a match), cut at a match when the answer is full, and a footer that says
        how far the search got, why it stopped, and the call that goes on."""
        art = a["id"]
        context = a.get("context", 0)
        query = query_of(
            GrepQuery,
            a,
            pattern=self._grep_pattern(a),
            max_matches=a.get("max_matches", b.DEFAULT_TOOL_GREP_MATCHES),
        )
        res = self._backend.grep(art, query)
        groups: Groups[Line] = Groups(lambda ln: ln.number, context=context)
        spans = {m.line.number: (m.spans[0] if m.spans else None) for m in res.matches}
        out: list[str] = []
        used = shown = rows = 0
        cap = self._max_lines
        for m in res.matches:
            text = _grep_rows(art, groups.peek(m.line, m.before), spans)
            more = text.count("\n") + len(m.after)
            if shown and (
                used + len(text.encode()) > self._max or (cap is not None and rows + more > cap)
            ):
                break
            groups.take(m.line, m.before, m.after)
            out.append(text)
            used += len(text.encode())
            rows += more
            shown += 1
        cut = shown < len(res.matches)
        out.append(
            _grep_rows(art, groups.finish(res.matches[shown].line.number if cut else None), spans)
        )
        body = "".join(out)
        again = {k: v for k, v in a.items() if k != "offset"}
        found = count(shown, "match", "matches")
        if cut:
            # On from the first line of the cut match's leading context that no row
            # above showed (from the match line, that context was never shown).
            nxt = res.matches[shown]
            last = max(
                (ln.number for m in res.matches[:shown] for ln in [m.line, *m.after]),
                default=0,
            )
            unseen = [ln for ln in nxt.before if ln.number > last]
            resume = unseen[0].offset if unseen else nxt.line.offset
            again_at = call("artifact_grep", **again, offset=resume)
            foot = wording.grep_full(found, res.scanned_from, resume, again_at)
        elif res.truncated:
            why = _STOPPED.get(res.stopped or "", "the search stopped there")
            again_at = call("artifact_grep", **again, offset=res.next_offset)
            foot = wording.grep_stopped(found, res.scanned_from, res.next_offset, why, again_at)
        else:
            done = searched_all(res, call("artifact_grep", **again, offset=res.next_offset))
            foot = wording.grep_done(found, res.scanned_from, res.next_offset, done)
        facts = {**data(res, res.scanned_from, res.next_offset), "matches": shown}
        return ToolResult(body + foot, data=facts)

    def _grep_pattern(self, a: dict[str, Any]) -> str:
        """The pattern asked for, or the failure patterns' (exactly one of them)."""
        if a.get("failures"):
            if "pattern" in a:
                raise ToolArgumentError(
                    "artifact_grep takes a pattern or failures: true, not both."
                )
            from overspill.shell.config import DEFAULT_FAILURE_PATTERNS
            from overspill.shell.failures import joined_pattern

            setting = self._failure_patterns
            pattern = joined_pattern(DEFAULT_FAILURE_PATTERNS if setting is None else setting)
            if pattern is None:
                raise ToolArgumentError(
                    "failure-like lines are not looked for here (OVERSPILL_FAILURE_PATTERNS "
                    "is empty); give a pattern."
                )
            return pattern
        if "pattern" not in a:
            raise ToolArgumentError("artifact_grep needs a 'pattern' (or failures: true).")
        return str(a["pattern"])

    # -- artifact_search -----------------------------------------------------------------

    def _search(self, a: dict[str, Any]) -> ToolResult:
        text, facts = search_answer(self._backend, a, session_id=self._session, max_chars=self._max)
        return ToolResult(text, data=facts)

    # -- artifact_info / artifact_list / artifact_save ---------------------------------

    def _info(self, a: dict[str, Any]) -> ToolResult:
        i = self._backend.get(a["id"])
        rows = [f"id: {i.id}", f"state: {i.state}; {info_coverage(i)}"]
        src = i.source
        if src.get("tool") and src.get("tool") != "bash":
            rows.append(f"tool: {src['tool']}")
        if i.name:
            rows.append(f"name: {i.name}")
        if src.get("command"):
            rows.append(f"command: {src['command']}")
        if src.get("cwd"):
            rows.append(f"cwd: {src['cwd']}")
        if src.get("stream"):
            rows.append(f"stream: {src['stream']}")
        if "exit_code" in src or src.get("signal") or src.get("timed_out"):
            rows.append("exit: " + _exit_words(src))
        redacted = redaction_note(src.get("redactions"))
        if redacted:
            rows.append(f"redacted: {redacted}")
        gone = i.state in ("deleted", "expired")
        rows.append(
            f"size: {count(i.size_bytes, 'byte')} {'were stored' if gone else 'stored'} of "
            f"{i.total_bytes} produced, {count(i.line_count, 'line')}"
            + ("; none of it can be read now" if gone else "")
        )
        rows.append(f"created: {i.created_at:%Y-%m-%d %H:%M:%S} UTC")
        if i.completed_at:
            rows.append(f"finished: {i.completed_at:%Y-%m-%d %H:%M:%S} UTC")
        if gone:
            when = i.deleted_at or i.expires_at
            at = f" at {when:%Y-%m-%d %H:%M:%S} UTC" if when else ""
            rows.append(
                f"gone: {i.state}{at} ({i.delete_reason or i.state}); "
                "its bytes are removed and cannot be read"
            )
            return ToolResult("\n".join(rows), data={"id": i.id, "state": i.state})
        rows.append(
            "expires: "
            + (
                "never (pinned)"
                if i.pinned
                else f"{i.expires_at:%Y-%m-%d %H:%M:%S} UTC"
                if i.expires_at
                else "never"
            )
        )
        sibling = self._sibling(i)
        if sibling:
            rows.append(f"other stream of the same run: {sibling}")
        rows.append(wording.info_reads(i.id))
        return ToolResult("\n".join(rows), data={"id": i.id, "state": i.state})

    def _sibling(self, i: ArtifactInfo) -> str | None:
        run_id, stream = i.source.get("run_id"), i.source.get("stream")
        if not run_id or not stream:
            return None
        page = self._backend.list(ListQuery(session_id=i.session_id, limit=20, include_gone=True))
        for other in page.items:
            if other.id != i.id and other.source.get("run_id") == run_id:
                return f"{other.source.get('stream')} {other.id} ({other.state}, {other.size_bytes} bytes)"
        return None

    def _list(self, a: dict[str, Any]) -> ToolResult:
        """Newest first, each row with its stream, size, state (how a gone one went),
        exit status and the other stream of the same run; hidden deleted and
        expired outputs are counted, with the call that lists them."""
        session = None if a.get("all_sessions") else self._session
        limit = a.get("limit", 20)
        gone = bool(a.get("include_gone"))
        page = self._backend.list(
            ListQuery(session_id=session, limit=limit, cursor=a.get("cursor"), include_gone=gone)
        )
        hidden = 0
        if not gone and not a.get("cursor"):
            every = self._backend.list(ListQuery(session_id=session, limit=1, include_gone=True))
            hidden = max(0, (every.total_count or 0) - (page.total_count or 0))
        scope = f"session {session}" if session else "all your sessions"
        more_gone = ""
        if hidden:
            also = call("artifact_list", all_sessions=a.get("all_sessions"), include_gone=True)
            more_gone = f"; {count(hidden, 'deleted or expired output')} not listed: {also}"
        if not page.items:
            return ToolResult(wording.list_empty(scope, more_gone), data={"items": []})
        noun = "outputs" if gone else "stored outputs"
        rows = [wording.list_head(len(page.items), noun, scope, more_gone)]
        by_run: dict[str, list[ArtifactInfo]] = {}
        for i in page.items:
            if i.source.get("run_id"):
                by_run.setdefault(str(i.source["run_id"]), []).append(i)
        for i in page.items:
            rows.append(_list_row(i, by_run.get(str(i.source.get("run_id")), [])))
        if page.next_cursor:
            more = {
                "all_sessions": a.get("all_sessions"),
                "include_gone": a.get("include_gone"),
                "limit": a.get("limit"),
                "cursor": page.next_cursor,
            }
            rows.append(wording.list_more(call("artifact_list", **more)))
        else:
            rows.append(wording.LIST_END)
        return ToolResult("\n".join(rows), data={"items": [i.id for i in page.items]})

    def _save(self, a: dict[str, Any]) -> ToolResult:
        saved = self._saver.save(
            a["content"],
            tool=a.get("tool", "artifact_save"),
            name=a.get("name"),
            media_type=a.get("media_type", "text/plain; charset=utf-8"),
            budget=a.get("budget"),  # unset: the tool's own, from the settings
        )
        if saved.id is None:
            return ToolResult(tool_error(saved.error or "storage failed"), True)
        head = wording.saved_head(saved.id, saved.bytes, saved.lines, saved.retrieval_hint)
        return ToolResult(f"{head}\n{saved.preview}", data=saved.model_dump(mode="json"))
