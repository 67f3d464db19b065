"""Settings read once at the boundary: ``OVERSPILL_*`` variables over an optional
TOML file (named by ``OVERSPILL_CONFIG``) over the defaults, validated at load.

Why not pydantic-settings: ``overspill run`` starts once per agent command, and
importing pydantic and pydantic-settings cost ~130 ms of a command that should
take a few. The settings here are flat scalars (numbers, flags, strings, paths, a
few choices), so a small typed loader on the standard library does the job; a
bad value is one line naming the variable, as before.

A settings class declares its fields as annotated class attributes, each with
:func:`setting`: its default, bounds, factory, unit, old names and the sentence
that documents it -- declared once, here, and nowhere else::

    class ShellSettings(SettingsBase):
        max_output_bytes: int = setting(
            64_000, unit="size", doc="bytes of each stream kept in memory and shown"
        )

Sizes and durations read as people write them (``10MB``, ``7d``: the grammar of
``artifacts.units``, the same as the CLI's flags and the API's parameters). A
field renamed keeps its old name as an alias that still works and warns; a
name that is no setting (in the environment or the TOML file) is warned about
by the root settings (``api.settings.Settings``), which knows every section.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal, NamedTuple, Self

from overspill.artifacts.errors import ConfigurationError

PREFIX = "OVERSPILL_"
_MISSING: Any = object()
_TRUE = {"1", "true", "t", "yes", "y", "on"}
_FALSE = {"0", "false", "f", "no", "n", "off"}


class Setting(NamedTuple):
    """One field's default and bounds (see :func:`setting`)."""

    default: Any = _MISSING
    default_factory: Callable[[], Any] | None = None
    gt: float | None = None
    ge: float | None = None
    finite: bool = False
    unit: Literal["size", "duration"] | None = None
    aliases: tuple[str, ...] = ()
    le: float | None = None
    doc: str = ""
    shown: str | None = None


def setting(
    default: Any = _MISSING,
    *,
    default_factory: Callable[[], Any] | None = None,
    gt: float | None = None,
    ge: float | None = None,
    finite: bool = False,
    unit: Literal["size", "duration"] | None = None,
    aliases: tuple[str, ...] = (),
    le: float | None = None,
    doc: str = "",
    shown: str | None = None,
) -> Any:
    """A field with bounds: ``gt``/``ge``/``le`` for numbers, ``finite`` to refuse inf/nan;
    ``unit`` reads a size (10MB) or a duration (7d); ``aliases`` are old names that
    still work and warn. ``doc`` is the sentence a person reads about it (the
    README's settings table is made of these: ``api.settings.settings_table``), and
    ``shown`` its default as that table says it, where the value itself would not
    (a factory's, or one that depends on other settings). A size is more than
    zero unless its bounds say otherwise."""
    if unit == "size" and gt is None and ge is None:
        gt = 0
    return Setting(default, default_factory, gt, ge, finite, unit, aliases, le, doc, shown)


class _Kind(NamedTuple):
    """What a field's annotation says it holds."""

    base: str  # "int", "float", "bool", "str", "Path", or "literal"
    optional: bool = False
    choices: tuple[str, ...] = ()


_BASES = {"int", "float", "bool", "str", "Path"}


def _kind(annotation: object, where: str) -> _Kind | None:
    """A field's annotation read as text (``int | None``, ``Literal["a", "b"]``);
    None for a ClassVar. Not ``typing.get_type_hints``: it compiles each
    annotation, ~15 ms of a verb's start for the four settings classes."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    text = text.strip()
    if text.startswith("ClassVar"):
        return None
    parts = [p.strip() for p in text.split("|")]
    optional = "None" in parts
    parts = [p for p in parts if p != "None"]
    if len(parts) == 1 and parts[0].startswith("Literal[") and parts[0].endswith("]"):
        choices = tuple(c.strip().strip("\"'") for c in parts[0][8:-1].split(","))
        return _Kind("literal", optional, choices)
    if len(parts) == 1 and parts[0] in _BASES:
        return _Kind(parts[0], optional)
    raise TypeError(f"unsupported setting type {text!r} for {where}")


class _Field(NamedTuple):
    name: str
    kind: _Kind
    spec: Setting


class _Invalid(ValueError):
    pass


class SettingsBase:
    """Immutable settings. ``Cls(**overrides)`` reads the environment and the TOML
    file for every field not given; ``Cls.load()`` is the same, spelled for the
    boundary where settings are read once."""

    _fields: ClassVar[dict[str, _Field]] = {}
    # Deprecated names met while loading, as "OLD is now NEW" sentences.
    _deprecated: ClassVar[list[str]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields: dict[str, _Field] = {}
        for klass in reversed(cls.__mro__):
            # The class's own annotations, as written (not inspect.get_annotations:
            # importing inspect costs a verb ~5 ms).
            own: dict[str, object] = klass.__dict__.get("__annotations__", {})  # noqa: RUF063
            for name, annotation in own.items():
                kind = None if name.startswith("_") else _kind(annotation, f"{cls.__name__}.{name}")
                if kind is None:
                    continue
                raw = klass.__dict__.get(name, _MISSING)
                spec = raw if isinstance(raw, Setting) else Setting(default=raw)
                fields[name] = _Field(name, kind, spec)
        cls._fields = fields

    def __init__(self, **overrides: Any) -> None:
        unknown = set(overrides) - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no setting {sorted(unknown)[0]!r}")
        sources = self._by_name(file_values())
        sources.update(self._by_name(_env_values()))
        sources.update(overrides)
        self._assign(sources)

    @classmethod
    def _by_name(cls, raw: Mapping[str, Any]) -> dict[str, Any]:
        """The values of this class's fields (and aliases) among ``raw``."""
        out: dict[str, Any] = {}
        for f in cls._fields.values():
            for alias in f.spec.aliases:
                if alias in raw:
                    out[f.name] = raw[alias]
                    note = f"{PREFIX}{alias.upper()} is now {PREFIX}{f.name.upper()}"
                    if note not in SettingsBase._deprecated:
                        SettingsBase._deprecated.append(note)
            if f.name in raw:
                out[f.name] = raw[f.name]
        return out

    @classmethod
    def load(cls, **overrides: Any) -> Self:
        """Build the settings from the environment (and the TOML file) once."""
        return cls(**overrides)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Every name this class reads, old aliases included."""
        return tuple(name for f in cls._fields.values() for name in (f.name, *f.spec.aliases))

    @classmethod
    def documented(cls) -> list[tuple[str, str, str]]:
        """Each field as its variable, its default as a person reads it, and its
        sentence (a field without one is a mistake ``tests/test_settings_doc.py``
        names)."""
        rows = []
        for f in cls._fields.values():
            if f.spec.shown is not None:
                default = f.spec.shown
            elif f.spec.default is None:
                default = "none"
            elif f.spec.default == "":
                default = "empty"
            else:
                default = f"`{str(f.spec.default).lower() if isinstance(f.spec.default, bool) else f.spec.default}`"
            rows.append((f"{PREFIX}{f.name.upper()}", default, f.spec.doc))
        return rows

    def replace(self, **changes: Any) -> Self:
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
                    value = _convert(values[f.name], f.kind, f.spec.unit)
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


def _env_values() -> dict[str, Any]:
    """Every OVERSPILL_* variable by its setting name (names match in any case)."""
    return {
        k[len(PREFIX) :].lower(): v for k, v in os.environ.items() if k.upper().startswith(PREFIX)
    }


def env_names() -> list[str]:
    """The setting names of every OVERSPILL_* variable that is set."""
    return sorted(_env_values())


_file_cache: dict[tuple[str, int, int], dict[str, Any]] = {}


def file_values() -> dict[str, Any]:
    """The TOML file's values (``OVERSPILL_CONFIG``), by setting name. Read once
    per process and file version, though every section asks for it."""
    path = os.environ.get("OVERSPILL_CONFIG")
    if not path:
        return {}
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is None or not os.path.isfile(path):
        raise ConfigurationError(f"OVERSPILL_CONFIG: no such file {path}")
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _file_cache:
        import tomllib

        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigurationError(f"OVERSPILL_CONFIG: cannot read {path}: {exc}") from None
        _file_cache[key] = {str(k).lower(): v for k, v in data.items()}
    return dict(_file_cache[key])


def _convert(value: Any, kind: _Kind, unit: str | None = None) -> Any:
    """``value`` (a string from the environment, or a TOML or Python value) as ``kind``."""
    if kind.optional and (value is None or (isinstance(value, str) and not value.strip())):
        return None
    base = kind.base
    if unit is not None and isinstance(value, str):
        from overspill.artifacts.units import parse_duration, parse_size

        parse = parse_size if unit == "size" else parse_duration
        try:
            number = parse(value, unit)
        except ValueError as exc:
            raise _Invalid(str(exc).split(": ", 1)[1]) from None
        return float(number) if base == "float" else number
    if base == "literal":
        if value in kind.choices:
            return value
        listed = " or ".join(repr(c) for c in kind.choices)
        raise _Invalid(f"Input should be {listed}")
    if base == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise _Invalid("Input should be a valid boolean")
    if base == "int":
        if isinstance(value, bool):
            raise _Invalid("Input should be a valid integer")
        if isinstance(value, int):
            return value
        try:
            return int(str(value).strip())
        except ValueError:
            raise _Invalid("Input should be a valid integer") from None
    if base == "float":
        if isinstance(value, bool):
            raise _Invalid("Input should be a valid number")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise _Invalid("Input should be a valid number") from None
    if base == "str":
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        if not isinstance(value, str):
            raise _Invalid("Input should be a valid string")
        return value
    from pathlib import Path  # only a class that asks for a Path pays for pathlib

    return Path(value)


def _check_bounds(value: Any, spec: Setting) -> None:
    if value is None or not isinstance(value, (int, float)):
        return
    if (spec.finite or spec.gt is not None or spec.ge is not None) and not math.isfinite(value):
        raise _Invalid("must be finite")
    if spec.gt is not None and not value > spec.gt:
        raise _Invalid(f"Input should be greater than {spec.gt:g}")
    if spec.ge is not None and not value >= spec.ge:
        raise _Invalid(f"Input should be greater than or equal to {spec.ge:g}")
    if spec.le is not None and not value <= spec.le:
        raise _Invalid(f"Input should be less than or equal to {spec.le:g}")
