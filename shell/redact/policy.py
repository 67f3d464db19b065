"""What an admin set about masking secrets, resolved once and handed to every writer.

The executor, saved results, uploads (``overspill put``, ``PUT /content``),
adopted files and re-scrubbed artifacts all mask with the same ``Redaction``:
the switch (``OVERSPILL_REDACT``), the built-in rules an admin turned off
(``OVERSPILL_REDACT_DISABLE``) and the admin's own patterns
(``OVERSPILL_REDACT_PATTERNS``). Before this object each writer built its
redactor in its own place, and two of them forgot the admin's settings.

Storing unmasked output takes two decisions: the setting off *and* an admin's
per-owner policy allowing it (``for_owner``); either alone still masks.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from .stream import RuleSet, StreamRedactor

if TYPE_CHECKING:
    from ..config import ShellSettings


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def _lines(text: str) -> tuple[str, ...]:
    return tuple(line for line in text.splitlines() if line.strip())


class Redaction(NamedTuple):
    enabled: bool = True
    disabled: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: ShellSettings) -> Redaction:
        """The settings' redaction, checked now: an unknown rule name or a bad
        pattern fails at load with the setting's name, never mid-run."""
        redaction = cls(
            enabled=settings.redact,
            disabled=_names(settings.redact_disable),
            patterns=_lines(settings.redact_patterns),
        )
        redaction.check()
        return redaction

    def check(self) -> None:
        from . import ruleset_for

        ruleset_for(disabled=self.disabled, patterns=self.patterns)

    def for_owner(self, may_store_unmasked: bool) -> Redaction:
        """This redaction for one owner: off only where the setting is off and an
        admin's policy lets that owner's output be stored unmasked."""
        if self.enabled or may_store_unmasked:
            return self
        return self._replace(enabled=True)

    def rules(self, known: Iterable[tuple[str, str]] = ()) -> RuleSet | None:
        """The rules a writer masks with (None: masking is off), plus one per
        credential value the writer knows of."""
        if not self.enabled:
            return None
        from . import ruleset_for

        return ruleset_for(known, disabled=self.disabled, patterns=self.patterns)

    def redactor(self, known: Iterable[tuple[str, str]] = ()) -> StreamRedactor | None:
        """A fresh stream redactor for one writer (None: masking is off)."""
        rules = self.rules(known)
        return StreamRedactor(rules) if rules is not None else None


def masked(chunks: Iterable[bytes], redactor: StreamRedactor | None) -> Iterator[bytes]:
    """``chunks`` as they may be kept: masked in stream, a secret cut by a chunk
    boundary included (``redactor`` None: as given)."""
    if redactor is None:
        yield from chunks
        return
    for chunk in chunks:
        for piece in redactor.feed(chunk):
            yield bytes(piece)
    yield redactor.finish()


def what_was_masked(redactor: StreamRedactor | None) -> dict[str, object] | None:
    """The artifact's ``source`` update saying what was masked (never a value),
    or None when nothing was."""
    if redactor is None or not redactor.manifest.total:
        return None
    return {"redactions": redactor.manifest.as_json()}


OFF = Redaction(enabled=False)
"""No masking (an admin's explicit, audited choice; tests of raw storage)."""
