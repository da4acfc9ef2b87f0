"""`[[triggers]]`: a mistake fails start-up with a ConfigError naming the trigger and the key."""

from __future__ import annotations

from typing import Any

import pytest

from toolmesh.config import ConfigError, parse_config


def triggers(*entries: dict[str, Any], **rest: Any) -> dict[str, Any]:
    return {"triggers": list(entries), **rest}


def test_a_schedule_and_a_webhook_are_read_into_typed_triggers() -> None:
    config = parse_config(
        triggers(
            {"name": "nightly", "function": "reports.build", "schedule": "0 3 * * *", "timezone": "UTC"},
            {
                "name": "gh",
                "function": "ci.on_push",
                "webhook": "github",
                "secret_env": "S",
                "argument": "event",
            },
        )
    )
    nightly, github = config.triggers
    cron = nightly.cron()
    assert cron is not None and cron.hours == {3} and cron.minutes == {0}
    assert github.webhook == "github" and github.argument == "event"


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"name": "a", "function": "f", "schedule": "0 3 * *"}, "5 fields"),
        ({"name": "a", "function": "f", "schedule": "61 * * * *"}, "minute '61' is not from 0 to 59"),
        (
            {"name": "a", "function": "f", "schedule": "0 3 * * *", "timezone": "Mars/Base"},
            "unknown time zone",
        ),
        ({"name": "a", "function": "f", "every": "soon"}, "every must be a number and a unit"),
        ({"name": "a", "function": "f"}, "exactly one source"),
        (
            {"name": "a", "function": "f", "every": "5s", "webhook": "x", "secret_env": "S"},
            "exactly one source",
        ),
        ({"name": "a", "function": "f", "webhook": "x"}, "needs secret_env"),
        ({"name": "a", "function": "f", "every": "5s", "max_attempts": 0}, "max_attempts"),
        ({"name": "a", "function": "f", "nats_subject": "s"}, "nats_subject needs nats_url"),
        ({"name": "a", "function": "f", "every": "5s", "nats_url": "nats://n:4222"}, "go with nats_subject"),
        (
            {"name": "a", "function": "f", "nats_subject": "s", "nats_url": "http://n"},
            "must start with nats://",
        ),
        ({"name": "a", "function": "f", "postgres_channel": "c"}, "postgres_channel needs postgres_url"),
        (
            {"name": "a", "function": "f", "every": "5s", "postgres_url": "postgresql://d"},
            "goes with postgres",
        ),
        (
            {"name": "a", "function": "f", "postgres_channel": "c", "postgres_url": "mysql://d"},
            "must start with postgresql://",
        ),
        (
            {
                "name": "a",
                "function": "f",
                "redis_stream": "s",
                "postgres_channel": "c",
                "postgres_url": "postgresql://d",
            },
            "exactly one source",
        ),
        ({"name": "a", "function": "f", "every": "5s", "redis_url": "redis://r"}, "goes with redis_stream"),
        (
            {"name": "a", "function": "f", "redis_stream": "s", "redis_url": "http://r"},
            "must start with redis://",
        ),
    ],
)
def test_a_wrong_trigger_is_a_config_error_that_says_what(entry: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError, match="triggers") as caught:
        parse_config(triggers(entry))
    assert says in str(caught.value)


def test_trigger_names_and_webhooks_are_each_one_triggers() -> None:
    twice = {"name": "a", "function": "f", "every": "5s"}
    with pytest.raises(ConfigError, match="triggers names repeat: a"):
        parse_config(triggers(twice, twice))
    with pytest.raises(ConfigError, match="nowhere"):
        parse_config(triggers(twice, jobs={"enabled": False}))


def test_the_docs_triggers_example_is_a_valid_config() -> None:
    import re
    import tomllib
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "jobs.md").read_text()
    (block,) = [b for b in re.findall(r"^```toml\n(.*?)^```$", page, re.M | re.S) if "orders-nats" in b]
    config = parse_config(tomllib.loads(block))
    by_name = {t.name: t for t in config.triggers}
    assert by_name["orders"].max_attempts == 3
    assert by_name["orders-nats"].nats_subject == "orders.new"
    assert by_name["rows"].postgres_channel == "row_events"
