"""What a hostile client finds at the gateway and across replicas (#38, the mesh's part): probes and counts.

``python -m bench.hostile_mesh`` runs every probe of this package on fresh meshes and writes
``bench/results/hostile-mesh-<date>.json`` (``--baseline-rev REV`` runs the single-mesh probes on another
revision's mesh too, side by side). Timings here are measurements (the machine is shared: two cores and several
agents), never assertions.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pathlib
import platform
import time

from .baseline import ROOT, baseline
from .bodies import held_uploads, oversized, strict_json
from .common import SINGLE_ENV
from .edge import credential, flood, headers
from .faults import envoy_cgroup, health_while_restarting, pause
from .replicas import DLQ_BACKOFF_S, LEASE_S, dead_letter, replicated_env, takeover

RESULTS = ROOT / "bench" / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=None)
    parser.add_argument("--skip-replicas", action="store_true", help="only the single mesh's probes")
    parser.add_argument("--baseline-rev", default=None,
                        help="a git revision (e.g. main before #38) whose mesh gets the single-mesh probes too")
    args = parser.parse_args()
    import tempfile

    from services.launcher.memory_ceiling import MemoryCeiling
    from services.launcher.mesh import Mesh
    from services.storage.local_server import LocalPostgres

    today = dt.date.today().isoformat()
    out = args.out or RESULTS / f"hostile-mesh-{today}.json"
    report: dict = {"date": today, "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                                               "load_at_start": os.getloadavg()[0]},
                    "note": "loopback only; two shared cores (other agents ran meanwhile): timings are one run's"}
    if args.baseline_rev is not None:
        report["baseline"] = baseline(args.baseline_rev)
        print("baseline", json.dumps(report["baseline"])[:2000], flush=True)
    with tempfile.TemporaryDirectory(prefix="hostile-", dir="/tmp") as work:
        root = pathlib.Path(work)
        ceiling = MemoryCeiling(8192, prefix="hostile-bench", limits_mb={"gateway": 512})
        with Mesh(data_dir=root / "single" / "data", log_dir=root / "single" / "logs", auto_ports=True,
                  extra_env=SINGLE_ENV, memory_ceiling=ceiling) as mesh:
            for name, probe in (("credential", credential), ("envoy_cgroup", envoy_cgroup),
                                ("headers", headers), ("oversized", oversized), ("strict_json", strict_json),
                                ("held_uploads", held_uploads), ("pause", pause),
                                ("health_while_restarting", health_while_restarting), ("flood", flood)):
                started = time.monotonic()
                report[name] = probe(mesh)
                report[name]["probe_s"] = round(time.monotonic() - started, 1)
                print(name, json.dumps(report[name])[:400], flush=True)
        if not args.skip_replicas:
            with LocalPostgres(root / "postgres") as postgres:
                with Mesh(data_dir=root / "replicas" / "data", log_dir=root / "replicas" / "logs", auto_ports=True,
                          replicas={"rag": 2, "orchestrator": 2}, extra_env=replicated_env(postgres.dsn),
                          startup_timeout_s=400) as mesh:
                    report["takeover"] = takeover(mesh, postgres.dsn, LEASE_S)
                    print("takeover", json.dumps(report["takeover"]), flush=True)
                    report["dead_letter"] = dead_letter(mesh, DLQ_BACKOFF_S)
                    print("dead_letter", json.dumps(report["dead_letter"]), flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
