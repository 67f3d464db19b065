"""Settings read once at the boundary: ``OVERSPILL_*`` variables over an optional
TOML file (named by ``OVERSPILL_CONFIG``) over the defaults, validated at load.

Why not pydantic-settings: ``overspill run`` starts once per agent command, and
importing pydantic and pydantic-settings cost ~130 ms of a command that should
take a few. The settings here are flat scalars (numbers, flags, strings, paths, a
few choices), so a small typed loader on the standard library does the job; a
bad value is one line naming the variable, as before.

A settings class declares its fields as annotated class attributes, with a plain
default or :func:`setting` for bounds and factories::

    class ShellSettings(SettingsBase):
        max_output_bytes: int = setting(64_000, gt=0)
        legacy_spill: bool = True
"""

from __future__ import annotations

import math
import os
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from overspill.artifacts.errors import ConfigurationError

PREFIX = "OVERSPILL_"
_MISSING: Any = object()
_TRUE = {"1", "true", "t", "yes", "y", "on"}
_FALSE = {"0", "false", "f", "no", "n", "off"}


@dataclass(frozen=True)
class Setting:
    """One field's default and bounds (see :func:`setting`)."""

    default: Any = _MISSING
    default_factory: Callable[[], Any] | None = None
    gt: float | None = None
    ge: float | None = None
    finite: bool = False


def setting(
    default: Any = _MISSING,
    *,
    default_factory: Callable[[], Any] | None = None,
    gt: float | None = None,
    ge: float | None = None,
    finite: bool = False,
) -> Any:
    """A field with bounds: ``gt``/``ge`` for numbers, ``finite`` to refuse inf/nan."""
    return Setting(default, default_factory, gt, ge, finite)


@dataclass(frozen=True)
class _Field:
    name: str
    kind: Any  # the annotation, resolved
    spec: Setting


class _Invalid(ValueError):
    pass


class SettingsBase:
    """Immutable settings. ``Cls(**overrides)`` reads the environment and the TOML
    file for every field not given; ``Cls.load()`` is the same, spelled for the
    boundary where settings are read once."""

    _fields: ClassVar[dict[str, _Field]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        hints = typing.get_type_hints(cls)
        fields: dict[str, _Field] = {}
        for klass in reversed(cls.__mro__):
            for name in getattr(klass, "__annotations__", {}):
                if name.startswith("_") or typing.get_origin(hints[name]) is ClassVar:
                    continue
                raw = klass.__dict__.get(name, _MISSING)
                spec = raw if isinstance(raw, Setting) else Setting(default=raw)
                fields[name] = _Field(name, hints[name], spec)
        cls._fields = fields

    def __init__(self, **overrides: Any) -> None:
        unknown = set(overrides) - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no setting {sorted(unknown)[0]!r}")
        sources = _file_values()
        sources.update(_env_values(self._fields))
        sources.update(overrides)
        self._assign(sources)

    @classmethod
    def load(cls, **overrides: Any) -> Any:
        """Build the settings from the environment (and the TOML file) once."""
        return cls(**overrides)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(cls._fields)

    def replace(self, **changes: Any) -> Any:
        """A copy with ``changes`` applied (validated; the environment is not re-read)."""
        values = {name: getattr(self, name) for name in self._fields}
        values.update(changes)
        new = object.__new__(type(self))
        new._assign(values)
        return new

    def _assign(self, values: Mapping[str, Any]) -> None:
        for f in self._fields.values():
            if f.name in values:
                try:
                    value = _convert(values[f.name], f.kind)
                    _check_bounds(value, f.spec)
                except _Invalid as exc:
                    raise ConfigurationError(
                        f"invalid setting {PREFIX}{f.name.upper()}: {exc}"
                    ) from None
            elif f.spec.default_factory is not None:
                value = f.spec.default_factory()
            elif f.spec.default is not _MISSING:
                value = f.spec.default
            else:
                raise ConfigurationError(f"missing setting {PREFIX}{f.name.upper()}")
            object.__setattr__(self, f.name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._fields)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in self._fields))

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{n}={'***' if 'token' in n and getattr(self, n) else repr(getattr(self, n))}"
            for n in self._fields
        )
        return f"{type(self).__name__}({shown})"


def _env_values(fields: Mapping[str, _Field]) -> dict[str, Any]:
    # Names are matched case-insensitively, as the variables always were.
    wanted = {f"{PREFIX}{name}".upper(): name for name in fields}
    return {wanted[k.upper()]: v for k, v in os.environ.items() if k.upper() in wanted}


def _file_values() -> dict[str, Any]:
    path = os.environ.get("OVERSPILL_CONFIG")
    if not path:
        return {}
    if not os.path.isfile(path):
        raise ConfigurationError(f"OVERSPILL_CONFIG: no such file {path}")
    import tomllib

    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(f"OVERSPILL_CONFIG: cannot read {path}: {exc}") from None
    return {str(k).lower(): v for k, v in data.items()}


def _convert(value: Any, kind: Any) -> Any:
    """``value`` (a string from the environment, or a TOML or Python value) as ``kind``."""
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(kind) if a is not type(None)]
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return _convert(value, options[0])
    if origin is typing.Literal:
        choices = typing.get_args(kind)
        if value in choices:
            return value
        listed = " or ".join(repr(c) for c in choices)
        raise _Invalid(f"Input should be {listed}")
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise _Invalid("Input should be a valid boolean")
    if kind is int:
        if isinstance(value, bool):
            raise _Invalid("Input should be a valid integer")
        if isinstance(value, int):
            return value
        try:
            return int(str(value).strip())
        except ValueError:
            raise _Invalid("Input should be a valid integer") from None
    if kind is float:
        if isinstance(value, bool):
            raise _Invalid("Input should be a valid number")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise _Invalid("Input should be a valid number") from None
    if kind is Path:
        return Path(value)
    if kind is str:
        if not isinstance(value, str):
            raise _Invalid("Input should be a valid string")
        return value
    raise TypeError(f"unsupported setting type {kind!r}")


def _check_bounds(value: Any, spec: Setting) -> None:
    if value is None or not isinstance(value, (int, float)):
        return
    if (spec.finite or spec.gt is not None or spec.ge is not None) and not math.isfinite(value):
        raise _Invalid("must be finite")
    if spec.gt is not None and not value > spec.gt:
        raise _Invalid(f"Input should be greater than {spec.gt:g}")
    if spec.ge is not None and not value >= spec.ge:
        raise _Invalid(f"Input should be greater than or equal to {spec.ge:g}")
