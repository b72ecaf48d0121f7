"""The mesh as containers on three stand-in hosts (``make cluster-up`` ... ``make cluster-down``; issue #40).

Three network namespaces (``dt40-h1`` .. ``dt40-h3``) stand in for hosts: each has one veth into a bridge in a
fourth namespace, the switch (``dt40-sw``), and the machine itself gets its own veth into that bridge
(``10.240.40.254``), so every packet the drills send goes to an address inside namespaces this package made and
never by the default route. Podman runs each container inside its host's namespace (``nsenter --net=...``;
``ip netns exec`` would hide the cgroups from runc), with the project's containers.conf and storage.conf
(``deploy/podman/``). Every loop here is bounded in count and time; ``down`` removes everything by its labels and
names, also after a failed run.
"""

from __future__ import annotations

import os
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
PODMAN_ENV = {
    "CONTAINERS_CONF": str(REPO / "deploy" / "podman" / "containers.conf"),
    "CONTAINERS_STORAGE_CONF": str(REPO / "deploy" / "podman" / "storage.conf"),
}
IMAGE = os.environ.get("DOCUTHINKER_IMAGE", "localhost/docuthinker:latest")
