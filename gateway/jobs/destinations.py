"""Where result callbacks may go: public addresses, and what `[jobs] callback_hosts` allows.

A callback URL comes from whoever holds a key, and the gateway POSTs to it from inside the
network it runs in. Without a rule, a key holder could make it POST to the loopback interface,
the cluster's private addresses or a cloud's metadata service (169.254.169.254). So a callback
goes only to global unicast addresses, unless `[jobs] callback_hosts` names its host (a glob,
"hooks.internal.example" or "*.svc.cluster.local") or a network holding its address
("10.0.0.0/8", "127.0.0.1").

An IP literal is checked when the job is submitted (a 400 then). A name is resolved when the
callback is sent, every address it resolves to must be allowed, and the POST goes to the
address that was checked (the name still in `Host` and TLS), so a name that resolves
differently a moment later cannot slip past the check. A name that `callback_hosts` allows is
trusted as is.
"""

from __future__ import annotations

import asyncio
import fnmatch
import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from toolmesh.config.jobs_config import Network, parse_rule
from toolmesh.errors import InvalidRequest

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class DestinationRefused(Exception):
    """A callback's host resolves to an address it may not be sent to."""


def _literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


@dataclass(frozen=True)
class Target:
    """Where one POST goes: the URL to connect to, and the name it must present."""

    url: str
    host_header: str | None = None
    server_name: str | None = None


@dataclass
class Destinations:
    rules: Sequence[str] = ()
    _networks: list[Network] = field(init=False, default_factory=list)
    _globs: list[str] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        for rule in self.rules:
            parsed = parse_rule(rule)
            if isinstance(parsed, str):
                self._globs.append(parsed)
            else:
                self._networks.append(parsed)

    def allows(self, address: Address) -> bool:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if any(address in network for network in self._networks):
            return True
        return address.is_global and not address.is_multicast

    def _named(self, host: str) -> bool:
        name = host.lower().rstrip(".")
        return any(fnmatch.fnmatchcase(name, glob) for glob in self._globs)

    def check_url(self, url: str) -> None:
        """At submit: a URL whose host is an address that is not allowed is refused (400)."""
        host = urlsplit(url).hostname or ""
        address = _literal(host)
        if address is not None and not self.allows(address):
            raise InvalidRequest(
                f"callback_url may not point at {address} (not a public address); the gateway's "
                "[jobs] callback_hosts lists the private hosts and networks callbacks may reach",
                param="callback_url",
            )

    async def target(self, url: str) -> Target:
        """At delivery: where to connect, with the address checked just now pinned in the URL."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        address = _literal(host)
        if address is not None:
            if not self.allows(address):
                raise DestinationRefused(f"{address} is not a public address nor in [jobs] callback_hosts")
            return Target(url)
        if self._named(host):
            return Target(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise DestinationRefused(f"cannot resolve {host}: {exc}") from None
        addresses = [ipaddress.ip_address(info[4][0]) for info in found]
        refused = [str(a) for a in addresses if not self.allows(a)]
        if refused or not addresses:
            raise DestinationRefused(
                f"{host} resolves to {', '.join(refused) or 'nothing'}:"
                " not public, nor in [jobs] callback_hosts"
            )
        pinned = addresses[0]
        userinfo, at, named = parts.netloc.rpartition("@")
        netloc = f"{userinfo}{at}{f'[{pinned}]' if pinned.version == 6 else pinned}"
        if parts.port:
            netloc += f":{parts.port}"
        return Target(parts._replace(netloc=netloc).geturl(), host_header=named, server_name=host)
