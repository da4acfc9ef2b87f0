"""tools/call on a stateless POST, answered without the SDK's per-request machinery when it can be.

For each POST the SDK builds a transport, memory streams, a dispatcher, a server runner and a
task group, and answers a handshake-era (2025-11-25) call as an event stream: profiled on a
no-op call (py-spy, h2load c=16), that machinery was most of the ~1.8 ms the gateway spent per
MCP call, against ~0.24 ms for the same call on `POST /v1/functions/{name}/invoke`.

`DirectCalls` answers the common case itself: a single `tools/call` request whose envelope the
SDK would accept, from a client that asked for nothing that needs the response stream (no
progress token, no log level in `_meta`, no task, no requestState). It runs the same checks the
SDK runs on the way (accept and content type, the SDK's own params validation, and on
2026-07-28 the SDK's envelope ladder and `Mcp-Param-*` check), makes the same call as
`McpEndpoint._call_tool`, and writes the bytes the SDK would write: the JSON-RPC response as
one `event: message` frame on 2025-11-25, one JSON body on 2026-07-28 (answers/call_answer.py), on
an event stream kept alive as the SDK's when the call runs long, and cancelled when its client
leaves (answers/long_calls.py), inside the SDK's span of the request when tracing is on
(answers/call_spans.py).

Anything else goes to the SDK untouched (the body already read is replayed to it). A call that
turns out to need the stream is handed over mid-way, with no second run: when its function logs
or reports (handshake era) or asks its caller, the SDK takes the request over and
`McpEndpoint._call_tool` adopts the call in flight (`Adopted`), receiving its events and result.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp.server import Server
from mcp.server.context import HandlerResult
from mcp.shared.inbound import (
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp_types import CLIENT_CAPABILITIES_META_KEY
from mcp_types import methods as _methods
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.types import Message, Receive, Scope, Send

import toolmesh.tracing as tracing
from toolmesh.errors import ToolmeshError
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.requests import CallOptions, InvokeRequest
from toolmesh.gateway.core.surfaces import Surface
from toolmesh.gateway.mcp.answers import call_spans
from toolmesh.gateway.mcp.answers.call_answer import HANDSHAKE, MODERN, SSE_HEADERS, CallAnswers
from toolmesh.gateway.mcp.answers.call_spans import ADOPTED, Handed, traced
from toolmesh.gateway.mcp.answers.long_calls import Keepalive, continued, event
from toolmesh.gateway.mcp.convert import call_result
from toolmesh.gateway.mcp.direct_reads import READS, DirectReads
from toolmesh.gateway.mcp.input_requests import Round
from toolmesh.gateway.mcp.tool_search import META_TOOLS, searching
from toolmesh.runtimes.functions.asking import KINDS, pending_asks
from toolmesh.runtimes.functions.call_events import CallEvent, Listener
from toolmesh.runtimes.functions.results import Result
from toolmesh.runtimes.functions.spec import FunctionSpec

_CALL_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_PARAM_KEYS = frozenset({"name", "arguments", "_meta"})
#: What a 2026-07-28 envelope carries that changes nothing on the way (anything else: the SDK).
_MODERN_META = frozenset(
    {
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientInfo",
        CLIENT_CAPABILITIES_META_KEY,
    }
)

#: How many `_meta` envelopes' validation verdicts are remembered (then all are forgotten).
_MAX_VERDICTS = 64

__all__ = ["ADOPTED", "Adopted", "DirectCalls", "Sdk"]

Sdk = Callable[[Scope, Receive, Send], Coroutine[Any, Any, None]]


@dataclass
class Adopted:
    """A call the fast path started and the SDK's `_call_tool` finishes: the call as made, its
    outcome, and its events (those delivered before the SDK took over, then `sink`)."""

    call: InvokeRequest
    outcome: asyncio.Future[Result] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    events: list[CallEvent] = field(default_factory=list)
    sink: Callable[[CallEvent], None] | None = None
    #: With tracing on: what the SDK's handler did, for the fast path's span (answers/call_spans.py).
    handed: Handed | None = None

    def deliver(self, event: CallEvent) -> None:
        if self.sink is not None:
            self.sink(event)
        else:
            self.events.append(event)


def _accepts(headers: Mapping[str, str]) -> bool:
    # The SDK's check_accept_headers, for its event-stream mode: both JSON and SSE.
    kinds = [part.strip().split(";")[0].strip().lower() for part in headers.get("accept", "").split(",")]
    if "*/*" in kinds:
        return True
    return any(k in ("application/json", "application/*") for k in kinds) and any(
        k in ("text/event-stream", "text/*") for k in kinds
    )


def _json_content(headers: Mapping[str, str]) -> bool:
    # The SDK transport's _check_content_type.
    value = headers.get("content-type", "")
    return any(part.strip() == "application/json" for part in value.split(";")[0].split(","))


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = iter(messages)

    async def replayed() -> Message:
        return next(pending, None) or await receive()

    return replayed


class DirectCalls:
    """The fast path of `McpEndpoint` (see the module's docstring)."""

    def __init__(
        self,
        mesh: Mesh,
        server: Server[Any],
        level_of: Callable[[Principal, str], int],
        max_body: int,
        reads: DirectReads | None = None,
    ) -> None:
        self._mesh = mesh
        #: Where tools/list, resources/read, prompts/get... go (direct_reads.py).
        self._reads = reads
        self._answers = CallAnswers(lambda: server.server_info_stamp, call_result)
        call_spans.install(server)  # a call handed over is already in its span (answers/call_spans.py)
        #: The Python level of a handshake-era call's records (the endpoint's session levels).
        self._level_of = level_of
        self._max_body = max_body
        self._verdicts: dict[tuple[str, str], bool] = {}

    async def serve(
        self, scope: Scope, receive: Receive, send: Send, principal: Principal, namespace: str, sdk: Sdk
    ) -> None:
        """Answer the request, here or by `sdk` (which gets every byte of the body)."""
        raw: list[tuple[bytes, bytes]] = scope["headers"]
        # Looked up a dozen times below and handed to the SDK's ladder as a mapping: decoded
        # once, the first of a repeated name kept (as Starlette's `Headers` and `dict()` of it).
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in reversed(raw)}
        version = headers.get("mcp-protocol-version")
        if version not in (HANDSHAKE, MODERN) or not _accepts(headers) or not _json_content(headers):
            await sdk(scope, receive, send)
            return
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
        replayed = _replay(messages, receive)
        if messages[-1]["type"] != "http.request" or size > self._max_body:
            await sdk(scope, replayed, send)
            return
        body = (
            messages[0].get("body", b"")
            if len(messages) == 1
            else b"".join(m.get("body", b"") for m in messages)
        )
        try:
            decoded = json.loads(body)
        except (ValueError, RecursionError):
            decoded = None
        if self._reads is not None and self._is_read(decoded, raw, headers, version):
            if await self._reads.serve(scope, send, principal, decoded, version, version == MODERN):
                return
            await sdk(scope, replayed, send)
            return
        planned = self._plan(decoded, raw, headers, version, principal, namespace, searching(scope))
        if planned is None:
            await sdk(scope, replayed, send)
            return
        request_id, spec, call, modern = planned
        handed = Handed() if tracing.enabled() else None
        adopted: Adopted | None = None
        handover: asyncio.Task[None] | None = None
        # The SDK's task, when it takes the call over, runs in the call's context (its span).
        context: contextvars.Context | None = None

        to_client = send
        keepalive: Keepalive | None = None

        def take_over() -> Adopted:
            nonlocal adopted, handover, to_client
            if adopted is None:
                adopted = Adopted(call, handed=handed)
            if handover is None:
                if keepalive is not None and keepalive.halt():  # the stream is the SDK's from here
                    to_client = continued(send)
                scope.setdefault("state", {})[ADOPTED] = adopted
                handover = asyncio.get_running_loop().create_task(
                    sdk(scope, _replay(messages, receive), to_client), context=context
                )
            return adopted

        def deliver(event: CallEvent) -> None:
            take_over().deliver(event)  # the client hears it as the SDK sends it, on the call's stream

        if not modern:
            level = self._level_of(principal, headers.get("x-session-id", ""))
            call = InvokeRequest(call.name, call.arguments, call.options, Listener(level, False, deliver))

        async def run() -> HandlerResult:
            nonlocal context, to_client, keepalive
            context = contextvars.copy_context()
            keepalive = Keepalive(send, receive, modern)
            try:
                result = await self._mesh.invoke(principal, call, Surface.MCP)
            except ToolmeshError as exc:
                keepalive.done()
                if await keepalive.stop():
                    to_client = continued(send)
                take_over().outcome.set_exception(exc)
            except asyncio.CancelledError:
                keepalive.done()
                keepalive.halt()
                raise
            else:
                keepalive.done()
                if handover is None and await keepalive.stop():
                    to_client = continued(send)
                if adopted is not None or pending_asks(result) is not None:
                    take_over().outcome.set_result(result)
            if handover is not None:
                await handover
                if handed is not None and handed.raised is not None:
                    raise handed.raised  # for the span, as the SDK's middleware saw it
                return handed.returned if handed is not None else None
            await self._answer(request_id, spec, result, modern, send, to_client is not send)
            return {"isError": result.is_error}  # all the span reads of a result

        try:
            await (run() if handed is None else traced(version, request_id, decoded["params"], run))
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if keepalive is None or not keepalive.left or task is None or task.uncancel():
                raise
            # The client left and its call was cancelled, as the SDK's path does: nobody to answer.
            if handover is not None:
                await asyncio.gather(handover, return_exceptions=True)  # the SDK's ending of it
        except Exception as exc:
            if handed is None or exc is not handed.raised:
                raise
            # else the SDK has answered it, as its own path does

    async def _answer(
        self, request_id: Any, spec: FunctionSpec, result: Result, modern: bool, send: Send, streamed: bool
    ) -> None:
        if modern:
            answer = self._answers.modern_body(request_id, spec, result)
            if streamed:  # the call outlived the SDK's window: the stream's last event
                await send({"type": "http.response.body", "body": event(answer)})
                return
            length = str(len(answer)).encode()
            head = [(b"content-length", length), (b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": head})
            await send({"type": "http.response.body", "body": answer})
        else:
            frame = self._answers.handshake_frame(request_id, spec, result)
            if streamed:  # the stream's head went out while the call ran
                await send({"type": "http.response.body", "body": frame})
                return
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            await send({"type": "http.response.body", "body": frame})  # one chunk, then the last

    def _is_read(
        self, decoded: Any, raw: list[tuple[bytes, bytes]], headers: dict[str, str], version: str
    ) -> bool:
        """Whether `decoded` is one of the reads `DirectReads` serves, in an envelope the SDK
        would accept and with nothing that needs the response stream."""
        if (
            not isinstance(decoded, dict)
            or decoded.keys() - _CALL_KEYS
            or decoded.get("method") not in READS
            or decoded.get("jsonrpc") != "2.0"
            or type(decoded.get("id")) not in (int, str)
        ):
            return False
        params = decoded.get("params")
        if params is None:
            return version != MODERN  # a 2026-07-28 request carries its envelope in `_meta`
        if not isinstance(params, dict) or params.keys() - READS[decoded["method"]]:
            return False
        meta = params.get("_meta")
        if version == MODERN:
            return (
                isinstance(meta, dict)
                and not meta.keys() - _MODERN_META
                and self._modern_ok(decoded, raw, headers)
            )
        return meta is None or meta == {}

    def _plan(
        self,
        decoded: Any,
        raw: list[tuple[bytes, bytes]],
        headers: dict[str, str],
        version: str,
        principal: Principal,
        namespace: str,
        search: bool,
    ) -> tuple[Any, FunctionSpec, InvokeRequest, bool] | None:
        """The request's id, its function, the call `_call_tool` would make, and its era; None
        for the SDK (which also serves tool-search mode's meta-tools, when `search`)."""
        if (
            not isinstance(decoded, dict)
            or decoded.keys() - _CALL_KEYS
            or decoded.get("method") != "tools/call"
        ):
            return None
        request_id = decoded.get("id")
        params = decoded.get("params")
        if (
            decoded.get("jsonrpc") != "2.0"
            or type(request_id) not in (int, str)
            or not isinstance(params, dict)
        ):
            return None
        name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
        if params.keys() - _PARAM_KEYS or not isinstance(name, str) or not isinstance(arguments, dict | None):
            return None
        if search and name in META_TOOLS:
            return None
        modern = version == MODERN
        if modern:
            if (
                not isinstance(meta, dict)
                or meta.keys() - _MODERN_META
                or not self._modern_ok(decoded, raw, headers)
            ):
                return None
        elif meta is not None and meta != {}:
            return None
        try:
            self._validate(version, params, meta)
            spec = self._mesh.function(name, principal)
            options = CallOptions.from_headers(headers)
        except (ValidationError, KeyError, ToolmeshError):
            return None
        if (namespace and spec.namespace != namespace) or spec.task_support:
            return None
        params_headed = modern and (arguments or any(key.startswith("mcp-param-") for key in headers))
        if (
            params_headed
            # Given the raw list: the check also refuses an `Mcp-Param-*` header sent twice.
            and validate_mcp_param_headers(spec.input_schema, arguments or {}, Headers(raw=raw)) is not None
        ):
            return None
        if modern:
            declared = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
            can = tuple(k for k in KINDS if isinstance(declared, dict) and declared.get(k) is not None)
            asked = Round(can=can, modern=True)
        else:
            asked = Round(can=KINDS)
        encoded = json.dumps(arguments).encode() if arguments else b"{}"
        call = InvokeRequest(spec.qualified_name, encoded, asked.apply(options))
        return request_id, spec, call, modern

    def _validate(self, version: str, params: dict[str, Any], meta: Any) -> None:
        """The SDK's validation of tools/call's params (raises ValidationError).

        `_plan` has already checked that `name` is a string, `arguments` an object or absent and
        that nothing else but `_meta` is there, which leaves the verdict up to the version and
        `_meta` alone (the surface takes any object for `arguments`): it is remembered per pair,
        and a client sends the same envelope on every call.
        """
        key = (version, repr(meta))
        verdict = self._verdicts.get(key)
        if verdict is None:
            try:
                _methods.validate_client_request("tools/call", version, params)
                verdict = self._verdicts[key] = True
            except ValidationError:
                self._verdicts[key] = False
                raise
            if len(self._verdicts) > _MAX_VERDICTS:  # the values are the client's: keep few
                self._verdicts.clear()
        elif not verdict:
            _methods.validate_client_request("tools/call", version, params)  # its own error

    @staticmethod
    def _modern_ok(decoded: dict[str, Any], raw: list[tuple[bytes, bytes]], headers: dict[str, str]) -> bool:
        names = ((name.decode("latin-1"), "") for name, _ in raw)
        if find_duplicated_routing_header(names) is not None:
            return False
        return not isinstance(classify_inbound_request(decoded, headers=headers), InboundLadderRejection)
