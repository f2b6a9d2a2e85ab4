"""Keep connections away from networks they may not reach (cloud metadata, link-local, and what ops adds).

Users type host names for their Kafka and ClickHouse servers, and the app connects to them: without a guard,
any logged-in user could make the server reach its cloud's metadata service or scan internal ports. Every
address a host name resolves to is checked against `settings.CLEARFLOW_FORBIDDEN_NETWORKS` before a connection
is tested, browsed, saved or handed to a job. Loopback stays allowed by default (the local stack lives there);
production adds it with one setting (docs/configuration.md).

A host that does not resolve is not refused here: the client then reports the failure in its own words (and
a connection may be saved before its DNS name exists).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from functools import lru_cache

from django.conf import settings

from webapp.core.exceptions import ApplicationError

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class ForbiddenAddressError(ApplicationError):
    """The host resolves to an address in a forbidden network."""

    status_code = 400
    code = "forbidden_address"


@lru_cache(maxsize=8)
def _networks(spec: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(text.strip(), strict=False) for text in spec if text.strip())


def forbidden_networks() -> tuple[IPNetwork, ...]:
    return _networks(tuple(settings.CLEARFLOW_FORBIDDEN_NETWORKS))


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _unmapped(address: Address) -> Address:
    # An IPv4 address mapped into IPv6 (::ffff:169.254.169.254) reaches the IPv4 host.
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _addresses(host: str) -> list[Address]:
    bare = host.strip().strip("[]")
    try:
        return [_unmapped(ipaddress.ip_address(bare.split("%", 1)[0]))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(bare, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return []
    return [_unmapped(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])) for info in infos]


def host_error(host: str) -> str | None:
    """None when `host` may be reached, else a message naming the host (not the network list)."""
    networks = forbidden_networks()
    if not networks:
        return None
    for address in _addresses(host):
        if any(address.version == network.version and address in network for network in networks):
            return f"The host {host} is in a network ClearFlow may not connect to."
    return None


def check_hosts(hosts: Iterable[str]) -> None:
    """Raise ForbiddenAddressError for the first host that resolves into a forbidden network."""
    for host in hosts:
        if problem := host_error(host):
            raise ForbiddenAddressError(problem)


def bootstrap_hosts(bootstrap_servers: str) -> list[str]:
    """The host names of 'host:port,host:port' (IPv6 in brackets)."""
    hosts = []
    for server in bootstrap_servers.split(","):
        host, _, _ = server.strip().rpartition(":")
        if host:
            hosts.append(host)
    return hosts
