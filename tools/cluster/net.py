"""The stand-in hosts: network namespaces on veth pairs into a bridge in a switch namespace.

Addresses: host ``i`` is ``10.240.40.i`` on its ``eth0``; this machine is ``10.240.40.254`` on ``dt40-host``, its
own veth into the bridge, so the drills reach the hosts directly and nothing is sent by the default route.
The kernel here has no netem: loss is an nft rule (``numgen random mod 100 < N drop``) on the hosts' ``eth0``,
a cut link is the switch's end of a host's veth set down (a pulled cable: the host keeps its address).
"""

from __future__ import annotations

import ipaddress
import pathlib
import subprocess

PREFIX = "10.240.40."
SUBNET = ipaddress.ip_network(PREFIX + "0/24")
SWITCH = "dt40-sw"
HOSTS = ("dt40-h1", "dt40-h2", "dt40-h3")
MACHINE_LINK = "dt40-host"
MACHINE_ADDRESS = PREFIX + "254"
LOSS_TABLE = "dt40loss"


def address(host: str) -> str:
    return PREFIX + str(HOSTS.index(host) + 1)


def _switch_port(host: str) -> str:
    return f"sw-h{HOSTS.index(host) + 1}"


def run(*args: str, check: bool = True, timeout: float = 30, stdin: str | None = None) -> str:
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False, input=stdin)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[:500]}")
    return done.stdout


def namespaces() -> set[str]:
    return {line.split()[0] for line in run("ip", "netns", "list").splitlines() if line.strip()}


def netns_path(host: str) -> str:
    return f"/run/netns/{host}"


def _routed_elsewhere() -> str | None:
    """A route of this machine's that already covers the cluster's subnet (another network's): then refuse."""
    for line in run("ip", "-4", "route", "show").splitlines():
        dest = line.split()[0]
        if dest == "default" or f"dev {MACHINE_LINK}" in line:
            continue
        if ipaddress.ip_network(dest, strict=False).overlaps(SUBNET):
            return line
    return None


def up() -> None:
    clash = _routed_elsewhere()
    if clash:
        raise RuntimeError(f"{SUBNET} is already routed on this machine ({clash}); not adding the cluster's")
    existing = namespaces()
    if SWITCH not in existing:
        run("ip", "netns", "add", SWITCH)
        run("ip", "-n", SWITCH, "link", "add", "br0", "type", "bridge")
        run("ip", "-n", SWITCH, "link", "set", "br0", "up")
        run("ip", "-n", SWITCH, "link", "set", "lo", "up")
    for n, host in enumerate(HOSTS, start=1):
        if host in existing:
            continue
        run("ip", "netns", "add", host)
        run("ip", "link", "add", _switch_port(host), "netns", SWITCH, "type", "veth", "peer", "name", "eth0",
            "netns", host)
        run("ip", "-n", SWITCH, "link", "set", _switch_port(host), "master", "br0", "up")
        run("ip", "-n", host, "addr", "add", f"{PREFIX}{n}/24", "dev", "eth0")
        run("ip", "-n", host, "link", "set", "eth0", "up")
        run("ip", "-n", host, "link", "set", "lo", "up")
    if not pathlib.Path(f"/sys/class/net/{MACHINE_LINK}").exists():
        run("ip", "link", "add", MACHINE_LINK, "type", "veth", "peer", "name", "sw-host", "netns", SWITCH)
        run("ip", "-n", SWITCH, "link", "set", "sw-host", "master", "br0", "up")
        run("ip", "addr", "add", f"{MACHINE_ADDRESS}/24", "dev", MACHINE_LINK)
        run("ip", "link", "set", MACHINE_LINK, "up")


def down() -> list[str]:
    """Removes the namespaces and this machine's veth; what was there."""
    removed = []
    if pathlib.Path(f"/sys/class/net/{MACHINE_LINK}").exists():
        run("ip", "link", "del", MACHINE_LINK, check=False)
        removed.append(MACHINE_LINK)
    existing = namespaces()
    for ns in (*HOSTS, SWITCH):
        if ns in existing:
            run("ip", "netns", "del", ns, check=False)
            removed.append(ns)
    return removed


def set_link(host: str, up: bool) -> None:
    """The switch's end of ``host``'s cable, up or down."""
    run("ip", "-n", SWITCH, "link", "set", _switch_port(host), "up" if up else "down")


def set_loss(hosts: tuple[str, ...], percent: int) -> None:
    """Drops ``percent`` % of the packets each of ``hosts`` sends and receives on its link (0: the rule removed)."""
    for host in hosts:
        run("ip", "netns", "exec", host, "nft", "delete", "table", "inet", LOSS_TABLE, check=False)
        if percent <= 0:
            continue
        rules = (f"table inet {LOSS_TABLE} {{\n"
                 f"  chain inbound {{ type filter hook input priority 0; iifname \"eth0\" numgen random mod 100 < "
                 f"{percent} drop; }}\n"
                 f"  chain outbound {{ type filter hook output priority 0; oifname \"eth0\" numgen random mod 100 < "
                 f"{percent} drop; }}\n}}\n")
        run("ip", "netns", "exec", host, "nft", "-f", "-", stdin=rules)
