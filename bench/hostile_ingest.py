"""The hostile drills of issue #38 on a fresh local mesh (loopback only), with their counts written down.

Starts a mesh (four services and Envoy, auto ports, a temporary data directory), runs
``tests/e2e/hostile.py``'s drills (four concurrent 200 MB PDF bombs beside a neighbour tenant's uploads and
questions, every list-building Cypher query and ordinary ones beside them, the smaller items), stops it.

    python -m bench.hostile_ingest

Writes bench/results/hostile-ingest-<date>.json and prints it.
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import tempfile

from bench.environment import describe
from services.launcher.mesh import Mesh
from tests.e2e import hostile

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        root = pathlib.Path(tmp)
        with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True,
                  extra_env={"DOCUTHINKER_SHUTDOWN_GRACE_S": "2"}) as mesh:
            counts = hostile.run_all(mesh)
    result = {"benchmark": "hostile_ingest", "date": dt.date.today().isoformat(), "environment": describe(),
              "note": "2 cores shared with other agents' work; RSS from /proc (psutil), sampled every 0.1 s",
              **counts}
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"hostile-ingest-{result['date']}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
