"""Model-facing tools: JSON-schema definitions and handlers.

Every answer says exactly what it shows (bytes and lines), whether the reader has
now seen the end of the *output* (not only of what is stored: a capped or failed
artifact holds less than was produced), and the exact call that continues it,
written as ``tool {JSON}`` so it works when copied. Handlers enforce the schemas
they publish. They work over any Backend: the store in-process, or a server
through the HTTP client.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from overspill.api.backend import Backend
from overspill.api.tool_args import ToolArgumentError, check_arguments
from overspill.artifacts.errors import Gone, OverspillError
from overspill.artifacts.queries import GrepQuery, LineQuery, ListQuery
from overspill.artifacts.records import ArtifactInfo, Line, Window
from overspill.shell.calls import call

DEFAULT_CHARS = 16_000
MAX_CHARS = 64_000
LINE_CAP = 2_000  # a grep line longer than this is shown as a window around the match

_ID = {
    "type": "string",
    "maxLength": 200,
    "description": "The artifact id (art_…) from an output marker or an earlier answer; "
    "artifact://art_… and any letter case are accepted.",
}

TOOL_DEFINITIONS: list[dict[str, Any]] = [
    {
        "name": "artifact_read",
        "description": (
            "Read part of a stored output. Give a byte window (offset, limit), a line window "
            "(start_line, line_count) or a tail (tail_lines or tail_bytes); one of them. The "
            "answer states the bytes and lines it shows, whether the whole output is stored, "
            "and the exact call that continues."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "id": _ID,
                "offset": {"type": "integer", "minimum": 0, "description": "Byte offset"},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_CHARS,
                    "description": f"Bytes to read (default and most: the answer size, "
                    f"{DEFAULT_CHARS} unless configured)",
                },
                "start_line": {"type": "integer", "minimum": 1, "description": "1-based line"},
                "line_count": {"type": "integer", "minimum": 1, "maximum": 2000},
                "tail_lines": {"type": "integer", "minimum": 1, "maximum": 2000},
                "tail_bytes": {"type": "integer", "minimum": 1, "maximum": MAX_CHARS},
            },
            "required": ["id"],
            "additionalProperties": False,
        },
    },
    {
        "name": "artifact_grep",
        "description": (
            "Search a stored output with a regular expression (RE2 syntax, linear time). "
            "Returns matching lines with line numbers and optional context, and the exact "
            "call that resumes when the search stopped early."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "id": _ID,
                "pattern": {"type": "string", "minLength": 1, "maxLength": 1000},
                "ignore_case": {"type": "boolean"},
                "fixed_string": {"type": "boolean", "description": "Match the pattern literally"},
                "context": {"type": "integer", "minimum": 0, "maximum": 20},
                "max_matches": {"type": "integer", "minimum": 1, "maximum": 500},
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Resume a search at this byte (from a previous answer)",
                },
            },
            "required": ["id", "pattern"],
            "additionalProperties": False,
        },
    },
    {
        "name": "artifact_info",
        "description": (
            "What a stored output is: command, stream, size, lines, state (and whether the "
            "whole output is stored), times, expiry and the other stream of the same run."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"id": _ID},
            "required": ["id"],
            "additionalProperties": False,
        },
    },
    {
        "name": "artifact_list",
        "description": (
            "List stored outputs, newest first: of this session by default, or of every "
            "session of yours. Use it to find an id again after it left the context."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "all_sessions": {"type": "boolean"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "cursor": {"type": "string", "maxLength": 500},
            },
            "additionalProperties": False,
        },
    },
]

SAVE_DEFINITION: dict[str, Any] = {
    "name": "artifact_save",
    "description": (
        "Store a result that is too big to keep in the conversation (a fetched page, a file, "
        "another tool's answer). Returns its id, a head/tail preview and how to read the rest."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "content": {"type": "string", "description": "The text to store"},
            "tool": {"type": "string", "maxLength": 100, "description": "What produced it"},
            "name": {"type": "string", "maxLength": 500, "description": "A suggested name"},
            "media_type": {"type": "string", "maxLength": 200},
            "budget": {
                "type": "integer",
                "minimum": 2_000,
                "maximum": 1_000_000,
                "description": "Bytes of preview to return (default 50000)",
            },
        },
        "required": ["content"],
        "additionalProperties": False,
    },
}


@dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool = False
    data: dict[str, Any] = field(default_factory=dict)


class ArtifactTools:
    """The tool handlers over one Backend, as one principal.

    ``session_id`` scopes ``artifact_list``; a ``saver`` (``ResultSaver``) enables
    ``artifact_save``.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        max_chars: int = DEFAULT_CHARS,
        session_id: str | None = None,
        saver: Any = None,
    ) -> None:
        self._backend = backend
        self._max = min(max_chars, MAX_CHARS)
        self._session = session_id
        self._saver = saver
        self._schemas = {d["name"]: d["input_schema"] for d in self.definitions()}

    def definitions(self) -> list[dict[str, Any]]:
        """The schemas as this instance enforces them (byte bounds = its answer size)."""
        defs = copy.deepcopy(TOOL_DEFINITIONS)
        read = defs[0]["input_schema"]["properties"]
        for key in ("limit", "tail_bytes"):
            read[key]["maximum"] = self._max
        read["limit"]["description"] = f"Bytes to read (default and most: {self._max})"
        return defs + ([copy.deepcopy(SAVE_DEFINITION)] if self._saver is not None else [])

    def handle(self, name: str, arguments: object) -> ToolResult:
        """Run one tool call. Bad arguments and store errors come back as text."""
        handlers = {
            "artifact_read": self._read,
            "artifact_grep": self._grep,
            "artifact_info": self._info,
            "artifact_list": self._list,
            "artifact_save": self._save,
        }
        schema = self._schemas.get(name)
        if schema is None:
            return ToolResult(
                f"Error: there is no tool {name!r}; tools: {', '.join(self._schemas)}.", True
            )
        try:
            args = check_arguments(name, schema, arguments)
            return handlers[name](args)
        except ToolArgumentError as exc:
            return ToolResult(f"Error: {exc}", True)
        except Gone as exc:
            return ToolResult(
                f"Error: {exc.message}. Its bytes are gone; nothing can be read.", True
            )
        except OverspillError as exc:
            return ToolResult(f"Error: {_sentence(exc.message)}", True)

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
        if "start_line" in a:
            return self._lines(a)
        if "tail_lines" in a or "tail_bytes" in a:
            return self._tail(a)
        return self._bytes(a, a.get("offset", 0), a.get("limit"))

    def _bytes(self, a: dict[str, Any], offset: int, limit: int | None) -> ToolResult:
        art = a["id"]
        w = self._backend.text(art, offset=offset, limit=limit or self._max)
        lines = _line_span(w.first_line, w.last_line, w.text, w.next_offset, w.size_bytes)
        head = f"[{art}: bytes {w.offset}-{w.next_offset} of {w.size_bytes} stored{lines}; {_coverage(w)}]"
        nxt = {"id": art, "offset": w.next_offset, "limit": limit}
        if not w.eof:
            foot = f"[continue: {call('artifact_read', **nxt)}]"
        else:
            foot = _end(w, call("artifact_read", **nxt))
        return ToolResult(f"{head}\n{w.text}\n{foot}", data=_data(w, w.offset, w.next_offset))

    def _lines(self, a: dict[str, Any]) -> ToolResult:
        art, start = a["id"], a["start_line"]
        count = a.get("line_count", 200)
        w = self._backend.lines(art, LineQuery(start=start, count=count, max_bytes=self._max + 1))
        if not w.lines:
            head = f"[{art}: there is no line {start}; the stored bytes hold {w.line_count} lines; {_coverage(w)}]"
            again = call("artifact_read", id=art, start_line=start, line_count=a.get("line_count"))
            return ToolResult(
                head + ("\n" + _end(w, again) if w.state == "writing" else ""),
                data=_data(w, w.next_offset, w.next_offset),
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
        span = f"lines {start}-{last}" if last > start else f"line {start}"
        head = (
            f"[{art}: {span} of {w.line_count} stored (bytes {shown[0].offset}-"
            f"{end_offset}); {_coverage(w)}]"
        )
        body = "\n".join(ln.text for ln in shown)
        nxt = call("artifact_read", id=art, start_line=last + 1, line_count=a.get("line_count"))
        if end_offset >= w.size_bytes:
            foot = _end(w, nxt)
        else:
            foot = f"[continue: {nxt}]"
        return ToolResult(f"{head}\n{body}\n{foot}", data=_data(w, shown[0].offset, end_offset))

    def _long_line(self, a: dict[str, Any], line: Line, end: int, lw: Window) -> ToolResult:
        art = a["id"]
        w = self._backend.text(art, offset=line.offset, limit=self._max)
        head = (
            f"[{art}: line {line.number} is {end - line.offset} bytes (bytes {line.offset}-{end}), "
            f"longer than one answer; shown bytes {w.offset}-{w.next_offset} of it; {_coverage(w)}]"
        )
        rest = call("artifact_read", id=art, offset=w.next_offset)
        following = call(
            "artifact_read", id=art, start_line=line.number + 1, line_count=a.get("line_count")
        )
        foot = f"[continue this line: {rest}; or skip to the next line: {following}]"
        return ToolResult(f"{head}\n{w.text}\n{foot}", data=_data(w, w.offset, w.next_offset))

    def _tail(self, a: dict[str, Any]) -> ToolResult:
        art = a["id"]
        if "tail_bytes" in a:
            t = self._backend.tail(art, nbytes=a["tail_bytes"], max_bytes=self._max)
        else:
            t = self._backend.tail(art, lines=a["tail_lines"], max_bytes=self._max)
        size = t.size_bytes
        if t.first_line is None and t.offset > 0:
            lines = f", the end of line {t.line}" + (
                f" and lines {t.line + 1}-{t.last_line}" if t.last_line > t.line else ""
            )
        elif t.last_line > t.line:
            lines = f", lines {t.line}-{t.last_line}"
        elif t.last_line == t.line:
            lines = f", line {t.line}"
        else:
            lines = ""
        fewer = ""
        if "tail_lines" in a and t.truncated:
            fewer = f" (fewer than the {a['tail_lines']} lines asked: they do not fit in {self._max} bytes)"
        head = f"[{art}: the last {size - t.offset} bytes (bytes {t.offset}-{size} of {size} stored{lines}){fewer}; {_coverage(t)}]"
        if t.offset > 0:
            earlier = call("artifact_read", id=art, offset=0)
            before = max(0, t.offset - self._max)
            just_before = call("artifact_read", id=art, offset=before, limit=t.offset - before)
            foot = f"[bytes 0-{t.offset} are not shown; from the start: {earlier}; just before this: {just_before}]"
        else:
            foot = _end(t, call("artifact_read", id=art, offset=size))
        return ToolResult(f"{head}\n{t.text}\n{foot}", data=_data(t, t.offset, size))

    # -- artifact_grep ---------------------------------------------------------------

    def _grep(self, a: dict[str, Any]) -> ToolResult:
        art = a["id"]
        context = a.get("context", 0)
        query = GrepQuery(
            pattern=a["pattern"],
            ignore_case=a.get("ignore_case", False),
            fixed=a.get("fixed_string", False),
            context=context,
            max_matches=a.get("max_matches", 50),
            offset=a.get("offset", 0),
        )
        res = self._backend.grep(art, query)
        blocks: list[str] = []
        used = 0
        shown = 0
        for m in res.matches:
            rows = [_grep_row(art, ln, "-", None) for ln in m.before]
            rows.append(_grep_row(art, m.line, ":", m.spans[0] if m.spans else None))
            rows += [_grep_row(art, ln, "-", None) for ln in m.after]
            text = "\n".join(rows)
            if blocks and used + len(text.encode()) > self._max:
                break
            blocks.append(text)
            used += len(text.encode()) + 4
            shown += 1
        again = {k: v for k, v in a.items() if k != "offset"}
        if shown < len(res.matches):
            resume = res.matches[shown].line.offset
            foot = (
                f"[{shown} matches shown (bytes {res.scanned_from}-{resume} searched, the answer "
                f"is full); continue: {call('artifact_grep', **again, offset=resume)}]"
            )
        elif res.truncated:
            foot = (
                f"[{shown} matches in bytes {res.scanned_from}-{res.next_offset}; the search "
                f"stopped there; continue: {call('artifact_grep', **again, offset=res.next_offset)}]"
            )
        else:
            foot = f"[{shown} matches in bytes {res.scanned_from}-{res.next_offset}; {_searched(res, call('artifact_grep', **again, offset=res.next_offset))}]"
        sep = "\n--\n" if context else "\n"
        body = (sep.join(blocks) + "\n") if blocks else ""
        data = {**_data(res, res.scanned_from, res.next_offset), "matches": shown}
        return ToolResult(body + foot, data=data)

    # -- artifact_info / artifact_list / artifact_save ---------------------------------

    def _info(self, a: dict[str, Any]) -> ToolResult:
        i = self._backend.get(a["id"])
        rows = [f"id: {i.id}", f"state: {i.state}; {_info_coverage(i)}"]
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
            rows.append(
                f"exit: code {src.get('exit_code')}, signal {src.get('signal')}, "
                f"timed out {bool(src.get('timed_out', False))}"
            )
        rows.append(
            f"size: {i.size_bytes} bytes stored of {i.total_bytes} produced, {i.line_count} lines"
        )
        rows.append(f"created: {i.created_at:%Y-%m-%d %H:%M:%S} UTC")
        if i.completed_at:
            rows.append(f"finished: {i.completed_at:%Y-%m-%d %H:%M:%S} UTC")
        if i.state in ("deleted", "expired"):
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
        rows.append(
            f"[read: {call('artifact_read', id=i.id, offset=0)} or "
            f"{call('artifact_read', id=i.id, tail_lines=50)}; search: "
            f"{call('artifact_grep', id=i.id, pattern='<regex>')}]"
        )
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
        session = None if a.get("all_sessions") else self._session
        limit = a.get("limit", 20)
        page = self._backend.list(
            ListQuery(session_id=session, limit=limit, cursor=a.get("cursor"))
        )
        scope = f"session {session}" if session else "all your sessions"
        if not page.items:
            return ToolResult(f"[no stored outputs in {scope}]", data={"items": []})
        rows = [f"[{len(page.items)} stored outputs in {scope}, newest first]"]
        for i in page.items:
            src = i.source
            what = src.get("command") or i.name or src.get("tool") or ""
            what = " ".join(str(what).split())
            if len(what) > 80:
                what = what[:77] + "..."
            stream = f" {src['stream']}" if src.get("stream") else ""
            rows.append(
                f"{i.id}{stream} {i.size_bytes} bytes {i.line_count} lines {i.state} "
                f"{i.created_at:%Y-%m-%d %H:%M:%S} UTC: {what}"
            )
        if page.next_cursor:
            more = {
                "all_sessions": a.get("all_sessions"),
                "limit": a.get("limit"),
                "cursor": page.next_cursor,
            }
            rows.append(f"[more: {call('artifact_list', **more)}]")
        else:
            rows.append("[end of list]")
        return ToolResult("\n".join(rows), data={"items": [i.id for i in page.items]})

    def _save(self, a: dict[str, Any]) -> ToolResult:
        saved = self._saver.save(
            a["content"],
            tool=a.get("tool", "artifact_save"),
            name=a.get("name"),
            media_type=a.get("media_type", "text/plain; charset=utf-8"),
            budget=a.get("budget", 50_000),
        )
        if saved.id is None:
            return ToolResult(f"Error: {_sentence(saved.error or 'storage failed')}", True)
        head = f"[saved as {saved.id}: {saved.bytes} bytes, {saved.lines} lines; {saved.retrieval_hint}]"
        return ToolResult(f"{head}\n{saved.preview}", data=saved.model_dump(mode="json"))


# -- the wording shared by every answer ------------------------------------------------


def _coverage(w: Window) -> str:
    """Whether what is stored is the whole output, and if not, what is missing."""
    size, total = w.size_bytes, max(w.total_bytes, w.size_bytes)
    if w.state == "writing":
        return f"still being written: {size} bytes stored so far, more may come"
    if w.state == "complete":
        return "the whole output is stored"
    if w.state == "capped":
        return (
            f"capped: only the first {size} of {total} bytes were stored; "
            f"bytes {size}-{total} are not stored"
        )
    why = f" ({_clean(w.error)})" if w.error else ""
    if w.state == "failed":
        return f"storage failed{why}: only the first {size} of {total} bytes were stored"
    return f"{w.state}{why}: the writer stopped; only the first {size} of {total} bytes were stored"


def _info_coverage(i: ArtifactInfo) -> str:
    w = Window(state=i.state, size_bytes=i.size_bytes, total_bytes=i.total_bytes, error=i.error)
    if i.state in ("deleted", "expired"):
        return "nothing is stored any more"
    return _coverage(w)


def _end(w: Window, again: str) -> str:
    if w.state == "writing":
        return f"[end of what is stored so far; more may come: {again}]"
    if w.state == "complete":
        return "[end of output: you have seen up to its last byte]"
    return f"[end of the stored bytes, not of the output: {_coverage(w)}]"


def _searched(res: Window, again: str) -> str:
    if res.state == "writing":
        return f"searched everything stored so far; more may come: {again}"
    if res.state == "complete":
        return "search complete: the whole output was searched"
    return f"searched everything stored, not the whole output: {_coverage(res)}"


def _line_span(first: int, last: int, text: str, end: int, size: int) -> str:
    if last < first:
        return ""
    more = f", line {last} continues" if end < size and not text.endswith("\n") else ""
    return f", lines {first}-{last}{more}" if last > first else f", line {first}{more}"


def _grep_row(art: str, ln: Line, mark: str, span: tuple[int, int] | None) -> str:
    text = ln.text
    if len(text.encode()) <= LINE_CAP and not ln.truncated:
        return f"{ln.number}{mark}{text}"
    lo, hi = span or (0, 0)
    room = LINE_CAP // 4
    start = max(0, lo - room)
    piece = text[start : max(hi, lo) + room][: LINE_CAP // 2]
    whole = call("artifact_read", id=art, offset=ln.offset)
    return (
        f"{ln.number}{mark}{'…' if start else ''}{piece}… [line {ln.number} is longer than "
        f"{LINE_CAP} bytes; shown characters {start}-{start + len(piece)} of it; all of it "
        f"from byte {ln.offset}: {whole}]"
    )


def _data(w: Window, start: int, end: int) -> dict[str, Any]:
    return {
        "start": start,
        "end": end,
        "size_bytes": w.size_bytes,
        "total_bytes": max(w.total_bytes, w.size_bytes),
        "state": w.state,
    }


def _clean(text: str) -> str:
    return " ".join(text.replace("[", "(").replace("]", ")").split())[:300]


def _sentence(message: str) -> str:
    message = message.strip()
    return message if message.endswith(".") else message + "."
