"""Keep connections away from networks they may not reach: cloud metadata, link-local, what ops adds, and, unless
allowed, loopback and private networks.

Users type host names for their Kafka and ClickHouse servers (and alert webhooks), and the app connects to them:
without a guard, any logged-in user could make the server reach its cloud's metadata service or scan internal
ports. Every address a host name resolves to is checked before a connection is tested, browsed, saved or handed
to a job:
- `settings.CLEARFLOW_FORBIDDEN_NETWORKS` are always refused (cloud metadata services, link-local);
- an address that is not globally routable (loopback, RFC 1918 and unique-local networks, CGNAT, link-local...)
  is refused unless `settings.CLEARFLOW_ALLOW_PRIVATE_NETWORKS` is on: on by default (the local stack and the
  tests live on loopback), off in docker-compose.yml. The Kafka and ClickHouse the operator configured
  (`KAFKA_BOOTSTRAP_SERVERS`, `CLICKHOUSE_HOST`:`CLICKHOUSE_PORT`) stay reachable at the host and port given.

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


def _configured_endpoints() -> set[tuple[str, int]]:
    """The operator's own Kafka, ClickHouse and schema registry (settings), as (lowercased host, port)."""
    endpoints = {(host.lower(), port) for host, port in bootstrap_endpoints(settings.KAFKA_BOOTSTRAP_SERVERS)}
    endpoints.add((settings.CLICKHOUSE_HOST.strip().lower(), int(settings.CLICKHOUSE_PORT)))
    endpoints.update(url_endpoints(settings.SCHEMA_REGISTRY_URL))
    return {(host.strip("[]"), port) for host, port in endpoints if port is not None}


def host_error(host: str, port: int | None = None) -> str | None:
    """None when `host` (at `port`, when known) may be reached, else a message naming the host (not the
    network list, nor anything the far end would answer)."""
    addresses = _addresses(host)
    networks = forbidden_networks()
    for address in addresses:
        if any(address.version == network.version and address in network for network in networks):
            return f"The host {host} is in a network ClearFlow may not connect to."
    if settings.CLEARFLOW_ALLOW_PRIVATE_NETWORKS or (host.strip().strip("[]").lower(), port) in _configured_endpoints():
        return None
    if any(not address.is_global for address in addresses):
        return f"The host {host} is a loopback or private address, which ClearFlow may not connect to."
    return None


def check_endpoints(endpoints: Iterable[tuple[str, int | None]]) -> None:
    """Raise ForbiddenAddressError for the first (host, port) that may not be reached (see `host_error`)."""
    for host, port in endpoints:
        if problem := host_error(host, port):
            raise ForbiddenAddressError(problem)


def bootstrap_endpoints(bootstrap_servers: str) -> list[tuple[str, int | None]]:
    """(host, port) of each 'host:port' in a comma-separated list (IPv6 in brackets)."""
    endpoints: list[tuple[str, int | None]] = []
    for server in bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        if host:
            endpoints.append((host, int(port) if port.isdigit() else None))
    return endpoints


def url_endpoints(url: str) -> list[tuple[str, int | None]]:
    """(host, port) of each http(s) URL in `url`, the port defaulting to the scheme's. A registry connection
    holds one URL (its spec refuses a list), but the registry client would try every comma-separated URL in
    turn, so every one of them is named here and checked; a URL that has no host is left out."""
    from urllib.parse import urlsplit

    endpoints: list[tuple[str, int | None]] = []
    for text in url.split(","):
        try:
            parts = urlsplit(text.strip())
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            continue
        if parts.hostname:
            endpoints.append((parts.hostname, port))
    return endpoints
