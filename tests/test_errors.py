"""The error hierarchy and its shapes: one table of statuses, exact round trips on every wire."""

from __future__ import annotations

import json

import grpc
import pytest

import toolmesh
from toolmesh import error_shapes, errors


def _example(cls: type[errors.ToolmeshError]) -> errors.ToolmeshError:
    if cls is errors.InvalidArguments:
        return cls("bad", [errors.Violation("a", "integer", "string 'x'", "a: bad")], param="a")
    return cls("message", param="p", retry_after=2.0, details={"extra": [1]})


def _same(a: errors.ToolmeshError, b: errors.ToolmeshError) -> None:
    assert type(a) is type(b)
    assert error_shapes.envelope(a) == error_shapes.envelope(b)
    assert a.retry_after == b.retry_after


def test_every_grpc_status_has_its_own_fallback_class() -> None:
    # A foreign peer sends no toolmesh trailers: each status maps by the table, and the table
    # has no default to hide a status it forgot.
    assert set(error_shapes.GRPC_STATUS_CLASSES) == set(grpc.StatusCode) - {grpc.StatusCode.OK}
    for status, cls in error_shapes.GRPC_STATUS_CLASSES.items():
        error = error_shapes.from_grpc_status(status, "boom")
        assert type(error) is cls and error.message == "boom"


@pytest.mark.parametrize("cls", errors.ERROR_CLASSES)
def test_a_class_status_maps_back_to_a_class_with_that_status(cls: type[errors.ToolmeshError]) -> None:
    # Without trailers a client still gets an error whose gRPC status is the one sent.
    assert error_shapes.GRPC_STATUS_CLASSES[cls.grpc_status].grpc_status is cls.grpc_status


@pytest.mark.parametrize("cls", errors.ERROR_CLASSES)
def test_each_class_round_trips_through_grpc_trailers(cls: type[errors.ToolmeshError]) -> None:
    original = _example(cls)
    status, details, trailers = error_shapes.grpc_status(original)
    assert status is cls.grpc_status
    _same(error_shapes.from_grpc_status(status, details, trailers), original)


@pytest.mark.parametrize("cls", errors.ERROR_CLASSES)
def test_each_class_round_trips_through_the_pod_socket(cls: type[errors.ToolmeshError]) -> None:
    original = _example(cls)
    _same(error_shapes.from_pod_error(error_shapes.pod_error(original)), original)


@pytest.mark.parametrize("cls", errors.ERROR_CLASSES)
def test_each_class_round_trips_through_http(cls: type[errors.ToolmeshError]) -> None:
    original = _example(cls)
    rendered = error_shapes.http_error(original)
    assert rendered.status == cls.http_status
    assert rendered.headers.get("retry-after") == (None if original.retry_after is None else "2")
    rebuilt = error_shapes.from_envelope(json.loads(rendered.body), original.retry_after)
    assert rebuilt is not None
    _same(rebuilt, original)


def test_codes_are_unique_and_statuses_are_client_or_server_errors() -> None:
    codes = [cls.code for cls in errors.ERROR_CLASSES]
    assert len(codes) == len(set(codes))
    for cls in errors.ERROR_CLASSES:
        assert 400 <= cls.http_status < 600
    client_mistakes = [
        errors.InvalidRequest,
        errors.InvalidArguments,
        errors.FunctionNotFound,
        errors.PayloadTooLarge,
        errors.Unauthenticated,
        errors.PermissionDenied,
    ]
    assert all(cls.http_status < 500 for cls in client_mistakes), "a client's mistake is never a 5xx"


def test_openai_style_envelope() -> None:
    error = toolmesh.FunctionNotFound(
        "no function named 'x'", param="function", details={"suggestions": ["y"]}
    )
    assert error_shapes.envelope(error) == {
        "error": {
            "type": "not_found_error",
            "code": "function_not_found",
            "message": "no function named 'x'",
            "param": "function",
            "suggestions": ["y"],
        }
    }


def test_jsonrpc_and_http_forms() -> None:
    error = toolmesh.Unauthenticated("missing API key")
    assert error_shapes.jsonrpc_error(error) == {
        "code": -32001,
        "message": "missing API key",
        "data": error_shapes.envelope(error)["error"],
    }
    rendered = error_shapes.http_error(error, jsonrpc=True)
    assert rendered.status == 401 and rendered.headers["www-authenticate"].startswith("Bearer")
    assert json.loads(rendered.body) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": error_shapes.jsonrpc_error(error),
    }


def test_a_body_that_is_not_an_envelope_is_not_read_as_one() -> None:
    assert error_shapes.from_envelope({"detail": "Not Found"}) is None
    assert error_shapes.from_envelope("<html>") is None


def test_a_foreign_peer_without_trailers_maps_by_status() -> None:
    error = error_shapes.from_grpc_status(
        grpc.StatusCode.UNAVAILABLE, "connection refused", (("other", "x"),)
    )
    assert isinstance(error, toolmesh.Unavailable) and error.retryable
