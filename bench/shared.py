"""Where ``shared/`` (evaluation data, fixtures) lies: beside the checkout, or beside its folder of worktrees."""

from __future__ import annotations

import pathlib

_HERE = pathlib.Path(__file__).resolve()
SHARED = next((p / "shared" for p in _HERE.parents if (p / "shared" / "data").is_dir()), _HERE.parents[2] / "shared")
