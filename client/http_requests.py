"""What each method of the HTTP clients sends and how its answer is read, shared by `Client`
and `AsyncClient` so the two cannot drift apart: each method is one `Request` built here, sent
by the client's one transport call and read back by `read`; httpx's exceptions are translated
in one place, `transport_errors`."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from toolmesh.client.sse_parser import EVENT_STREAM, Event
from toolmesh.error_shapes import from_envelope
from toolmesh.errors import (
    FunctionTimeout,
    InternalError,
    InvalidRequest,
    ToolmeshError,
    Unavailable,
)
from toolmesh.runtimes.functions.results import Content, Result, content_from_document, result_from_document
from toolmesh.runtimes.functions.spec import FunctionSpec, spec_from_dict

T = TypeVar("T")

# A proxy in front of the gateway answers these with its own (non-JSON) page when the gateway is down.
_GATEWAY_DOWN = frozenset({502, 503, 504})


# -- requests: what each method sends and how its answer is read ------------------------------


@dataclass(frozen=True, slots=True)
class Request(Generic[T]):
    method: str
    path: str
    #: Turns the decoded JSON answer into what the method returns.
    parse: Callable[[Any], T]
    params: dict[str, str] | None = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


def function_path(name: str) -> str:
    # Quoted whole, so a name holding "/" or "?" cannot reach another route or function.
    return "/v1/functions/" + quote(name, safe="")


def list_functions() -> Request[list[FunctionSpec]]:
    return Request("GET", "/v1/functions", lambda body: [spec_from_dict(item) for item in body["functions"]])


def get_function(name: str) -> Request[FunctionSpec]:
    return Request("GET", function_path(name), spec_from_dict)


def invoke(
    name: str,
    arguments: Mapping[str, Any] | None,
    request_id: str | None,
    session_id: str | None,
    idempotency_key: str | None = None,
) -> Request[Result]:
    headers = {"content-type": "application/json"}
    if idempotency_key:
        headers["idempotency-key"] = idempotency_key
    if request_id:
        headers["x-request-id"] = request_id
    if session_id:
        headers["x-session-id"] = session_id
    body = json_bytes(dict(arguments or {}), "arguments")
    return Request(
        "POST", function_path(name) + "/invoke", result_from_document, content=body, headers=headers
    )


def tools(format: str, strict: bool) -> Request[list[dict[str, Any]]]:
    params = {"format": format, "strict": "true" if strict else "false"}
    return Request("GET", "/v1/tools", lambda body: list(body["tools"]), params=params)


def namespaces() -> Request[dict[str, Any]]:
    return Request("GET", "/v1/namespaces", dict)


def route(prompt: str, k: int | None, session_id: str | None) -> Request[dict[str, Any]]:
    body = {"prompt": prompt, **({"k": k} if k else {}), **({"session_id": session_id} if session_id else {})}
    return _post_json("/v1/route", body)


def execute(prompt: str, session_id: str | None, dry_run: bool) -> Request[dict[str, Any]]:
    body = {"prompt": prompt, "dry_run": dry_run, **({"session_id": session_id} if session_id else {})}
    return _post_json("/v1/execute", body)


def confirm(token: str) -> Request[dict[str, Any]]:
    return _post_json("/v1/execute", {"confirm": token})


def _post_json(path: str, body: dict[str, Any]) -> Request[dict[str, Any]]:
    content = json_bytes(body, "body")
    return Request("POST", path, dict, content=content, headers={"content-type": "application/json"})


def tool_calls(message_or_items: Any) -> Request[dict[str, Any]]:
    body = json_bytes(_plain(message_or_items), "body")
    return Request("POST", "/v1/tool_calls", dict, content=body, headers={"content-type": "application/json"})


def _plain(value: Any) -> Any:
    """`value` as plain JSON data: SDK objects (pydantic models, e.g. the OpenAI SDK's
    ChatCompletionMessage or Responses items) are dumped, at any depth."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def json_bytes(value: Any, param: str) -> bytes:
    try:
        return json.dumps(value, separators=(",", ":")).encode()
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"{param} cannot be sent as JSON: {exc}", param=param) from None


# -- answers: JSON back to core types ---------------------------------------------------------


def read(request: Request[T], response: httpx.Response) -> T:
    """What `request` returns, from the gateway's `response`; raises the error it reports."""
    if not response.is_success:
        raise error(response)
    try:
        body = response.json()
    except ValueError:
        where = f"{request.method} {request.path}"
        raise InternalError(
            f"the answer to {where} is not JSON; is {response.url} a toolmesh gateway?"
        ) from None
    try:
        return request.parse(body)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InternalError(f"unexpected answer to {request.method} {request.path}: {exc!r}") from None


def error(response: httpx.Response) -> ToolmeshError:
    """The toolmesh error behind a failed response, rebuilt from the JSON envelope."""
    retry_after = _retry_after(response.headers.get("retry-after"))
    try:
        document = response.json()
    except ValueError:
        document = None
    error = from_envelope(document, retry_after)
    if error is None:
        cls = Unavailable if response.status_code in _GATEWAY_DOWN else InternalError
        status = f"HTTP {response.status_code} {response.reason_phrase}"
        snippet = " ".join(response.text.split())[:200]
        return cls(f"{status} without a toolmesh error body: {snippet!r}", retry_after=retry_after)
    return error


def _retry_after(value: str | None) -> float | None:
    try:
        return None if value is None else float(value)
    except ValueError:
        return None  # an HTTP-date: toolmesh never sends one, and guessing clocks helps no one


def stream(
    name: str, arguments: Mapping[str, Any] | None, request_id: str | None, session_id: str | None
) -> Request[Result]:
    request = invoke(name, arguments, request_id, session_id)
    return Request(
        request.method,
        request.path,
        request.parse,
        content=request.content,
        headers={**request.headers, "accept": EVENT_STREAM},
    )


def streamed(event: Event) -> Content | Result | None:
    """A `content` event's item or the `result` event's Result; raises an `error` event's error.
    Events of other names are skipped, so the gateway may add some."""
    if event.name not in ("content", "result", "error"):
        return None
    try:
        document = json.loads(event.data)
        if event.name == "content":
            return content_from_document(document)
        if event.name == "result":
            return result_from_document(document)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InternalError(f"unexpected {event.name} event in a stream: {exc!r}") from None
    raise from_envelope(document) or InternalError(f"malformed error event: {event.data[:200]!r}")


def unfinished(base_url: str) -> Unavailable:
    return Unavailable(f"the stream from the gateway at {base_url} ended before the call's result")


# -- transport --------------------------------------------------------------------------------


def http_options(base_url: str, api_key: str | None, timeout: float) -> dict[str, Any]:
    headers = {"accept": "application/json"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return {"base_url": base_url, "timeout": timeout, "headers": headers}


@contextlib.contextmanager
def transport_errors(base_url: str) -> Iterator[None]:
    """Translate httpx's exceptions (the one place they are): the gateway could not be
    reached -> Unavailable; it took longer than the client's timeout -> FunctionTimeout,
    as a gRPC deadline does; a malformed URL -> InvalidRequest; anything else -> InternalError."""
    try:
        yield
    except (httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
        raise Unavailable(f"cannot reach the gateway at {base_url}: timed out connecting") from exc
    except httpx.TimeoutException as exc:
        raise FunctionTimeout(
            f"the gateway at {base_url} did not answer within the client's timeout"
        ) from exc
    except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
        raise Unavailable(f"cannot reach the gateway at {base_url}: {exc or type(exc).__name__}") from exc
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        message = f"{base_url!r} is not a gateway URL like http://127.0.0.1:8080: {exc}"
        raise InvalidRequest(message, param="base_url") from exc
    except httpx.HTTPError as exc:
        raise InternalError(
            f"request to the gateway at {base_url} failed: {exc or type(exc).__name__}"
        ) from exc
