"""Calls that ask their caller, in the 2025 handshake era: server-to-client requests.

There, a function's asks (`ctx.elicit`, `ctx.sample`, `ctx.list_roots`) go to the client as
``elicitation/create``, ``sampling/createMessage`` and ``roots/list`` requests on the open
tools/call response stream; when every answer is in, the call runs again with them (replay,
runtimes/functions/asking.py), for at most ``[mcp] max_input_rounds`` rounds.

The endpoint is stateless: the SDK's stateless transport gives each POST its own connection,
so the client's JSON-RPC *response*, which arrives as a POST of its own, would land on a fresh
connection that never asked and be dropped (the SDK refuses to send such requests at all, with
`NoBackChannelError`). So this module keeps the requests in flight itself: `ask` writes each
request on the call's stream under an id of its own (``toolmesh-<random>``) and waits for it in
`_waiting`; `intercept`, in front of the SDK, recognises a POST that is a response to one of
those ids, settles it and answers 202. Only while some request waits is a POST's body read
ahead (and bounded); otherwise requests go to the SDK untouched.

Writing on the call's stream needs the SDK's request-scoped writer, which it keeps private
(`_request_outbound._dispatcher._write`): `_write_request` is the one place that reaches it.

One replica: the response must reach the replica that asked. Behind a load balancer without
affinity, 2025-era clients of functions that ask need it (2026-07-28 clients do not: their
answers travel in the retried request, input_requests.py).
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.message import ServerMessageMetadata
from starlette.types import Message, Receive, Send

from toolmesh.errors import InputRequired
from toolmesh.gateway.mcp.input_requests import METHODS, Round, too_many_rounds
from toolmesh.runtimes.functions.asking import Ask
from toolmesh.runtimes.functions.results import ErrorInfo, Result

#: Seconds the server waits for the client's answer to one round of asks (a person may be typing).
ANSWER_TIMEOUT = 300.0
_PREFIX = "toolmesh-"


class ClientAnswerError(Exception):
    """The client answered an ask with an error, or not in time."""


class ClientRequests:
    """Server-to-client requests in flight on this replica, by their JSON-RPC id."""

    def __init__(self, max_body: int, timeout: float = ANSWER_TIMEOUT) -> None:
        self._max_body = max_body
        self._timeout = timeout
        #: Each request's future and the API key it was asked of: only that key's POST settles it.
        self._waiting: dict[str, tuple[asyncio.Future[Mapping[str, Any]], str]] = {}

    async def next_round(
        self, ctx: ServerRequestContext[Any, Any], caller: str, asked: Round, asks: list[Ask], max_rounds: int
    ) -> Round | Result:
        """The round after `asked`, with the client's answers to `asks`; an error result when the
        client refuses, does not answer in time, or the call asked too many rounds."""
        if (too_many := too_many_rounds(asked, max_rounds)) is not None:
            return too_many
        try:
            answers = await self.ask(ctx, asks, caller)
        except ClientAnswerError as exc:
            return Result.failure(ErrorInfo(InputRequired.code, str(exc)))
        return Round({**asked.answers, **answers}, asked.number + 1, asked.can, modern=False)

    async def ask(self, ctx: ServerRequestContext[Any, Any], asks: list[Ask], caller: str) -> dict[str, Any]:
        """Send `asks` to the client (API key `caller`) on the call's stream; answers by ask key."""
        loop = asyncio.get_running_loop()
        ids = {ask.key: f"{_PREFIX}{secrets.token_urlsafe(12)}" for ask in asks}
        futures = {key: loop.create_future() for key in ids}
        for key, rid in ids.items():
            self._waiting[rid] = (futures[key], caller)
        try:
            for ask in asks:
                await _write_request(ctx, ids[ask.key], METHODS[ask.kind], ask.params)
            async with asyncio.timeout(self._timeout):
                outcomes = {key: await future for key, future in futures.items()}
        except TimeoutError:
            raise ClientAnswerError(f"the client did not answer within {self._timeout:.0f} s") from None
        finally:
            for rid in ids.values():
                self._waiting.pop(rid, None)
        answers: dict[str, Any] = {}
        for key, outcome in outcomes.items():
            if "error" in outcome:
                error = outcome["error"] if isinstance(outcome["error"], Mapping) else {}
                raise ClientAnswerError(f"the client refused to answer: {error.get('message', 'error')}")
            answers[key] = outcome.get("result")
        return answers

    async def intercept(self, caller: str, receive: Receive, send: Send) -> Receive | None:
        """None when this POST was a client's response to one of our requests (answered 202);
        otherwise a `receive` that gives the SDK the request unchanged."""
        if not self._waiting:
            return receive
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self._max_body or not message.get("more_body", False):
                break
        if size <= self._max_body and self._settle(caller, b"".join(m.get("body", b"") for m in messages)):
            await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return None
        replay = iter(messages)

        async def replayed() -> Message:
            return next(replay, None) or await receive()

        return replayed

    def _settle(self, caller: str, body: bytes) -> bool:
        try:
            data = json.loads(body)
        except ValueError:
            return False
        if not isinstance(data, dict) or "method" in data or not ("result" in data or "error" in data):
            return False
        waiting = self._waiting.get(str(data.get("id")))
        if waiting is None or waiting[1] != caller:
            return False
        future = waiting[0]
        if not future.done():
            future.set_result(data)
        return True


async def _write_request(
    ctx: ServerRequestContext[Any, Any], request_id: str, method: str, params: Mapping[str, Any]
) -> None:
    # The SDK's writer of this request's stream (see the module's docstring for why it is used).
    dispatcher = ctx.session._request_outbound._dispatcher  # type: ignore[attr-defined]
    request = types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params=dict(params))
    await dispatcher._write(request, ServerMessageMetadata(related_request_id=ctx.request_id))
