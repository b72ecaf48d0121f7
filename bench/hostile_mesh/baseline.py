"""The hostile-mesh probes on another revision's mesh (``--baseline-rev``), side by side with this one's.

The other revision's tree is exported to a temporary directory and runs with its own ``services``; the probes are
this tree's, loaded by file path as a package of their own (``hostile_probes``), so they need nothing of this
tree's but this package.
"""

from __future__ import annotations

import json
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = pathlib.Path(__file__).resolve().parent

_BASELINE = """
import importlib, importlib.util, json, pathlib, sys, tempfile
package = pathlib.Path(sys.argv[1])
spec = importlib.util.spec_from_file_location("hostile_probes", package / "__init__.py",
                                              submodule_search_locations=[str(package)])
sys.modules["hostile_probes"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sys.modules["hostile_probes"])
common = importlib.import_module("hostile_probes.common")
probes = importlib.import_module("hostile_probes.baseline").BASELINE_PROBES
from services.launcher.mesh import Mesh
with tempfile.TemporaryDirectory(prefix="hostile-baseline-", dir="/tmp") as work:
    root = pathlib.Path(work)
    with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True, extra_env=common.SINGLE_ENV) as mesh:
        report = {}
        for name, module in probes.items():
            try:
                report[name] = getattr(importlib.import_module(f"hostile_probes.{module}"), name)(mesh)
            except Exception as error:  # noqa: BLE001 - a probe the old mesh cannot take part in
                report[name] = {"error": f"{type(error).__name__}: {error}"}
        print("RESULT " + json.dumps(report), flush=True)
"""
BASELINE_PROBES = {"credential": "edge", "headers": "edge", "oversized": "bodies", "strict_json": "bodies",
                   "held_uploads": "bodies", "pause": "faults", "flood": "edge"}
"""The probes run on the baseline revision's mesh too, each with the module of this package it is in (the replica
ones need its own pgserver run: not repeated)."""


def baseline(rev: str) -> dict:
    """``BASELINE_PROBES`` on the mesh of another revision of this repository (e.g. main before #38), exported to a
    temporary directory (the web app's built libraries copied in), in the same run as this one's."""
    import shutil
    import subprocess
    import sys
    import tempfile

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True,
                            check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="hostile-baseline-tree-", dir="/tmp") as work:
        tree = pathlib.Path(work)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        if (ROOT / "web" / "vendor").is_dir():
            shutil.copytree(ROOT / "web" / "vendor", tree / "web" / "vendor", dirs_exist_ok=True)
        env = {**os.environ, "PYTHONPATH": f"{tree}:{tree / 'gen'}"}
        done = subprocess.run([sys.executable, "-c", _BASELINE, str(PACKAGE)], cwd=tree,
                              env=env, capture_output=True, text=True, timeout=900)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        return {"commit": commit, "error": (done.stdout + done.stderr)[-2000:]}
    return {"commit": commit, **json.loads(line[7:])}
