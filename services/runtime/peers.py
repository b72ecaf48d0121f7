"""How one process reaches a peer service: a configured target, parsed once for gRPC and for Envoy.

A target is what ``DOCUTHINKER_<SERVICE>_TARGET`` holds, and the same value works on a laptop and
in a cluster:

- ``host:port``: one address (a name is resolved by DNS, as a Kubernetes ClusterIP Service is);
- ``10.0.0.1:50051,10.0.0.2:50051``: several replicas, IP literals (the launcher's local replicas);
- ``dns:///name:port``: every address the name resolves to (a headless Service: one per ready pod).

Calls balance per request over every address with gRPC's ``round_robin`` policy; ``pick_first``,
gRPC's default, would pin one connection to one replica for its whole life. Envoy gets the same
addresses as a cluster (``endpoints``; ``dns`` true: a STRICT_DNS cluster that re-resolves the name).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

LB_POLICY = "round_robin"
_DNS_SCHEME = "dns:///"


@dataclass(frozen=True)
class Peer:
    endpoints: tuple[tuple[str, int], ...]
    """(host, port) of each address; a single name when ``dns``."""
    dns: bool = False
    """The name stands for every address it resolves to (``dns:///``), not for one host."""

    @property
    def target(self) -> str:
        """The gRPC channel target: the resolver sees every replica, the LB policy spreads calls over them."""
        if self.dns:
            host, port = self.endpoints[0]
            return f"{_DNS_SCHEME}{host}:{port}"
        if len(self.endpoints) == 1:
            return _join(*self.endpoints[0])
        # gRPC's sockaddr resolver: one scheme per address family, a comma list of literals after it.
        family = "ipv6" if ":" in self.endpoints[0][0] else "ipv4"
        return f"{family}:" + ",".join(_join(host, port) for host, port in self.endpoints)

    def __str__(self) -> str:
        return self.target if self.dns or len(self.endpoints) == 1 else ",".join(_join(*e) for e in self.endpoints)


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _split(address: str) -> tuple[str, int]:
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"peer address {address!r} is not host:port")
    return host.strip("[]"), int(port)


def _literal(host: str) -> str:
    if host == "localhost":
        return "127.0.0.1"
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        raise ValueError(
            f"{host!r} in a list of peer addresses: a list takes IP addresses only; for a name that stands for"
            " several replicas use dns:///name:port"
        ) from None


def parse_peer(value: str) -> Peer:
    """Reads a target setting; raises ValueError with what is wrong in it."""
    value = value.strip()
    if value.startswith(_DNS_SCHEME):
        return Peer((_split(value[len(_DNS_SCHEME):]),), dns=True)
    parts = [p for p in value.split(",") if p.strip()]
    if not parts:
        raise ValueError("empty peer address")
    if len(parts) == 1:
        return Peer((_split(parts[0]),))
    endpoints = tuple((_literal(host), port) for host, port in map(_split, parts))
    if len({":" in host for host, _ in endpoints}) > 1:
        raise ValueError(f"peer list {value!r} mixes IPv4 and IPv6 addresses")
    return Peer(endpoints)


def channel_target(value: str) -> tuple[str, list[tuple[str, object]]]:
    """The gRPC target of a peer setting and the channel options that balance calls over its replicas."""
    return parse_peer(value).target, [("grpc.lb_policy_name", LB_POLICY)]
