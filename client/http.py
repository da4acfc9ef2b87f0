"""Python clients for a toolmesh gateway's HTTP API: `Client` (sync) and `AsyncClient`.

    import toolmesh

    with toolmesh.Client("http://127.0.0.1:8080", api_key="...") as mesh:
        forecast = mesh.invoke("get_forecast", {"city": "Paris", "days": 2})
        print(forecast.structured)

Both speak toolmesh's core types (`FunctionSpec`, `Result`), never raw JSON, and
have the same methods; only `AsyncClient`'s are coroutines. Each method is one
`_Request` built by a shared helper below, sent by the client's one transport call
and read back by the same shared code, so the two cannot drift apart.

Errors: a call the gateway refuses raises the exact class of the one hierarchy
(`toolmesh.errors`), rebuilt from the JSON error envelope; a gateway that cannot
be reached raises `Unavailable`, one that does not answer in time `FunctionTimeout`,
a malformed URL `InvalidRequest`, and an answer that is not toolmesh's
`InternalError` (or `Unavailable` for a proxy's 502/503/504 page). httpx
exceptions never escape. A function that raised
is not an exception: `invoke` returns its `Result` with ``is_error`` set, and
``result.error.to_exception()`` gives the error to raise when that is wanted.

`stream` reads a call's items as the function yields them, as server-sent events
(`Accept: text/event-stream`, parsed by `sse_parser.py`), and ends with the Result.

The native gRPC client is `toolmesh.client.grpc.GrpcClient`.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncGenerator, Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Generic, Self, TypeVar
from urllib.parse import quote

import httpx

from toolmesh.client.sse_parser import EVENT_STREAM, Event, EventParser
from toolmesh.error_shapes import from_envelope
from toolmesh.errors import (
    FunctionTimeout,
    InternalError,
    InvalidRequest,
    ToolmeshError,
    Unavailable,
    Violation,
    from_code,
)
from toolmesh.runtimes.functions.results import Binary, Content, ErrorInfo, Json, Result, Text
from toolmesh.runtimes.functions.spec import FunctionSpec, spec_from_dict

#: Seconds a client waits for the gateway to answer one request.
DEFAULT_TIMEOUT = 30.0

T = TypeVar("T")

# A proxy in front of the gateway answers these with its own (non-JSON) page when the gateway is down.
_GATEWAY_DOWN = frozenset({502, 503, 504})


# -- requests: what each method sends and how its answer is read ------------------------------


@dataclass(frozen=True, slots=True)
class _Request(Generic[T]):
    method: str
    path: str
    #: Turns the decoded JSON answer into what the method returns.
    parse: Callable[[Any], T]
    params: dict[str, str] | None = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


def _function_path(name: str) -> str:
    # Quoted whole, so a name holding "/" or "?" cannot reach another route or function.
    return "/v1/functions/" + quote(name, safe="")


def _list_functions() -> _Request[list[FunctionSpec]]:
    return _Request("GET", "/v1/functions", lambda body: [spec_from_dict(item) for item in body["functions"]])


def _get_function(name: str) -> _Request[FunctionSpec]:
    return _Request("GET", _function_path(name), spec_from_dict)


def _invoke(
    name: str, arguments: Mapping[str, Any] | None, request_id: str | None, session_id: str | None
) -> _Request[Result]:
    headers = {"content-type": "application/json"}
    if request_id:
        headers["x-request-id"] = request_id
    if session_id:
        headers["x-session-id"] = session_id
    body = _json_bytes(dict(arguments or {}), "arguments")
    return _Request("POST", _function_path(name) + "/invoke", _result, content=body, headers=headers)


def _tools(format: str, strict: bool) -> _Request[list[dict[str, Any]]]:
    params = {"format": format, "strict": "true" if strict else "false"}
    return _Request("GET", "/v1/tools", lambda body: list(body["tools"]), params=params)


def _namespaces() -> _Request[dict[str, Any]]:
    return _Request("GET", "/v1/namespaces", dict)


def _tool_calls(message_or_items: Any) -> _Request[dict[str, Any]]:
    body = _json_bytes(_plain(message_or_items), "body")
    return _Request(
        "POST", "/v1/tool_calls", dict, content=body, headers={"content-type": "application/json"}
    )


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


def _json_bytes(value: Any, param: str) -> bytes:
    try:
        return json.dumps(value, separators=(",", ":")).encode()
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"{param} cannot be sent as JSON: {exc}", param=param) from None


# -- answers: JSON back to core types ---------------------------------------------------------


def _read(request: _Request[T], response: httpx.Response) -> T:
    """What `request` returns, from the gateway's `response`; raises the error it reports."""
    if not response.is_success:
        raise _error(response)
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


def _error(response: httpx.Response) -> ToolmeshError:
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


def _compact(value: Any) -> bytes:
    """The JSON encoding runtimes produce (compact UTF-8), so results match the gRPC path byte for byte."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _content(item: Mapping[str, Any]) -> Content:
    kind = item["type"]
    if kind == "text":
        return Text(item["text"])
    if kind == "json":
        return Json(_compact(item["json"]))
    if kind == "binary":
        return Binary(base64.b64decode(item["data"]), item.get("mime_type") or "application/octet-stream")
    raise ValueError(f"unknown content type {kind!r}")


def _error_info(error: Mapping[str, Any]) -> ErrorInfo:
    code = str(error["code"])
    violations = tuple(
        Violation(str(v["path"]), str(v["expected"]), str(v["got"]), str(v["message"]))
        for v in error.get("violations") or ()
    )
    # The HTTP shape has no `retryable`; it is a property of the error's class.
    retryable = from_code(code, "").retryable
    return ErrorInfo(
        code, str(error.get("message") or ""), violations, error.get("traceback") or "", retryable
    )


def _result(body: Mapping[str, Any]) -> Result:
    """A `Result` from the JSON `result_json` writes."""
    structured = body.get("structured")
    error = body.get("error")
    timing = body.get("timing") or {}
    return Result(
        content=[_content(item) for item in body.get("content") or ()],
        is_error=bool(body.get("is_error")),
        structured_json=None if structured is None else _compact(structured),
        error=None if error is None else _error_info(error),
        queued_ms=float(timing.get("queued_ms") or 0.0),
        duration_ms=float(timing.get("duration_ms") or 0.0),
        request_id=str(body.get("request_id") or ""),
    )


def _stream(
    name: str, arguments: Mapping[str, Any] | None, request_id: str | None, session_id: str | None
) -> _Request[Result]:
    request = _invoke(name, arguments, request_id, session_id)
    return _Request(
        request.method,
        request.path,
        request.parse,
        content=request.content,
        headers={**request.headers, "accept": EVENT_STREAM},
    )


def _streamed(event: Event) -> Content | Result | None:
    """A `content` event's item or the `result` event's Result; raises an `error` event's error.
    Events of other names are skipped, so the gateway may add some."""
    if event.name not in ("content", "result", "error"):
        return None
    try:
        document = json.loads(event.data)
        if event.name == "content":
            return _content(document)
        if event.name == "result":
            return _result(document)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InternalError(f"unexpected {event.name} event in a stream: {exc!r}") from None
    raise from_envelope(document) or InternalError(f"malformed error event: {event.data[:200]!r}")


def _unfinished(base_url: str) -> Unavailable:
    return Unavailable(f"the stream from the gateway at {base_url} ended before the call's result")


# -- transport --------------------------------------------------------------------------------


def _http_options(base_url: str, api_key: str | None, timeout: float) -> dict[str, Any]:
    headers = {"accept": "application/json"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return {"base_url": base_url, "timeout": timeout, "headers": headers}


@contextlib.contextmanager
def _transport_errors(base_url: str) -> Iterator[None]:
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


class Client:
    """A synchronous client for a toolmesh gateway's HTTP API.

    `base_url` is the gateway's address (``http://host:8080``); `api_key` is sent as
    ``Authorization: Bearer <key>``; `timeout` is the seconds to wait for each answer.
    Use it as a context manager, or call `close()`.
    """

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.base_url = base_url
        with _transport_errors(base_url):
            self._http = httpx.Client(**_http_options(base_url, api_key, timeout))

    def _send(self, request: _Request[T]) -> T:
        with _transport_errors(self.base_url):
            response = self._http.request(
                request.method,
                request.path,
                params=request.params,
                content=request.content,
                headers=request.headers,
            )
        return _read(request, response)

    def list_functions(self) -> list[FunctionSpec]:
        """Every function the key may call."""
        return self._send(_list_functions())

    def get_function(self, name: str) -> FunctionSpec:
        """One function, by qualified ("ns.name") or tool name ("ns__name"); FunctionNotFound otherwise."""
        return self._send(_get_function(name))

    def invoke(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        request_id: str | None = None,
        session_id: str | None = None,
    ) -> Result:
        """Call a function. A function that raised is a Result with ``is_error``; arguments
        that break its schema raise InvalidArguments, a timeout FunctionTimeout."""
        return self._send(_invoke(name, arguments, request_id, session_id))

    def stream(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        request_id: str | None = None,
        session_id: str | None = None,
    ) -> Generator[Content | Result, None, None]:
        """Call a function and yield its content items as it produces them, then its Result, like
        `GrpcClient.stream`. The Result holds only content not yielded before it (a plain
        function's); an error result is a Result with ``is_error``. A call refused before its
        first item raises as `invoke` does; a failure after it raises when it arrives. The
        client's `timeout` bounds the wait for each item, not the whole call. Closing the
        generator early hangs up, which cancels the call."""
        request = _stream(name, arguments, request_id, session_id)
        with (
            _transport_errors(self.base_url),
            self._http.stream(
                request.method, request.path, content=request.content, headers=request.headers
            ) as response,
        ):
            if not response.is_success:
                response.read()
                raise _error(response)
            parser = EventParser()
            for line in response.iter_lines():
                event = parser.feed(line)
                found = None if event is None else _streamed(event)
                if found is not None:
                    yield found
                    if isinstance(found, Result):
                        return
        raise _unfinished(self.base_url)

    def tools(self, format: str = "openai", strict: bool = False) -> list[dict[str, Any]]:
        """The catalog as LLM tool definitions: "openai", "responses", "cloudflare" or "mcp"."""
        return self._send(_tools(format, strict))

    def namespaces(self) -> dict[str, Any]:
        """``{"namespaces": [...], "system_message": {...}}``: the namespaces and a ready-made message."""
        return self._send(_namespaces())

    def execute_tool_calls(self, message_or_items: Any) -> dict[str, Any]:
        """Run a model's tool calls and return the answer in the model's format.

        Takes an OpenAI assistant message or completion (a dict or an SDK object), a
        Responses output list or response, a Cloudflare list of ``{"name", "arguments"}``
        or Hermes text with ``<tool_call>`` blocks.
        """
        return self._send(_tool_calls(message_or_items))

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncClient:
    """An asyncio client for a toolmesh gateway's HTTP API; the same methods as `Client`, as coroutines."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.base_url = base_url
        with _transport_errors(base_url):
            self._http = httpx.AsyncClient(**_http_options(base_url, api_key, timeout))

    async def _send(self, request: _Request[T]) -> T:
        with _transport_errors(self.base_url):
            response = await self._http.request(
                request.method,
                request.path,
                params=request.params,
                content=request.content,
                headers=request.headers,
            )
        return _read(request, response)

    async def list_functions(self) -> list[FunctionSpec]:
        """Every function the key may call."""
        return await self._send(_list_functions())

    async def get_function(self, name: str) -> FunctionSpec:
        """One function, by qualified ("ns.name") or tool name ("ns__name"); FunctionNotFound otherwise."""
        return await self._send(_get_function(name))

    async def invoke(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        request_id: str | None = None,
        session_id: str | None = None,
    ) -> Result:
        """Call a function. A function that raised is a Result with ``is_error``; arguments
        that break its schema raise InvalidArguments, a timeout FunctionTimeout."""
        return await self._send(_invoke(name, arguments, request_id, session_id))

    async def stream(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        request_id: str | None = None,
        session_id: str | None = None,
    ) -> AsyncGenerator[Content | Result, None]:
        """Yield a call's content items as the function produces them, then its Result (see `Client`)."""
        request = _stream(name, arguments, request_id, session_id)
        async with contextlib.AsyncExitStack() as stack:
            stack.enter_context(_transport_errors(self.base_url))
            response = await stack.enter_async_context(
                self._http.stream(
                    request.method, request.path, content=request.content, headers=request.headers
                )
            )
            if not response.is_success:
                await response.aread()
                raise _error(response)
            parser = EventParser()
            async for line in response.aiter_lines():
                event = parser.feed(line)
                found = None if event is None else _streamed(event)
                if found is not None:
                    yield found
                    if isinstance(found, Result):
                        return
        raise _unfinished(self.base_url)

    async def tools(self, format: str = "openai", strict: bool = False) -> list[dict[str, Any]]:
        """The catalog as LLM tool definitions: "openai", "responses", "cloudflare" or "mcp"."""
        return await self._send(_tools(format, strict))

    async def namespaces(self) -> dict[str, Any]:
        """``{"namespaces": [...], "system_message": {...}}``: the namespaces and a ready-made message."""
        return await self._send(_namespaces())

    async def execute_tool_calls(self, message_or_items: Any) -> dict[str, Any]:
        """Run a model's tool calls and return the answer in the model's format (see `Client`)."""
        return await self._send(_tool_calls(message_or_items))

    async def close(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
