"""The `listing` trailer a pod's gRPC answers carry once its functions changed on their own."""

from __future__ import annotations

import pytest

from toolmesh.protocol.listing_trailer import LISTING_TRAILER, PodListing, listing_in, this_pod


def test_a_trailer_says_which_pod_and_which_revision() -> None:
    key, value = PodListing("clock-7d9f/1/a1b2c3", 3).encode()
    assert key == LISTING_TRAILER
    assert listing_in([("other", "x"), (key, value)]) == PodListing("clock-7d9f/1/a1b2c3", 3)
    assert listing_in([(key, value.encode())]) == PodListing("clock-7d9f/1/a1b2c3", 3)


def test_no_trailer_or_a_malformed_one_is_none() -> None:
    assert listing_in(None) is None
    assert listing_in([("grpc-status", "0")]) is None
    assert listing_in([(LISTING_TRAILER, "no-revision")]) is None
    assert listing_in([(LISTING_TRAILER, "pod x")]) is None
    with pytest.raises(ValueError, match="<pod> <revision>"):
        PodListing.decode("7")


def test_a_pod_restarted_under_the_same_name_and_pid_is_another_pod() -> None:
    """A container restarted in its Kubernetes pod keeps the host name and (often) pid 1."""
    assert this_pod() != this_pod()
