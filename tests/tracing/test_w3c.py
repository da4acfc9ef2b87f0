"""traceparent as callers send it: well formed, from a later version, or wrong."""

from __future__ import annotations

import pytest

from toolmesh.tracing.w3c import Parent, format_carrier, parse

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"


def test_a_well_formed_parent_is_read_with_its_state() -> None:
    carrier = (("traceparent", f"00-{TRACE}-{SPAN}-01"), ("tracestate", "vendor=opaque"))
    assert parse(carrier) == Parent(int(TRACE, 16), int(SPAN, 16), True, "vendor=opaque")


def test_a_later_version_is_read_by_its_first_four_fields() -> None:
    assert parse((("traceparent", f"cc-{TRACE}-{SPAN}-00-what-comes-later"),)) == Parent(
        int(TRACE, 16), int(SPAN, 16), False, ""
    )


@pytest.mark.parametrize(
    "traceparent",
    [
        "",
        "garbage",
        f"ff-{TRACE}-{SPAN}-01",  # the forbidden version
        f"00-{'0' * 32}-{SPAN}-01",  # no trace id
        f"00-{TRACE}-{'0' * 16}-01",  # no parent id
        f"00-{TRACE}-{SPAN}-01-extra",  # version 00 has exactly four fields
        f"00-{TRACE[:-1]}-{SPAN}-01",
        f"00-{TRACE}-{SPAN}-0g",
        # The length of a good one, so read the quick way, but not hex digits where they belong.
        f"00-{TRACE[:-1]}_-{SPAN}-01",
        f"00-{TRACE[:-1]}+-{SPAN}-01",
        f"00-{TRACE}-{SPAN}--1",
        f"00-{TRACE}-{SPAN[:-1]}--01",
        f"00-{TRACE}-{SPAN}- 1",
        "00-\udcff-x-01",
    ],
)
def test_a_malformed_parent_is_no_parent(traceparent: str) -> None:
    assert parse((("traceparent", traceparent),)) is None


def test_upper_case_and_surrounding_space_are_forgiven() -> None:
    for traceparent in (f"00-{TRACE.upper()}-{SPAN}-01", f" 00-{TRACE}-{SPAN}-01 "):
        assert parse((("traceparent", traceparent),)) == Parent(int(TRACE, 16), int(SPAN, 16), True, "")


def test_what_is_sent_on_is_what_is_read_back() -> None:
    carrier = format_carrier(int(TRACE, 16), int(SPAN, 16), False, "a=1")
    assert carrier == (("traceparent", f"00-{TRACE}-{SPAN}-00"), ("tracestate", "a=1"))
    assert parse(carrier) == Parent(int(TRACE, 16), int(SPAN, 16), False, "a=1")
