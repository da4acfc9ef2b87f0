"""The one error hierarchy of toolmesh.

Every failure a caller can see is one of these classes. Each class carries the
statuses it is shown as on every surface, so the HTTP exception handler, the
gRPC servicers and the clients all read the same table instead of keeping their
own::

    ToolmeshError                       (base; never raised itself)
    ├── InvalidRequest         400  INVALID_ARGUMENT    malformed JSON, wrong shape
    │   ├── InvalidArguments   422  INVALID_ARGUMENT    arguments break the schema
    │   └── UnsupportedMediaType 415 INVALID_ARGUMENT   a body not sent as JSON
    ├── Unauthenticated        401  UNAUTHENTICATED     missing or unknown API key, refused access token
    ├── PermissionDenied       403  PERMISSION_DENIED   key not scoped for the function
    │   └── NotFromFreeText    403  PERMISSION_DENIED   free text may not run it (free_text="never")
    ├── FunctionNotFound       404  NOT_FOUND           no function by that name
    ├── JobNotFound            404  NOT_FOUND           no job by that id (or one of another key)
    ├── TriggerNotFound        404  NOT_FOUND           no trigger (or webhook) by that name
    ├── PayloadTooLarge        413  RESOURCE_EXHAUSTED  body over the size limit
    ├── RateLimited            429  RESOURCE_EXHAUSTED  per-key rate limit hit
    ├── ResourceExhausted      507  RESOURCE_EXHAUSTED  a call passed its runtime's memory or result limit
    ├── Overloaded             503  RESOURCE_EXHAUSTED  in-flight limit of a runtime reached
    ├── Unavailable            503  UNAVAILABLE         no runtime can take the call (draining, down)
    │   └── StateUnavailable   503  UNAVAILABLE         the shared state (Redis, [state]) cannot be reached
    ├── FunctionTimeout        504  DEADLINE_EXCEEDED   the call ran out of time
    ├── Cancelled              499  CANCELLED           the caller went away
    ├── FunctionError          502  UNKNOWN             the function raised (raised by clients/ctx.invoke)
    ├── InputRequired          409  FAILED_PRECONDITION the function asks its caller (ctx.elicit...) and
    │                                                   the caller cannot answer (only MCP clients can)
    ├── ConfirmationInvalid    409  FAILED_PRECONDITION a free-text call's confirmation is unknown,
    │                                                   expired or already used
    ├── IdempotencyConflict    409  ABORTED             the call of this Idempotency-Key is still running
    ├── IdempotencyMismatch    422  INVALID_ARGUMENT    the key was used for another call (a subclass
    │                                                   of InvalidRequest, drawn here to keep its story)
    ├── OutcomeUnknown         409  FAILED_PRECONDITION the replica running the key's call stopped
    │                                                   mid-call; it is not run a second time
    └── InternalError          500  INTERNAL            a bug in toolmesh, never a client's mistake

`code` is the stable machine-readable name of each class; it travels in result
errors (``Error.code`` in the protos), in the HTTP error envelope and in the
``toolmesh-error-code`` trailing metadata of gRPC calls, so a client rebuilds
the exact class with `from_code`. How each surface shows an error (the HTTP
envelope, JSON-RPC, gRPC status and trailers, the pod socket) is written and read
in one module, `toolmesh.error_shapes`, which also translates foreign gRPC errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, overload

if TYPE_CHECKING:
    import grpc


class GrpcStatus:
    """A class's gRPC status, named when the class is defined and looked up in grpc on first use.

    `import toolmesh` must not load grpc: grpc's C core reads GRPC_VERBOSITY once, when it
    loads, and the processes that serve set that first (grpc_verbosity.py)."""

    __slots__ = ("_code", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._code: grpc.StatusCode | None = None

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> grpc.StatusCode: ...
    @overload
    def __get__(self, instance: object, owner: type[Any] | None = None) -> grpc.StatusCode: ...
    def __get__(self, instance: object | None, owner: type[Any] | None = None) -> grpc.StatusCode:
        if self._code is None:
            import grpc

            self._code = grpc.StatusCode[self.name]
        return self._code


@dataclass(frozen=True, slots=True)
class Violation:
    """One problem with one argument: where, what was expected, what arrived."""

    path: str
    expected: str
    got: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "expected": self.expected, "got": self.got, "message": self.message}


class ToolmeshError(Exception):
    """Base of every toolmesh error. Subclasses set the class-level statuses."""

    code: ClassVar[str] = "error"
    http_status: ClassVar[int] = 500
    grpc_status: ClassVar[GrpcStatus] = GrpcStatus("UNKNOWN")
    #: The ``type`` of an OpenAI-style error envelope.
    openai_type: ClassVar[str] = "server_error"
    #: JSON-RPC error code, for MCP protocol-level errors.
    jsonrpc_code: ClassVar[int] = -32603
    #: Whether sending the same call again may succeed.
    retryable: ClassVar[bool] = False
    #: The HTTP `WWW-Authenticate` value of a refusal (OAuth's bearer challenge); None: the default.
    challenge: str | None = None

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        retry_after: float | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.retry_after = retry_after
        self.details: dict[str, Any] = dict(details or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class InvalidRequest(ToolmeshError):
    """The request is malformed: bad JSON, a wrong shape, a missing field."""

    code = "invalid_request"
    http_status = 400
    grpc_status = GrpcStatus("INVALID_ARGUMENT")
    openai_type = "invalid_request_error"
    jsonrpc_code = -32602


class InvalidArguments(InvalidRequest):
    """The arguments do not match the function's schema; `violations` names each problem."""

    code = "invalid_arguments"
    http_status = 422

    def __init__(self, message: str, violations: Sequence[Violation], **kwargs: Any) -> None:
        details = {"violations": [v.to_dict() for v in violations]}
        super().__init__(message, details=details, **kwargs)
        self.violations = tuple(violations)


class UnsupportedMediaType(InvalidRequest):
    """A request body was not declared as JSON (`Content-Type`), so it is not read."""

    code = "unsupported_media_type"
    http_status = 415


class Unauthenticated(ToolmeshError):
    """No API key, or one the gateway does not know."""

    code = "unauthenticated"
    http_status = 401
    grpc_status = GrpcStatus("UNAUTHENTICATED")
    openai_type = "authentication_error"
    jsonrpc_code = -32001


class PermissionDenied(ToolmeshError):
    """The API key is valid but its scopes do not include the function."""

    code = "permission_denied"
    http_status = 403
    grpc_status = GrpcStatus("PERMISSION_DENIED")
    openai_type = "permission_error"
    jsonrpc_code = -32003


class NotFromFreeText(PermissionDenied):
    """Free text (`/v1/execute`) chose a function that may not run from free text
    (`free_text="never"`); `details` hold the planned call. Call the function directly."""

    code = "not_from_free_text"


class FunctionNotFound(ToolmeshError):
    """No function has that name; `details["suggestions"]` lists close names."""

    code = "function_not_found"
    http_status = 404
    grpc_status = GrpcStatus("NOT_FOUND")
    openai_type = "not_found_error"
    jsonrpc_code = -32602


class JobNotFound(ToolmeshError):
    """No asynchronous job has that id for this caller: a job of another key is not found either."""

    code = "job_not_found"
    http_status = 404
    grpc_status = GrpcStatus("NOT_FOUND")
    openai_type = "not_found_error"
    jsonrpc_code = -32602


class TriggerNotFound(ToolmeshError):
    """No `[[triggers]]` entry (or webhook, for `POST /v1/hooks/{name}`) has that name."""

    code = "trigger_not_found"
    http_status = 404
    grpc_status = GrpcStatus("NOT_FOUND")
    openai_type = "not_found_error"
    jsonrpc_code = -32602


class PayloadTooLarge(ToolmeshError):
    """The request body is larger than the configured limit."""

    code = "payload_too_large"
    http_status = 413
    grpc_status = GrpcStatus("RESOURCE_EXHAUSTED")
    openai_type = "invalid_request_error"
    jsonrpc_code = -32600


class RateLimited(ToolmeshError):
    """The API key sent more calls than its rate allows; see `retry_after`."""

    code = "rate_limited"
    http_status = 429
    grpc_status = GrpcStatus("RESOURCE_EXHAUSTED")
    openai_type = "rate_limit_error"
    jsonrpc_code = -32029
    retryable = True


class Overloaded(ToolmeshError):
    """A runtime is at its in-flight limit and turned the call away."""

    code = "overloaded"
    http_status = 503
    grpc_status = GrpcStatus("RESOURCE_EXHAUSTED")
    jsonrpc_code = -32000
    retryable = True


class ResourceExhausted(ToolmeshError):
    """A call passed a limit of its runtime (``max_memory_mb``, ``max_result_bytes``); the
    message names the limit. The call ran (or began to), so sending it again fails the same way.
    507 rather than 413: the request was fine, the function's own appetite was not."""

    code = "resource_exhausted"
    http_status = 507
    grpc_status = GrpcStatus("RESOURCE_EXHAUSTED")
    jsonrpc_code = -32000


class Unavailable(ToolmeshError):
    """No runtime can take the call now (starting, draining, crashed)."""

    code = "unavailable"
    http_status = 503
    grpc_status = GrpcStatus("UNAVAILABLE")
    jsonrpc_code = -32000
    retryable = True


class StateUnavailable(Unavailable):
    """The gateway's shared state (`[state]` url, Redis) did not answer, so it cannot check the
    caller's rate limit or read the session: the request is refused rather than let through
    unlimited (fail closed). Retrying once Redis is back succeeds."""

    code = "state_unavailable"


class FunctionTimeout(ToolmeshError):
    """The call passed its function's timeout or the caller's deadline."""

    code = "timeout"
    http_status = 504
    grpc_status = GrpcStatus("DEADLINE_EXCEEDED")
    jsonrpc_code = -32000


class Cancelled(ToolmeshError):
    """The caller cancelled the call or went away before it finished."""

    code = "cancelled"
    http_status = 499
    grpc_status = GrpcStatus("CANCELLED")
    jsonrpc_code = -32800


class FunctionError(ToolmeshError):
    """The function itself raised. Servers report this as a result with
    ``is_error``; clients and ``ctx.invoke`` raise it when asked to."""

    code = "function_error"
    http_status = 502
    grpc_status = GrpcStatus("UNKNOWN")


class InputRequired(ToolmeshError):
    """The function asked its caller something (`ctx.elicit`, `ctx.sample`, `ctx.list_roots`) and
    the caller cannot answer: HTTP, gRPC and the OpenAI formats have no channel back, and an MCP
    client may not have declared the capability. The call ran up to the question; nothing else
    happened. Call it through an MCP client that answers elicitation/sampling/roots requests."""

    code = "input_required"
    http_status = 409
    grpc_status = GrpcStatus("FAILED_PRECONDITION")
    openai_type = "invalid_request_error"
    jsonrpc_code = -32600


class ConfirmationInvalid(ToolmeshError):
    """A confirmation sent back to `/v1/execute` names no pending call: it never existed, it
    expired, or it was used already (each runs its call once). Send the prompt again."""

    code = "confirmation_invalid"
    http_status = 409
    grpc_status = GrpcStatus("FAILED_PRECONDITION")
    openai_type = "invalid_request_error"
    jsonrpc_code = -32600


class IdempotencyConflict(ToolmeshError):
    """A call with this `Idempotency-Key` is still running (on this gateway or another replica) and
    did not finish while the repeat waited for it. Send the repeat again later: once the first call
    finishes, the repeat answers its outcome without running anything."""

    code = "idempotency_conflict"
    http_status = 409
    grpc_status = GrpcStatus("ABORTED")
    openai_type = "invalid_request_error"
    jsonrpc_code = -32000
    retryable = True


class IdempotencyMismatch(InvalidRequest):
    """The `Idempotency-Key` was used before by this caller for another function or other
    arguments. A key names one call: send a new key for a new call."""

    code = "idempotency_mismatch"
    http_status = 422


class OutcomeUnknown(ToolmeshError):
    """The call with this `Idempotency-Key` started, but what ran it (a gateway replica, or its pod)
    stopped before its outcome was recorded: the function may or may not have run. The function is
    not idempotent, so it is never run a second time under this key; every repeat says this.
    Check the function's effects (what it writes or sends), and if it did not run, call it again
    with a new key."""

    code = "outcome_unknown"
    http_status = 409
    grpc_status = GrpcStatus("FAILED_PRECONDITION")
    openai_type = "invalid_request_error"
    jsonrpc_code = -32000


class InternalError(ToolmeshError):
    """Something inside toolmesh went wrong; never caused by client input."""

    code = "internal_error"


ERROR_CLASSES: tuple[type[ToolmeshError], ...] = (
    InvalidRequest,
    InvalidArguments,
    UnsupportedMediaType,
    Unauthenticated,
    PermissionDenied,
    NotFromFreeText,
    FunctionNotFound,
    JobNotFound,
    TriggerNotFound,
    PayloadTooLarge,
    RateLimited,
    Overloaded,
    ResourceExhausted,
    Unavailable,
    StateUnavailable,
    FunctionTimeout,
    Cancelled,
    FunctionError,
    InputRequired,
    ConfirmationInvalid,
    IdempotencyConflict,
    IdempotencyMismatch,
    OutcomeUnknown,
    InternalError,
)
_BY_CODE: dict[str, type[ToolmeshError]] = {cls.code: cls for cls in ERROR_CLASSES}


def from_code(code: str, message: str, **kwargs: Any) -> ToolmeshError:
    """Rebuild an error from its stable `code` (unknown codes become InternalError)."""
    cls = _BY_CODE.get(code, InternalError)
    if cls is InvalidArguments:
        details = dict(kwargs.pop("details", None) or {})
        violations = [Violation(**v) for v in details.get("violations", [])]
        return InvalidArguments(message, violations, **kwargs)
    return cls(message, **kwargs)


class DefinitionError(Exception):
    """A user module cannot be hosted: a bad name, an unsupported parameter type,
    a duplicate function. Raised while loading, before anything is served; never
    seen by clients, so it carries no statuses."""
