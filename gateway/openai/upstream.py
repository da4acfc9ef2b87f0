"""The chat proxy's upstream: an OpenAI-compatible `/chat/completions` over httpx.

`complete` asks for a whole completion, `stream` for its chunks (Server-Sent Events,
read one event at a time, so a slow reader slows the upstream instead of filling memory).

Every way the upstream can fail becomes one error of the hierarchy, here and
only here, so the proxy never answers 500 for someone else's problem:

    cannot connect, broken response     Unavailable (503)
    no answer within [chat] timeout     FunctionTimeout (504)
    400, 404, 409, 422                  InvalidRequest (400), with the upstream's reason
    413                                 PayloadTooLarge (413)
    429                                 RateLimited (429), with the upstream's Retry-After
    401, 403                            Unavailable (503): the gateway's upstream key is refused
    408, 504                            FunctionTimeout (504)
    anything else                       Unavailable (503)
    an error event mid-stream           Unavailable (503), with the upstream's reason
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from toolmesh.config import ChatConfig
from toolmesh.errors import (
    FunctionTimeout,
    InvalidRequest,
    PayloadTooLarge,
    RateLimited,
    ToolmeshError,
    Unavailable,
)

#: How much of an upstream's non-JSON error body is quoted.
_QUOTE = 300


class Upstream:
    """One pooled httpx client for the configured upstream; `close` it with the gateway."""

    def __init__(
        self, config: ChatConfig, api_key: str | None, transport: httpx.AsyncBaseTransport | None = None
    ):
        assert config.upstream_url is not None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.url = config.upstream_url.rstrip("/")
        self._timeout = config.timeout
        self._http = httpx.AsyncClient(
            base_url=self.url + "/", headers=headers, timeout=config.timeout, transport=transport
        )

    async def close(self) -> None:
        await self._http.aclose()

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST `body` to ``/chat/completions`` and return the completion (with at least one choice)."""
        try:
            response = await self._http.post("chat/completions", json=body)
        except httpx.TimeoutException:
            raise FunctionTimeout(f"the upstream model did not answer within {self._timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise Unavailable(
                f"cannot reach the upstream model at {self.url}: {exc}", retry_after=1.0
            ) from None
        if response.status_code >= 400:
            raise upstream_error(response)
        try:
            completion = response.json()
        except ValueError:
            completion = None
        choices = completion.get("choices") if isinstance(completion, dict) else None
        if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
            raise Unavailable("the upstream model answered with something that is not a chat completion")
        if not isinstance(choices[0].get("message"), dict):
            raise Unavailable("the upstream model's completion has no message in its first choice")
        assert isinstance(completion, dict)
        return completion

    async def stream(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """POST `body` with ``stream: true`` and yield its chunks until ``[DONE]``.

        Closing the iterator early (the client left) closes the upstream connection, which
        is how an OpenAI-compatible server learns to stop generating.
        """
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        try:
            async with self._http.stream("POST", "chat/completions", json=body) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise upstream_error(response)
                kind = response.headers.get("content-type", "")
                if not kind.startswith("text/event-stream"):
                    raise Unavailable(
                        f"the upstream model did not stream: it answered {kind or 'no content-type'}"
                    )
                done = False
                async for data in _events(response):
                    if data == "[DONE]":
                        done = True
                    elif not done:
                        yield _chunk(data)
                # Read to the body's end even after [DONE]: only then does the connection go
                # back to the pool; leaving it there costs a new connection per request.
        except httpx.TimeoutException:
            raise FunctionTimeout(f"the upstream model sent nothing for {self._timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise Unavailable(f"the upstream model's stream broke: {exc!r}", retry_after=1.0) from None


async def _events(response: httpx.Response) -> AsyncIterator[str]:
    """The data of each Server-Sent Event (comments and other fields are skipped)."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            data.append(line[6:] if line.startswith("data: ") else line[5:])
        elif not line and data:
            yield "\n".join(data)
            data = []
    if data:
        yield "\n".join(data)


def _chunk(data: str) -> dict[str, Any]:
    try:
        chunk = json.loads(data)
    except (ValueError, RecursionError):
        chunk = None
    if not isinstance(chunk, dict):
        raise Unavailable(f"the upstream model streamed something that is not a chunk: {data[:_QUOTE]!r}")
    error = chunk.get("error")
    if error is not None:
        message = error.get("message") if isinstance(error, dict) else error
        raise Unavailable(f"the upstream model failed mid-answer: {message}")
    return chunk


def _reason(response: httpx.Response) -> tuple[str, str | None]:
    """The upstream's error message and param, from an OpenAI error envelope or the raw text."""
    try:
        body = response.json()
    except (ValueError, json.JSONDecodeError):
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        param = error.get("param")
        return error["message"], param if isinstance(param, str) else None
    if isinstance(error, str):
        return error, None
    text = response.text.strip()[:_QUOTE]
    return text or response.reason_phrase or "no reason given", None


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers["retry-after"]))
    except (KeyError, ValueError):
        return None


def upstream_error(response: httpx.Response) -> ToolmeshError:
    """The error of the hierarchy an upstream error response stands for."""
    status = response.status_code
    message, param = _reason(response)
    said = f"the upstream model answered {status}: {message}"
    if status in (400, 404, 409, 422):
        return InvalidRequest(said, param=param)
    if status == 413:
        return PayloadTooLarge(said, param="messages")
    if status == 429:
        return RateLimited(said, retry_after=_retry_after(response))
    if status in (401, 403):
        return Unavailable(f"{said} (check the key in [chat] api_key_env)")
    if status in (408, 504):
        return FunctionTimeout(said)
    return Unavailable(said, retry_after=_retry_after(response))
