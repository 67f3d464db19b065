"""The seam any tool calls to put an oversized result behind an id.

Apart from ``saved`` (the request, the preview and the in-server save) because
this half runs in the caller: it streams the content through any StoreClient and,
while the compatibility layer is on, writes the replaced system's legacy file
from the same chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from overspill.api.results import (
    DEFAULT_BUDGET,
    PreviewBuffer,
    SavedResult,
    SaveRequest,
    as_chunks,
    check_budget,
    not_stored,
    notice_for,
    suggested_name,
)
from overspill.artifacts.errors import ConfigurationError, InvalidArgument, OverspillError
from overspill.shell.config import ShellSettings
from overspill.shell.redact.policy import Redaction


def tool_budgets(text: str) -> dict[str, int]:
    """``OVERSPILL_RESULT_BUDGETS`` read once: tool name -> preview budget."""
    from overspill.artifacts.units import parse_size

    budgets: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        tool, sep, size = item.partition("=")
        try:
            if not sep or not tool.strip():
                raise ValueError("write TOOL=BYTES")
            budget = parse_size(size.strip())
            check_budget(budget)
        except (ValueError, InvalidArgument) as exc:
            raise ConfigurationError(
                f"invalid setting OVERSPILL_RESULT_BUDGETS: {item!r}: {exc}"
            ) from None
        budgets[tool.strip()] = budget
    return budgets


def tool_names(text: str) -> frozenset[str]:
    """``OVERSPILL_NEVER_PERSIST`` read once: the tools whose results stay unsaved."""
    return frozenset(name.strip() for name in text.split(",") if name.strip())


def saver_for(
    backend: Any,
    shell: ShellSettings,
    *,
    session_id: str | None = None,
    legacy: bool | None = None,
    redaction: Redaction | None = None,
) -> ResultSaver:
    """A saver configured from the settings, read here once: budgets per tool,
    tools never persisted, the compatibility layer's files, the redaction."""
    return ResultSaver(
        backend,
        session_id=session_id,
        legacy=shell.legacy_spill if legacy is None else legacy,
        legacy_root=shell.result_spill_dir,
        legacy_cap=shell.max_spill_bytes,
        sweep_days=shell.spill_sweep_days,
        budgets=tool_budgets(shell.result_budgets),
        never_persist=tool_names(shell.never_persist),
        redaction=redaction if redaction is not None else Redaction.from_settings(shell),
    )


class ResultSaver:
    """The seam any tool calls to put an oversized result behind an id.

    ``save`` streams the content into the store (in-process or a server, through
    any StoreClient) and returns the preview for the model. While the compatibility
    layer is on it also writes the replaced system's legacy file from the same
    chunks (no second pass) and names it in the notice, right after "stored at: ".
    """

    def __init__(
        self,
        backend: Any,
        *,
        session_id: str | None = None,
        legacy: bool = False,
        legacy_root: str | None = None,
        legacy_cap: int = 64 * 1024 * 1024,
        sweep_days: float = 30,
        budgets: dict[str, int] | None = None,
        never_persist: frozenset[str] = frozenset(),
        redaction: Redaction | None = None,
    ) -> None:
        self._backend = backend
        self._redaction = redaction if redaction is not None else Redaction()
        self._budgets = budgets or {}
        self._never = never_persist
        self._session_id = session_id
        self._legacy = legacy
        self._cap = legacy_cap
        self._root: Any = None
        if legacy:
            from overspill.shell.result_spill import LegacyResultRoot, sweep_old_result_files

            self._root = LegacyResultRoot(legacy_root)
            _sweep_once(sweep_old_result_files, sweep_days, legacy_root)

    def save(
        self,
        content: bytes | str | Iterable[bytes],
        *,
        tool: str,
        name: str | None = None,
        media_type: str = "text/plain; charset=utf-8",
        source: dict[str, Any] | None = None,
        budget: int | None = None,
        session_id: str | None = None,
    ) -> SavedResult:
        """``budget`` unset: the tool's own (``OVERSPILL_RESULT_BUDGETS``) or 50,000.
        A tool in ``OVERSPILL_NEVER_PERSIST`` is never written anywhere: the answer
        says so and the caller keeps its original result."""
        if tool in self._never:
            return not_stored(0, f"results of {tool} are never persisted (OVERSPILL_NEVER_PERSIST)")
        if budget is None:
            budget = self._budgets.get(tool, DEFAULT_BUDGET)
        check_budget(budget)
        session = session_id or self._session_id
        request = SaveRequest.checked(
            tool=tool,
            name=suggested_name(name),
            session_id=session,
            media_type=media_type,
            source=source or {},
            budget=budget,
        )
        legacy_file = None
        buf = PreviewBuffer(budget)
        if self._legacy:
            from overspill.shell.result_spill import LegacyResultFile

            legacy_file = LegacyResultFile(self._root, session, name, self._cap)

        # What this side keeps (the legacy file, the preview naming it) is masked
        # here; the store masks what it keeps itself, and says what it masked.
        redactor = self._redaction.redactor() if legacy_file is not None else None

        def keep(piece: bytes | memoryview) -> None:
            if legacy_file is not None:
                legacy_file.write(piece)
            buf.feed(piece)  # bounded: the preview's head and tail, and the count

        def chunks() -> Iterator[bytes]:
            for chunk in as_chunks(content):
                for piece in redactor.feed(chunk) if redactor is not None else (chunk,):
                    keep(piece)
                yield chunk
            if redactor is not None:
                keep(redactor.finish())

        try:
            saved: SavedResult = self._backend.save_result(chunks(), request)
        except InvalidArgument:
            if legacy_file is not None:  # nothing was saved: no file is left either
                path = legacy_file.close()
                if path:
                    Path(path).unlink(missing_ok=True)
            raise
        except OverspillError as exc:  # the server unreachable, the store refusing
            saved = not_stored(buf.total, exc.message)
        if legacy_file is None:
            return saved
        path = legacy_file.close()
        if saved.id is None:
            if path:  # the original result is kept, so the file would only be litter
                Path(path).unlink(missing_ok=True)
            return saved
        if path is None:
            return saved
        from overspill.shell.result_spill import LEGACY_HINT

        try:
            info = self._backend.get(saved.id)
        except OverspillError:
            return saved  # stored; only the notice naming the legacy file is lost
        text, omitted = buf.preview(notice_for(info, path, LEGACY_HINT), budget, info.id)
        return saved.model_copy(
            update={"preview": text, "omitted_bytes": omitted, "legacy_path": path}
        )


_swept: set[str | None] = set()


def _sweep_once(sweep: Callable[..., int], days: float, root: str | None) -> None:
    """The start-up cleanup of old legacy result files, once per root per process."""
    if root in _swept:
        return
    _swept.add(root)
    sweep(days, root)
