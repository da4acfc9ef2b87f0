"""Where callbacks may go: public addresses, and the hosts and networks `[jobs] callback_hosts` names."""

from __future__ import annotations

import ipaddress

import pytest

from toolmesh.config.jobs_config import JobsConfig
from toolmesh.errors import InvalidRequest
from toolmesh.gateway.jobs.destinations import DestinationRefused, Destinations, Target


@pytest.mark.parametrize(
    ("address", "allowed"),
    [
        ("93.184.215.14", True),
        ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.0.1", False),
        ("169.254.169.254", False),  # cloud metadata
        ("100.64.0.1", False),  # carrier-grade NAT
        ("0.0.0.0", False),
        ("::1", False),
        ("fd00::1", False),
        ("fe80::1", False),
        ("::ffff:127.0.0.1", False),  # IPv4-mapped loopback
        ("224.0.0.1", False),
    ],
)
def test_only_public_unicast_addresses_by_default(address: str, allowed: bool) -> None:
    assert Destinations().allows(ipaddress.ip_address(address)) is allowed


def test_callback_hosts_adds_networks() -> None:
    destinations = Destinations(("10.0.0.0/8", "127.0.0.1"))
    assert destinations.allows(ipaddress.ip_address("10.200.0.1"))
    assert destinations.allows(ipaddress.ip_address("::ffff:10.0.0.1"))
    assert destinations.allows(ipaddress.ip_address("127.0.0.1"))
    assert not destinations.allows(ipaddress.ip_address("127.0.0.2"))
    assert not destinations.allows(ipaddress.ip_address("192.168.0.1"))


def test_an_address_not_allowed_is_refused_at_submit() -> None:
    with pytest.raises(InvalidRequest, match="callback_hosts") as refused:
        Destinations().check_url("http://[::1]:8080/hook")
    assert refused.value.param == "callback_url"
    Destinations(("::1",)).check_url("http://[::1]:8080/hook")
    Destinations().check_url("https://hooks.example.com/x")  # a name is checked when sent


async def test_a_name_is_resolved_checked_and_pinned_when_sent() -> None:
    with pytest.raises(DestinationRefused, match="localhost resolves to"):
        await Destinations().target("http://localhost:8080/hook")
    target = await Destinations(("127.0.0.0/8", "::1")).target("http://user:pw@localhost:8080/hook?x=1")
    assert target in (
        Target("http://user:pw@127.0.0.1:8080/hook?x=1", "localhost:8080", "localhost"),
        Target("http://user:pw@[::1]:8080/hook?x=1", "localhost:8080", "localhost"),
    )


async def test_a_name_callback_hosts_allows_is_trusted_as_is() -> None:
    destinations = Destinations(("*.svc.cluster.local", "localhost"))
    assert await destinations.target("http://localhost:9/x") == Target("http://localhost:9/x")
    url = "http://hooks.tools.svc.cluster.local/x"
    assert await destinations.target(url) == Target(url)
    with pytest.raises(DestinationRefused, match="cannot resolve"):
        await destinations.target("http://no-such-host.invalid/x")


@pytest.mark.parametrize("rule", ["", "hooks example", "h\u00f6st.example", "http://x/"])
def test_a_rule_that_is_neither_a_network_nor_a_host_is_a_config_error(rule: str) -> None:
    with pytest.raises(ValueError, match="callback_hosts entry"):
        JobsConfig(callback_hosts=(rule,))
