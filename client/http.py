"""Python clients for a toolmesh gateway's HTTP API: `Client` (sync) and `AsyncClient`.

    import toolmesh

    with toolmesh.Client("http://127.0.0.1:8080", api_key="...") as mesh:
        forecast = mesh.invoke("get_forecast", {"city": "Paris", "days": 2})
        print(forecast.structured)

Both speak toolmesh's core types (`FunctionSpec`, `Result`), never raw JSON, and
have the same methods; only `AsyncClient`'s are coroutines. Each method is one
`requests.Request` built by a shared helper below, sent by the client's one transport call
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

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncGenerator, Generator, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from toolmesh.client import http_requests as requests
from toolmesh.client import jobs
from toolmesh.client.jobs import RemoteJob
from toolmesh.client.retrying import RetryPolicy
from toolmesh.client.sse_parser import EventParser
from toolmesh.errors import FunctionTimeout, ToolmeshError
from toolmesh.runtimes.functions.results import Content, Result
from toolmesh.runtimes.functions.spec import FunctionSpec

#: Seconds a client waits for the gateway to answer one request.
DEFAULT_TIMEOUT = 30.0

#: Seconds between two looks at a job that `wait_job` waits for.
POLL = 0.25

T = TypeVar("T")


def _pause(poll: float, deadline: float | None, job_id: str) -> float:
    """How long to sleep before looking at the job again; FunctionTimeout past the deadline."""
    if deadline is None:
        return poll
    left = deadline - time.monotonic()
    if left <= 0:
        raise FunctionTimeout(f"job {job_id} had not finished when the wait's timeout ran out")
    return min(poll, left)


class Client:
    """A synchronous client for a toolmesh gateway's HTTP API.

    `base_url` is the gateway's address (``http://host:8080``); `api_key` is sent as
    ``Authorization: Bearer <key>``; `timeout` is the seconds to wait for each answer.
    `retries`: how many more times `invoke` sends a call that failed in a way that may pass,
    each call under one `Idempotency-Key` so that it runs at most once (see retrying.py).
    Use it as a context manager, or call `close()`.
    """

    def __init__(
        self, base_url: str, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT, retries: int = 0
    ) -> None:
        self.base_url = base_url
        self.retry = RetryPolicy(retries)
        with requests.transport_errors(base_url):
            self._http = httpx.Client(**requests.http_options(base_url, api_key, timeout))

    def _send(self, request: requests.Request[T]) -> T:
        with requests.transport_errors(self.base_url):
            response = self._http.request(
                request.method,
                request.path,
                params=request.params,
                content=request.content,
                headers=request.headers,
            )
        return requests.read(request, response)

    def list_functions(self) -> list[FunctionSpec]:
        """Every function the key may call."""
        return self._send(requests.list_functions())

    def get_function(self, name: str) -> FunctionSpec:
        """One function, by qualified ("ns.name") or tool name ("ns__name"); FunctionNotFound otherwise."""
        return self._send(requests.get_function(name))

    def invoke(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        request_id: str | None = None,
        session_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Result:
        """Call a function. A function that raised is a Result with ``is_error``; arguments
        that break its schema raise InvalidArguments, a timeout FunctionTimeout. With an
        `idempotency_key` (or `retries`, which makes one) a repeat answers the first outcome."""
        key = self.retry.key(idempotency_key)
        request = requests.invoke(name, arguments, request_id, session_id, key)
        for attempt in itertools.count(1):
            try:
                return self._send(request)
            except ToolmeshError as exc:
                pause = self.retry.pause(exc, attempt)
                if pause is None:
                    raise
                time.sleep(pause)
        raise AssertionError("unreachable")

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
        request = requests.stream(name, arguments, request_id, session_id)
        with (
            requests.transport_errors(self.base_url),
            self._http.stream(
                request.method, request.path, content=request.content, headers=request.headers
            ) as response,
        ):
            if not response.is_success:
                response.read()
                raise requests.error(response)
            parser = EventParser()
            for line in response.iter_lines():
                event = parser.feed(line)
                found = None if event is None else requests.streamed(event)
                if found is not None:
                    yield found
                    if isinstance(found, Result):
                        return
        raise requests.unfinished(self.base_url)

    def tools(self, format: str = "openai", strict: bool = False) -> list[dict[str, Any]]:
        """The catalog as LLM tool definitions: "openai", "responses", "cloudflare" or "mcp"."""
        return self._send(requests.tools(format, strict))

    def namespaces(self) -> dict[str, Any]:
        """``{"namespaces": [...], "system_message": {...}}``: the namespaces and a ready-made message."""
        return self._send(requests.namespaces())

    def route(self, prompt: str, k: int | None = None, session_id: str | None = None) -> dict[str, Any]:
        """The function that fits a free-text prompt (``match``, or None) and the candidates."""
        return self._send(requests.route(prompt, k, session_id))

    def execute(self, prompt: str, session_id: str | None = None, dry_run: bool = False) -> dict[str, Any]:
        """Route a prompt and run the call it asks for, if free text may run it at once (a
        read_only function): ``status`` is then "done". Any other call comes back with status
        "needs_confirmation" and a ``confirmation`` (why, whether destructive): show it to your
        user, and pass ``confirmation["token"]`` to `confirm` to run it."""
        return self._send(requests.execute(prompt, session_id, dry_run))

    def confirm(self, token: str) -> dict[str, Any]:
        """Run the planned call an `execute` answer's confirmation token stands for, once."""
        return self._send(requests.confirm(token))

    def execute_tool_calls(self, message_or_items: Any) -> dict[str, Any]:
        """Run a model's tool calls and return the answer in the model's format.

        Takes an OpenAI assistant message or completion (a dict or an SDK object), a
        Responses output list or response, a Cloudflare list of ``{"name", "arguments"}``
        or Hermes text with ``<tool_call>`` blocks.
        """
        return self._send(requests.tool_calls(message_or_items))

    def submit(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        callback_url: str | None = None,
        request_id: str | None = None,
        session_id: str | None = None,
    ) -> RemoteJob:
        """Queue a call and return its job at once (`Prefer: respond-async`); refused like
        `invoke` would be. `callback_url`: where the gateway POSTs the finished job, signed."""
        return self._send(jobs.submit(name, arguments, callback_url, request_id, session_id))

    def get_job(self, job_id: str) -> RemoteJob:
        """A job of this key's, as it is now; JobNotFound for another key's or an unknown one."""
        return self._send(jobs.get_job(job_id))

    def wait_job(self, job_id: str, timeout: float | None = None, poll: float = POLL) -> RemoteJob:
        """The job once it has finished, polling every `poll` seconds; FunctionTimeout after
        `timeout` seconds (None: no bound)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not (found := self.get_job(job_id)).finished:
            time.sleep(_pause(poll, deadline, job_id))
        return found

    def cancel_job(self, job_id: str) -> RemoteJob:
        """Cancel a queued or running job (one already finished is answered as it is)."""
        return self._send(jobs.cancel_job(job_id))

    def retry_job(self, job_id: str) -> RemoteJob:
        """Queue a dead, failed or cancelled job again."""
        return self._send(jobs.retry_job(job_id))

    def list_jobs(self, status: str | None = None, limit: int = 100) -> list[RemoteJob]:
        """This key's jobs, newest first; `status="dead"` is its dead-letter list."""
        return self._send(jobs.list_jobs(status, limit))

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

    def __init__(
        self, base_url: str, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT, retries: int = 0
    ) -> None:
        self.base_url = base_url
        self.retry = RetryPolicy(retries)
        with requests.transport_errors(base_url):
            self._http = httpx.AsyncClient(**requests.http_options(base_url, api_key, timeout))

    async def _send(self, request: requests.Request[T]) -> T:
        with requests.transport_errors(self.base_url):
            response = await self._http.request(
                request.method,
                request.path,
                params=request.params,
                content=request.content,
                headers=request.headers,
            )
        return requests.read(request, response)

    async def list_functions(self) -> list[FunctionSpec]:
        """Every function the key may call."""
        return await self._send(requests.list_functions())

    async def get_function(self, name: str) -> FunctionSpec:
        """One function, by qualified ("ns.name") or tool name ("ns__name"); FunctionNotFound otherwise."""
        return await self._send(requests.get_function(name))

    async def invoke(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        request_id: str | None = None,
        session_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Result:
        """Call a function (see `Client.invoke`, and `retries` for retrying it safely)."""
        key = self.retry.key(idempotency_key)
        request = requests.invoke(name, arguments, request_id, session_id, key)
        for attempt in itertools.count(1):
            try:
                return await self._send(request)
            except ToolmeshError as exc:
                pause = self.retry.pause(exc, attempt)
                if pause is None:
                    raise
                await asyncio.sleep(pause)
        raise AssertionError("unreachable")

    async def stream(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        request_id: str | None = None,
        session_id: str | None = None,
    ) -> AsyncGenerator[Content | Result, None]:
        """Yield a call's content items as the function produces them, then its Result (see `Client`)."""
        request = requests.stream(name, arguments, request_id, session_id)
        async with contextlib.AsyncExitStack() as stack:
            stack.enter_context(requests.transport_errors(self.base_url))
            response = await stack.enter_async_context(
                self._http.stream(
                    request.method, request.path, content=request.content, headers=request.headers
                )
            )
            if not response.is_success:
                await response.aread()
                raise requests.error(response)
            parser = EventParser()
            async for line in response.aiter_lines():
                event = parser.feed(line)
                found = None if event is None else requests.streamed(event)
                if found is not None:
                    yield found
                    if isinstance(found, Result):
                        return
        raise requests.unfinished(self.base_url)

    async def tools(self, format: str = "openai", strict: bool = False) -> list[dict[str, Any]]:
        """The catalog as LLM tool definitions: "openai", "responses", "cloudflare" or "mcp"."""
        return await self._send(requests.tools(format, strict))

    async def namespaces(self) -> dict[str, Any]:
        """``{"namespaces": [...], "system_message": {...}}``: the namespaces and a ready-made message."""
        return await self._send(requests.namespaces())

    async def route(self, prompt: str, k: int | None = None, session_id: str | None = None) -> dict[str, Any]:
        """The function that fits a free-text prompt (``match``, or None) and the candidates."""
        return await self._send(requests.route(prompt, k, session_id))

    async def execute(
        self, prompt: str, session_id: str | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Route a prompt and run the call it asks for, if free text may run it at once (a
        read_only function): ``status`` is then "done". Any other call comes back with status
        "needs_confirmation" and a ``confirmation`` (why, whether destructive): show it to your
        user, and pass ``confirmation["token"]`` to `confirm` to run it."""
        return await self._send(requests.execute(prompt, session_id, dry_run))

    async def confirm(self, token: str) -> dict[str, Any]:
        """Run the planned call an `execute` answer's confirmation token stands for, once."""
        return await self._send(requests.confirm(token))

    async def execute_tool_calls(self, message_or_items: Any) -> dict[str, Any]:
        """Run a model's tool calls and return the answer in the model's format (see `Client`)."""
        return await self._send(requests.tool_calls(message_or_items))

    async def submit(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        callback_url: str | None = None,
        request_id: str | None = None,
        session_id: str | None = None,
    ) -> RemoteJob:
        """Queue a call and return its job at once (`Prefer: respond-async`); refused like
        `invoke` would be. `callback_url`: where the gateway POSTs the finished job, signed."""
        return await self._send(jobs.submit(name, arguments, callback_url, request_id, session_id))

    async def get_job(self, job_id: str) -> RemoteJob:
        """A job of this key's, as it is now; JobNotFound for another key's or an unknown one."""
        return await self._send(jobs.get_job(job_id))

    async def wait_job(self, job_id: str, timeout: float | None = None, poll: float = POLL) -> RemoteJob:
        """The job once it has finished, polling every `poll` seconds; FunctionTimeout after
        `timeout` seconds (None: no bound)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:  # polling a remote job: there is no local event to wait on
            found = await self.get_job(job_id)
            if found.finished:
                return found
            await asyncio.sleep(_pause(poll, deadline, job_id))

    async def cancel_job(self, job_id: str) -> RemoteJob:
        """Cancel a queued or running job (one already finished is answered as it is)."""
        return await self._send(jobs.cancel_job(job_id))

    async def retry_job(self, job_id: str) -> RemoteJob:
        """Queue a dead, failed or cancelled job again."""
        return await self._send(jobs.retry_job(job_id))

    async def list_jobs(self, status: str | None = None, limit: int = 100) -> list[RemoteJob]:
        """This key's jobs, newest first; `status="dead"` is its dead-letter list."""
        return await self._send(jobs.list_jobs(status, limit))

    async def close(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
