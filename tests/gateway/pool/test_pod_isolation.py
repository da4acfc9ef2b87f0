"""The pods a gateway starts: reachable by that gateway only, and taking their subprocesses along.

Real gateways with real subprocess pods. No pod may listen on TCP (checked in the kernel's
own table of listening sockets), its sockets live in a 0700 directory of the gateway's,
and a `sleep 1000` a function started is gone once its pod is killed or the gateway stops.
"""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.pool.test_replicas import alive, eventually, ready_pids, replicas
from toolmesh import AsyncClient
from toolmesh.gateway.pool.socket_client import SocketClient

pytestmark = pytest.mark.slow

#: /proc/net/tcp's state column for a listening socket.
TCP_LISTEN = "0A"


def listening_tcp_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                if fields[3] == TCP_LISTEN:
                    inodes.add(fields[9])
    return inodes


def socket_inodes(pid: int) -> set[str]:
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(target[len("socket:[") : -1])
    return found


def sockets_in(directory: str) -> list[Path]:
    return [p for p in Path(directory).iterdir() if stat.S_ISSOCK(p.lstat().st_mode)]


def exists(path: str) -> bool:
    return os.path.exists(path)


@pytest.mark.parametrize("transport", ["socket", "grpc"])
async def test_pods_listen_on_no_tcp_port_only_in_a_private_directory(
    gateway_factory: StartGateway, transport: str
) -> None:
    gateway = await gateway_factory(runtime("tools", "isolation_tools", min_replicas=1, transport=transport))
    async with AsyncClient(gateway.url) as client:
        pid = (await client.invoke("pid", {})).structured
    [replica] = replicas(gateway).replicas
    assert replica.pid == pid
    assert socket_inodes(pid), "the pod has sockets (so the check below can see them)"
    assert not socket_inodes(pid) & listening_tcp_inodes(), "a pod listens on TCP"
    assert replica.address.startswith("unix:")
    path = replica.address.removeprefix("unix:")
    directory = os.path.dirname(path)
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert os.stat(directory).st_uid == os.geteuid()
    sockets = sockets_in(directory)
    assert {p.name for p in sockets} == {f"{pid}.grpc", f"{pid}.sock", f"{pid}.prom", f"{pid}.live"}
    assert all(stat.S_IMODE(p.lstat().st_mode) == 0o600 for p in sockets)
    assert replica.metrics_socket == f"{directory}/{pid}.prom"
    assert isinstance(replica.transport, SocketClient) == (transport == "socket")


async def test_the_gateway_reaches_its_pods_over_grpc_on_their_unix_socket(
    gateway_factory: StartGateway,
) -> None:
    gateway = await gateway_factory(runtime("tools", "isolation_tools", min_replicas=1, transport="grpc"))
    [replica] = replicas(gateway).replicas
    async with grpc.aio.insecure_channel(replica.address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    async with AsyncClient(gateway.url) as client:
        assert (await client.invoke("pid", {})).structured == replica.pid


async def test_a_subprocess_a_function_started_ends_when_the_gateway_stops(
    gateway_factory: StartGateway,
) -> None:
    gateway = await gateway_factory(runtime("tools", "isolation_tools", drain_grace=0.5))
    async with AsyncClient(gateway.url) as client:
        sleeper = (await client.invoke("spawn_sleeper", {})).structured
    assert alive(sleeper)
    directory = os.path.dirname(replicas(gateway).replicas[0].address.removeprefix("unix:"))
    await gateway.stop(grace=0)
    await eventually(lambda: not alive(sleeper))
    assert not exists(directory)


async def test_a_subprocess_a_function_started_ends_when_its_pod_is_killed(
    gateway_factory: StartGateway,
) -> None:
    gateway = await gateway_factory(runtime("tools", "isolation_tools"))
    async with AsyncClient(gateway.url) as client:
        sleeper = (await client.invoke("spawn_sleeper", {})).structured
    [pod] = ready_pids(gateway)
    assert alive(sleeper)
    os.kill(pod, signal.SIGKILL)  # no clean-up in the pod: the template kills its group
    await eventually(lambda: not alive(sleeper))


async def test_a_frozen_pod_is_killed_with_its_subprocesses(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(runtime("tools", "isolation_tools"))
    async with AsyncClient(gateway.url) as client:
        sleeper = (await client.invoke("spawn_sleeper", {})).structured
    [pod] = ready_pids(gateway)
    os.kill(pod, signal.SIGSTOP)  # a stopped pod never reaches its own clean-up
    await eventually(lambda: not alive(pod) and not alive(sleeper), timeout=15)
