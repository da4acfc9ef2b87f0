"""A gateway replica's death as its neighbours see it: on SIGTERM its /readyz answers 503 before
it refuses anything (`[gateway] drain_delay`), so a load balancer moves callers off first; on
SIGKILL, round after round, its pods (templates and the pods forked from them, busy or idle)
die with it, and nothing of it is left running."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.gateway.conftest import StartUp
from tests.gateway.jobs.test_restart import REPLICA_TOOLS
from tests.gateway.test_shutdown import http_call, wait_gone

pytestmark = pytest.mark.slow

ROUNDS = 3
#: Seconds a dead gateway's pods may take to notice and exit (a busy one is cut off, not drained).
ORPHAN_DEADLINE = 5.0


def _ready(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code
    except urllib.error.URLError:
        return 0  # refused: the listener is closed


def _busy(port: int) -> None:
    """A long call that its gateway's death cuts off."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/functions/nap/invoke",
        data=b'{"seconds": 30}',
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=60) as response:
        response.read()


def test_readiness_drops_at_sigterm_while_calls_are_still_served(up: StartUp) -> None:
    gateway = up("access_log = false\ndrain_delay = 2.0\n")
    port = gateway.http_port
    assert _ready(port) == 200
    gateway.process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    while _ready(port) != 503:
        assert time.monotonic() - sent < 1.0, "readiness still up after SIGTERM"
        time.sleep(0.02)
    # Out of rotation but still serving whoever has not heard yet.
    assert http_call(port, "add", {"a": 1}, timeout=5) == (200, "")
    while _ready(port) != 0:
        assert time.monotonic() - sent < 10, "the listener never closed"
        time.sleep(0.05)
    assert time.monotonic() - sent >= 1.9, "new calls were refused before drain_delay passed"
    gateway.process.communicate(timeout=15)
    assert gateway.process.returncode == 0
    assert wait_gone(gateway, 5) == []


def test_a_sigkilled_gateway_leaves_no_pod_behind_round_after_round(up: StartUp) -> None:
    for round_ in range(ROUNDS):
        # Two runtimes, three pods; two calls keep pods busy when the gateway dies.
        gateway = up(
            "access_log = false\n", runtimes=REPLICA_TOOLS.replace("min_replicas = 1", "min_replicas = 2")
        )
        calls = [threading.Thread(target=_busy, args=(gateway.http_port,)) for _ in range(2)]
        for call in calls:
            call.start()
        end = time.monotonic() + 20
        while len(gateway.runtime_processes()) < 5:  # two templates, three pods
            assert time.monotonic() < end, gateway.runtime_processes()
            time.sleep(0.05)
        time.sleep(0.3)  # the calls reach their pods
        gateway.process.kill()
        gateway.process.communicate(timeout=10)
        killed = time.monotonic()
        for call in calls:
            call.join(timeout=10)
        left = wait_gone(gateway, ORPHAN_DEADLINE)
        assert left == [], f"round {round_}: pods outlived their gateway: {left}"
        print(f"round {round_}: every pod gone {time.monotonic() - killed:.2f} s after the SIGKILL")
