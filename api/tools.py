"""Model-facing tools: JSON-schema definitions and handlers.

Each handler returns bounded text that ends by saying exactly how to continue
(the next offset or line) and whether the artifact is complete, so a model never
mistakes a window for the whole output. They work over any Backend: the local
store in-process, or a server through the HTTP client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from overspill.api.backend import Backend
from overspill.artifacts.errors import OverspillError

DEFAULT_CHARS = 16_000
MAX_CHARS = 64_000

_ID = {
    "type": "string",
    "pattern": "^art_[0-9A-HJKMNP-TV-Z]{26}$",
    "description": "The artifact id from a truncated command result.",
}

TOOL_DEFINITIONS: list[dict[str, Any]] = [
    {
        "name": "artifact_read",
        "description": (
            "Read part of a stored command output. Give a byte window (offset, limit), a "
            "line window (start_line, line_count) or a tail (tail_lines or tail_bytes). "
            "The answer ends with how to continue."
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
                    "description": f"Bytes to read (default {DEFAULT_CHARS})",
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
            "Search a stored command output with a regular expression (RE2 syntax; linear "
            "time). Returns matching lines with line numbers, optional context, and where "
            "to resume if the search stopped early."
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
        "description": "Size, line count, state, source command and expiry of a stored output.",
        "input_schema": {
            "type": "object",
            "properties": {"id": _ID},
            "required": ["id"],
            "additionalProperties": False,
        },
    },
]


@dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool = False


class ArtifactTools:
    def __init__(self, backend: Backend, *, max_chars: int = DEFAULT_CHARS) -> None:
        self._backend = backend
        self._max = min(max_chars, MAX_CHARS)

    def handle(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool call. Bad arguments and store errors come back as text."""
        handlers = {
            "artifact_read": self._read,
            "artifact_grep": self._grep,
            "artifact_info": self._info,
        }
        handler = handlers.get(name)
        if handler is None:
            return ToolResult(f"error: unknown tool {name!r}; tools: {', '.join(handlers)}", True)
        if not isinstance(arguments, dict) or not isinstance(arguments.get("id"), str):
            return ToolResult("error: 'id' (an artifact id such as art_01...) is required", True)
        try:
            return ToolResult(handler(arguments))
        except OverspillError as exc:
            return ToolResult(f"error: {exc.message}", True)
        except (TypeError, ValueError) as exc:
            return ToolResult(f"error: invalid arguments: {exc}", True)

    def _read(self, a: dict[str, Any]) -> str:
        art = a["id"]
        modes = [k for k in ("offset", "start_line", "tail_lines", "tail_bytes") if k in a]
        if len(modes) > 1:
            raise ValueError(
                f"choose one of offset, start_line, tail_lines, tail_bytes (got {modes})"
            )
        if "start_line" in a:
            win = self._backend.lines(
                art, start=_int(a, "start_line", 1), count=_int(a, "line_count", 200, hi=2000)
            )
            body = "\n".join(ln.text for ln in win.lines)
            body, cut = _clip(body, self._max)
            last = win.start + len(win.lines) - 1
            head = f"[{art}: lines {win.start}-{last} of {win.line_count}{_state(win.complete)}]"
            if not win.lines:
                return f"[{art}: no line {win.start}; it has {win.line_count} lines{_state(win.complete)}]"
            if cut:
                tail = f"[shown truncated at {self._max} characters; continue: artifact_read id={art} start_line={win.start + 1}]"
            elif win.eof:
                tail = _end(art, win.complete, f"start_line={win.next_line}")
            else:
                tail = f"[continue: artifact_read id={art} start_line={win.next_line}]"
            return f"{head}\n{body}\n{tail}"
        if "tail_lines" in a or "tail_bytes" in a:
            t = self._backend.tail(
                art,
                lines=a.get("tail_lines"),
                nbytes=min(_int(a, "tail_bytes", self._max), self._max)
                if "tail_bytes" in a
                else None,
            )
            body, cut = _clip(t.text, self._max, keep_end=True)
            first = f", from line {t.first_line}" if t.first_line else ""
            head = (
                f"[{art}: last {t.size_bytes - t.offset} bytes (from byte {t.offset}{first}) "
                f"of {t.size_bytes}{_state(t.complete)}]"
            )
            more = (
                f"[earlier output: artifact_read id={art} offset=0, or artifact_grep]"
                if t.offset > 0
                else "[this is the whole artifact]"
            )
            return f"{head}\n{body}\n{more}"
        offset = _int(a, "offset", 0, lo=0)
        limit = min(_int(a, "limit", self._max), self._max)
        tw = self._backend.text(art, offset=offset, limit=limit)
        head = (
            f"[{art}: bytes {tw.offset}-{tw.next_offset} of {tw.size_bytes}{_state(tw.complete)}]"
        )
        if tw.eof:
            tail = _end(art, tw.complete, f"offset={tw.next_offset}")
        else:
            tail = f"[continue: artifact_read id={art} offset={tw.next_offset}]"
        return f"{head}\n{tw.text}\n{tail}"

    def _grep(self, a: dict[str, Any]) -> str:
        art = a["id"]
        pattern = a.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ValueError("'pattern' must be a non-empty string")
        res = self._backend.grep(
            art,
            pattern,
            ignore_case=bool(a.get("ignore_case", False)),
            fixed=bool(a.get("fixed_string", False)),
            context=_int(a, "context", 0, lo=0, hi=20),
            max_matches=_int(a, "max_matches", 50, hi=500),
            offset=_int(a, "offset", 0, lo=0),
        )
        out: list[str] = []
        used = 0
        shown = 0
        for m in res.matches:
            block = [f"{ln.number}-{ln.text}" for ln in m.before]
            block.append(f"{m.line.number}:{m.line.text}")
            block += [f"{ln.number}-{ln.text}" for ln in m.after]
            text = "\n".join(block)
            if out and used + len(text) > self._max:
                break
            out.append(text)
            used += len(text)
            shown += 1
        sep = "\n--\n" if a.get("context") else "\n"
        if shown < len(res.matches):
            resume = res.matches[shown].line.offset
            footer = (
                f"[{shown} matches shown (output limit); continue: artifact_grep id={art} "
                f"pattern={pattern!r} offset={resume}]"
            )
        elif res.truncated:
            footer = (
                f"[{shown} matches in bytes {res.scanned_from}-{res.next_offset}; search "
                f"stopped early; continue: artifact_grep id={art} pattern={pattern!r} "
                f"offset={res.next_offset}]"
            )
        else:
            done = (
                "search complete"
                if res.complete
                else "searched everything stored so far; the artifact is still being written"
            )
            footer = f"[{shown} matches; {done}]"
        return (sep.join(out) + "\n" if out else "") + footer

    def _info(self, a: dict[str, Any]) -> str:
        i = self._backend.get(a["id"])
        src = i.source
        lines = [
            f"id: {i.id}",
            f"state: {i.state}" + (" (still being written)" if i.state == "writing" else ""),
            f"size: {i.size_bytes} bytes stored of {i.total_bytes} produced, {i.line_count} lines",
        ]
        if src.get("command"):
            lines.append(f"command: {src['command']}")
        if src.get("stream"):
            lines.append(f"stream: {src['stream']}")
        if "exit_code" in src or src.get("signal"):
            lines.append(
                f"exit: code {src.get('exit_code')}, signal {src.get('signal')}, "
                f"timed out {src.get('timed_out', False)}"
            )
        lines.append("expires: " + ("never (pinned)" if i.pinned else str(i.expires_at or "never")))
        if i.error:
            lines.append(f"note: {i.error}")
        lines.append(
            f"[read: artifact_read id={i.id} offset=0 | tail_lines=50; search: artifact_grep id={i.id}]"
        )
        return "\n".join(lines)


def _int(a: dict[str, Any], key: str, default: int, *, lo: int = 1, hi: int | None = None) -> int:
    value = a.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"'{key}' must be an integer")
    if value < lo or (hi is not None and value > hi):
        raise ValueError(f"'{key}' must be between {lo} and {hi if hi is not None else 'any'}")
    return value


def _clip(text: str, limit: int, *, keep_end: bool = False) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return (text[-limit:] if keep_end else text[:limit]), True


def _state(complete: bool) -> str:
    return "" if complete else "; still being written"


def _end(art: str, complete: bool, where: str) -> str:
    if complete:
        return "[end of artifact]"
    return f"[end of what is stored so far; more may come: artifact_read id={art} {where}]"
