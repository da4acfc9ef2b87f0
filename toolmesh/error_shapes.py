"""Every form a toolmesh error takes on a wire: written here, read back here, nowhere else.

`errors.py` says what each error *is* (its class, code and statuses); this module renders
those statuses for each surface and rebuilds errors from what a peer sent:

    form                          write                       read back
    OpenAI-style JSON envelope    envelope(error)             from_envelope(body, retry_after)
    HTTP JSON response            http_error(error)           (the client reads the envelope)
    JSON-RPC 2.0 error (MCP)      jsonrpc_error(error)
    gRPC status + trailers        grpc_status(error)          from_grpc_status(...), from_rpc_error(exc)
    pod socket ERROR frame        pod_error(error)            from_pod_error(payload)

gRPC, the pod socket and the envelope carry the same facts (code, message, param,
retry_after, details), so a toolmesh peer always rebuilds the exact class.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from toolmesh.errors import (
    Cancelled,
    FunctionNotFound,
    FunctionTimeout,
    IdempotencyConflict,
    InputRequired,
    InternalError,
    InvalidRequest,
    Overloaded,
    PermissionDenied,
    ToolmeshError,
    Unauthenticated,
    Unavailable,
    from_code,
)

#: gRPC trailing-metadata keys that carry the toolmesh error across the wire.
GRPC_CODE_KEY = "toolmesh-error-code"
GRPC_DETAILS_KEY = "toolmesh-error-details-bin"
#: Envelope fields that are not details.
_ENVELOPE_KEYS = frozenset({"type", "code", "message", "param"})

Trailers = tuple[tuple[str, str | bytes], ...]


# -- the facts every form carries ----------------------------------------------------------


#: For peers that are not toolmesh (no trailing metadata): the closest class for every status but OK.
GRPC_STATUS_CLASSES: dict[grpc.StatusCode, type[ToolmeshError]] = {
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.UNKNOWN: InternalError,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidRequest,
    grpc.StatusCode.DEADLINE_EXCEEDED: FunctionTimeout,
    grpc.StatusCode.NOT_FOUND: FunctionNotFound,
    grpc.StatusCode.ALREADY_EXISTS: InvalidRequest,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.RESOURCE_EXHAUSTED: Overloaded,
    grpc.StatusCode.FAILED_PRECONDITION: InputRequired,
    grpc.StatusCode.ABORTED: IdempotencyConflict,
    grpc.StatusCode.OUT_OF_RANGE: InvalidRequest,
    grpc.StatusCode.UNIMPLEMENTED: InternalError,
    grpc.StatusCode.INTERNAL: InternalError,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DATA_LOSS: InternalError,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
}


def _extra(error: ToolmeshError) -> dict[str, Any]:
    """What an error carries besides its code and message."""
    extra: dict[str, Any] = dict(error.details)
    if error.param is not None:
        extra["param"] = error.param
    if error.retry_after is not None:
        extra["retry_after"] = error.retry_after
    return extra


def _rebuild(code: str, message: str, extra: Mapping[str, Any]) -> ToolmeshError:
    details = dict(extra)
    param = details.pop("param", None)
    retry_after = details.pop("retry_after", None)
    return from_code(code, message, param=param, retry_after=retry_after, details=details)


# -- HTTP and JSON-RPC -----------------------------------------------------------------------


def envelope(error: ToolmeshError) -> dict[str, Any]:
    """The OpenAI-style error envelope: ``{"error": {type, code, message, param, ...details}}``."""
    body: dict[str, Any] = {
        "type": error.openai_type,
        "code": error.code,
        "message": error.message,
        "param": error.param,
    }
    body.update(error.details)
    return {"error": body}


def from_envelope(document: Any, retry_after: float | None = None) -> ToolmeshError | None:
    """The error an envelope describes (`retry_after` comes from the HTTP header), or None
    when `document` is not a toolmesh envelope."""
    error = document.get("error") if isinstance(document, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        return None
    details = {key: value for key, value in error.items() if key not in _ENVELOPE_KEYS}
    message = str(error.get("message") or "")
    try:
        return from_code(
            error["code"], message, param=error.get("param"), retry_after=retry_after, details=details
        )
    except (KeyError, TypeError):  # violations of another shape than toolmesh's
        return InternalError(f"malformed {error['code']} error: {message}")


def jsonrpc_error(error: ToolmeshError) -> dict[str, Any]:
    """A JSON-RPC 2.0 error object, with the envelope's fields as its `data`."""
    return {"code": error.jsonrpc_code, "message": error.message, "data": envelope(error)["error"]}


@dataclass(frozen=True, slots=True)
class HttpError:
    """An HTTP error response: status, headers and a JSON body."""

    status: int
    headers: dict[str, str]
    body: bytes


def http_error(error: ToolmeshError, *, jsonrpc: bool = False) -> HttpError:
    """The HTTP response for `error`: the envelope as the body, or (`jsonrpc`, for an MCP request
    refused before it was read) a JSON-RPC error with no id."""
    headers = {"content-type": "application/json"}
    if error.retry_after is not None:
        headers["retry-after"] = str(max(1, round(error.retry_after)))
    if error.challenge is not None:
        headers["www-authenticate"] = error.challenge
    elif isinstance(error, Unauthenticated):
        headers["www-authenticate"] = 'Bearer realm="toolmesh"'
    document = {"jsonrpc": "2.0", "id": None, "error": jsonrpc_error(error)} if jsonrpc else envelope(error)
    return HttpError(error.http_status, headers, json.dumps(document).encode())


# -- gRPC --------------------------------------------------------------------------------------


def grpc_status(error: ToolmeshError) -> tuple[grpc.StatusCode, str, Trailers]:
    """The status code, details and trailing metadata an RPC ends with for `error`."""
    trailers: Trailers = ((GRPC_CODE_KEY, error.code), (GRPC_DETAILS_KEY, json.dumps(_extra(error)).encode()))
    return error.grpc_status, error.message, trailers


def from_grpc_status(
    status: grpc.StatusCode, message: str, trailers: Sequence[tuple[str, str | bytes]] = ()
) -> ToolmeshError:
    """Translate a failed gRPC call into a toolmesh error: the exact class when the
    peer is toolmesh (it sends the code in trailing metadata), else by status."""
    found = dict(trailers)
    code = found.get(GRPC_CODE_KEY)
    if isinstance(code, str):
        raw = found.get(GRPC_DETAILS_KEY, b"{}")
        return _rebuild(code, message, json.loads(raw) if isinstance(raw, bytes) else {})
    return GRPC_STATUS_CLASSES[status](message or status.name.lower())


def from_rpc_error(exc: grpc.aio.AioRpcError | grpc.RpcError, peer: str = "") -> ToolmeshError:
    """Translate an exception from a gRPC call (aio or sync) into a toolmesh error.

    `peer` says who was called ("runtime 'tools'", "the gateway at host:port"),
    for the message when it never answered.
    """
    code: grpc.StatusCode = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
    details: str = (exc.details() if hasattr(exc, "details") else None) or ""
    metadata: Any = (exc.trailing_metadata() if hasattr(exc, "trailing_metadata") else None) or ()
    trailers: list[tuple[str, str | bytes]] = [(str(key), value) for key, value in metadata]
    if code is grpc.StatusCode.UNAVAILABLE and not any(key == GRPC_CODE_KEY for key, _ in trailers):
        return Unavailable(f"{peer or 'the peer'} is unavailable: {details}", retry_after=1.0)
    return from_grpc_status(code, details, trailers)


# -- the pod socket protocol -----------------------------------------------------------------


def pod_error(error: ToolmeshError) -> bytes:
    """The payload of an ERROR frame (toolmesh/protocol/frames.py)."""
    return json.dumps({"code": error.code, "message": error.message, "extra": _extra(error)}).encode()


def from_pod_error(payload: bytes) -> ToolmeshError:
    document = json.loads(payload)
    return _rebuild(document["code"], document["message"], document["extra"])
