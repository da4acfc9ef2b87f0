"""The chat proxy's upstream: an OpenAI-compatible `/chat/completions` over httpx.

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
"""

from __future__ import annotations

import json
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
