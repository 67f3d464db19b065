"""Every setting is declared once -- its default, its variable and its sentence --
and the README's table is made from those declarations: a setting added without
a sentence, or a table edited by hand, fails here (datasette's ``test_docs.py``
is the model)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from overspill.api.settings import (
    ClientSettings,
    ServerSettings,
    settings_table,
)
from overspill.artifacts.config import StoreSettings
from overspill.artifacts.settings_base import SettingsBase
from overspill.artifacts.units import parse_size
from overspill.shell.config import ShellSettings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
SECTIONS: list[type[SettingsBase]] = [StoreSettings, ShellSettings, ClientSettings, ServerSettings]


@pytest.mark.parametrize("section", SECTIONS, ids=lambda c: c.__name__)
def test_every_setting_has_its_sentence(section: type[SettingsBase]) -> None:
    for name, default, doc in section.documented():
        assert doc.strip(), f"{name} has no doc= in its declaration"
        assert default.strip(), name


def test_the_readme_table_is_the_one_the_declarations_make() -> None:
    marker = README.index("<!-- settings: made from the declarations")
    start = README.index("\n", marker) + 1
    table = settings_table()
    assert README[start : start + len(table)] == table, (
        "README's settings table differs from the declarations; paste this in:\n" + table
    )


def test_every_variable_the_readme_names_is_a_setting() -> None:
    known = {name for section in SECTIONS for name, _, _ in section.documented()}
    known |= {"OVERSPILL_CONFIG", "OVERSPILL_ARTIFACT_MAX_BYTES"}  # the file; an old name
    named = set(re.findall(r"(?<![A-Z_])OVERSPILL_[A-Z0-9_]+", README))  # not TEST_OVERSPILL_*
    assert named - known == set()


def test_a_default_the_table_shows_as_a_size_is_the_declared_one() -> None:
    assert parse_size("4GiB") == StoreSettings().max_artifact_bytes
    assert parse_size("64MiB") == ShellSettings().max_spill_bytes
