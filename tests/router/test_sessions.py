"""Sessions in SQLite: history in order, TTL, and both size bounds."""

from __future__ import annotations

from pathlib import Path

from toolmesh.router.sessions import MAX_RESULT_CHARS, SessionStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def store(tmp_path: Path, clock: Clock, **bounds: int) -> SessionStore:
    settings = {"ttl": 60, "max_sessions": 100, "max_turns": 10} | bounds
    return SessionStore(tmp_path / "sessions.sqlite3", clock=clock, **settings)


def test_history_keeps_turns_in_order_and_survives_a_restart(tmp_path: Path) -> None:
    clock = Clock()
    sessions = store(tmp_path, clock)
    sessions.record("s", "weather in Oslo", "get_weather", {"city": "Oslo"}, {"structured": {"t": 3}})
    clock.now += 1
    sessions.record("s", "bake a cake", None, {}, None)
    sessions.close()
    history = store(tmp_path, clock).history("s")
    assert [t.prompt for t in history] == ["weather in Oslo", "bake a cake"]
    assert history[0].arguments == {"city": "Oslo"} and history[0].result == {"structured": {"t": 3}}
    assert history[1].function is None and history[0].to_dict()["function"] == "get_weather"


def test_sessions_expire_after_their_ttl(tmp_path: Path) -> None:
    clock = Clock()
    sessions = store(tmp_path, clock, ttl=60)
    sessions.record("old", "p", "f", {}, None)
    clock.now += 30
    sessions.record("fresh", "p", "f", {}, None)
    clock.now += 45  # "old" is 75 s idle, "fresh" 45 s
    assert sessions.history("old") == [] and len(sessions.history("fresh")) == 1
    assert len(sessions) == 1
    sessions.record("old", "again", "f", {}, None)  # an expired id starts afresh
    assert [t.prompt for t in sessions.history("old")] == ["again"]


def test_size_bounds_drop_the_oldest(tmp_path: Path) -> None:
    clock = Clock()
    sessions = store(tmp_path, clock, max_sessions=3, max_turns=2)
    for i in range(5):
        clock.now += 1
        sessions.record(f"s{i}", "p", "f", {}, None)
    assert len(sessions) == 3 and sessions.history("s0") == [] and sessions.history("s4")
    for i in range(4):
        sessions.record("s4", f"turn {i}", "f", {}, None)
    assert [t.prompt for t in sessions.history("s4")] == ["turn 2", "turn 3"]
    sessions.record("s4", "big", "f", {}, {"text": "x" * (2 * MAX_RESULT_CHARS)})
    assert "truncated" in sessions.history("s4")[-1].result
