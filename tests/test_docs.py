"""The README's configuration table is generated from the settings classes and must not drift."""

from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("config_table", ROOT / "tools" / "config_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_configuration_table_is_current():
    tool = _tool()
    assert tool.readme_table((ROOT / "README.md").read_text()) == tool.table(), (
        "README configuration table is stale: run `python tools/config_table.py --write`"
    )


def test_every_setting_is_documented():
    tool = _tool()
    undocumented = [line for line in tool.table().splitlines()[2:] if line.rstrip().endswith("|  |")]
    assert not undocumented, undocumented
