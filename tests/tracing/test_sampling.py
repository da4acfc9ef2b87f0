"""OTEL_TRACES_SAMPLER's standard choices, decided as the SDK decides them."""

from __future__ import annotations

import random

import pytest
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased

from toolmesh.tracing.sampling import sampler_from


def test_the_default_follows_the_parent_and_records_roots() -> None:
    sample = sampler_from({})
    assert sample(1, None) and sample(1, True)
    assert not sample(1, False)


@pytest.mark.parametrize("name", ["always_off", "parentbased_always_off"])
def test_always_off_records_no_root(name: str) -> None:
    assert not sampler_from({"OTEL_TRACES_SAMPLER": name})(1, None)


def test_a_ratio_agrees_with_the_sdk_on_every_trace_id() -> None:
    sample = sampler_from({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"})
    bound = TraceIdRatioBased(0.25).bound
    ids = [random.getrandbits(128) for _ in range(4000)]
    assert [sample(i, None) for i in ids] == [(i & (2**64 - 1)) < bound for i in ids]
    assert 800 < sum(sample(i, None) for i in ids) < 1200
    # Without the parent-based wrapper the parent's decision does not count.
    assert sample(ids[0], False) == sample(ids[0], None)


def test_parent_based_ratio_follows_a_parent_and_samples_roots() -> None:
    sample = sampler_from({"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"})
    assert not sample(1, None)
    assert sample(1, True)


@pytest.mark.parametrize(
    "environ",
    [
        {"OTEL_TRACES_SAMPLER": "jaeger_remote"},
        {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "lots"},
        {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
    ],
)
def test_what_cannot_be_understood_samples_everything_with_a_warning(
    environ: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    sample = sampler_from(environ)
    assert all(sample(random.getrandbits(128), None) for _ in range(100))
    assert "toolmesh.tracing" in {record.name for record in caplog.records}
