"""The ring of recent calls: bounded, newest first, and each caller's view of it."""

from __future__ import annotations

import time

from toolmesh.gateway.core.auth import ANONYMOUS, Principal
from toolmesh.gateway.core.recent_invocations import RecentInvocations


def test_the_oldest_call_drops_out_and_the_newest_comes_first() -> None:
    ring = RecentInvocations(capacity=3)
    for n in range(5):
        ring.record(ANONYMOUS, f"r{n}", "tools.add", "ok", 0.002)
    assert [c.request_id for c in ring.latest(ANONYMOUS, 10)] == ["r4", "r3", "r2"]
    assert [c.request_id for c in ring.latest(ANONYMOUS, 1)] == ["r4"]
    [newest] = ring.latest(ANONYMOUS, 1)
    assert newest.duration_ms == 2.0 and abs(newest.started - (time.time() - 0.002)) < 5
    entry = newest.to_dict()
    assert entry["function"] == "tools.add" and entry["principal"] == "anonymous"
    assert str(entry["time"]).endswith("Z")


def test_a_key_sees_its_own_calls_of_functions_in_scope_and_admin_sees_all() -> None:
    ring = RecentInvocations()
    alice = Principal("alice", ("tools.*",))
    bob = Principal("bob", ("*",))
    admin = Principal("ops", ("@admin",))
    ring.record(alice, "a1", "tools.add", "ok", 0.001)
    ring.record(bob, "b1", "tools.add", "error", 0.001)
    ring.record(alice, "a2", "other.secret", "ok", 0.001)  # since taken out of her scopes
    assert [c.request_id for c in ring.latest(alice, 10)] == ["a1"]
    assert [c.request_id for c in ring.latest(bob, 10)] == ["b1"]
    assert [c.request_id for c in ring.latest(admin, 10)] == ["a2", "b1", "a1"]
    assert [c.request_id for c in ring.latest(ANONYMOUS, 2)] == ["a2", "b1"]
