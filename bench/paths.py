"""Where the shared data and fixtures live: ``../shared`` next to the checkout, or one level up for a
git worktree kept in a folder of worktrees (``/work/wt/<name>`` next to ``/work/shared``)."""

from __future__ import annotations

import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def shared_dir() -> pathlib.Path:
    if os.environ.get("DOCUTHINKER_SHARED"):
        return pathlib.Path(os.environ["DOCUTHINKER_SHARED"])
    candidates = [parent / "shared" for parent in ROOT.parents[:2]]
    return next((c for c in candidates if c.is_dir()), candidates[0])


SHARED = shared_dir()
