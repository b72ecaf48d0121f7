"""``bench/results/cluster-<date>.json``: the image's size and build time, each drill's counts, the scaling run.

Each command updates its own section, so ``make image`` and the drills run apart still land in one file a day.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
from typing import Any

from tools.cluster import REPO


def path(day: datetime.date | None = None) -> os.PathLike[str]:
    day = day or datetime.datetime.now(datetime.UTC).date()
    return REPO / "bench" / "results" / f"cluster-{day.isoformat()}.json"


def environment() -> dict[str, Any]:
    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "kernel": platform.release(), "load_1m_5m_15m": [round(x, 2) for x in load],
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)}


def record(section: str, value: Any) -> None:
    """Sets ``section`` (a dotted path, e.g. ``drills.kill_rag``) in today's results file."""
    target = path()
    data = json.loads(open(target).read()) if os.path.exists(target) else {}
    node = data
    *parents, leaf = section.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    data.setdefault("environment", {})[section] = {
        "at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), **environment()}
    tmp = f"{target}.tmp"
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, target)
