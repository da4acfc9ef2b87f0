"""The error hierarchy: one table of statuses, exact round trips over gRPC, every status mapped."""

from __future__ import annotations

import grpc
import pytest

import toolmesh
from toolmesh import errors


def test_every_grpc_status_code_is_translated() -> None:
    for status in grpc.StatusCode:
        if status is grpc.StatusCode.OK:
            continue
        error = errors.from_grpc_status(status, "boom")
        assert isinstance(error, errors.ToolmeshError), status
        assert error.message == "boom"


@pytest.mark.parametrize("cls", errors.ERROR_CLASSES)
def test_each_class_round_trips_through_grpc_trailers(cls: type[errors.ToolmeshError]) -> None:
    if cls is errors.InvalidArguments:
        original: errors.ToolmeshError = cls(
            "bad", [errors.Violation("a", "integer", "string 'x'", "a: bad")]
        )
    else:
        original = cls("message", param="p", retry_after=2.0, details={"extra": [1]})
    rebuilt = errors.from_grpc_status(original.grpc_status, original.message, original.grpc_trailers())
    assert type(rebuilt) is cls
    assert rebuilt.to_dict() == original.to_dict()
    assert rebuilt.retry_after == original.retry_after


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
    assert error.to_dict() == {
        "error": {
            "type": "not_found_error",
            "code": "function_not_found",
            "message": "no function named 'x'",
            "param": "function",
            "suggestions": ["y"],
        }
    }


def test_a_foreign_peer_without_trailers_maps_by_status() -> None:
    error = errors.from_grpc_status(grpc.StatusCode.UNAVAILABLE, "connection refused", (("other", "x"),))
    assert isinstance(error, toolmesh.Unavailable) and error.retryable
