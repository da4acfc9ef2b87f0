"""Calls that ask their caller (`ctx.elicit`, `ctx.sample`, `ctx.list_roots`) over MCP 2026-07-28.

The function side is *replay* (runtimes/functions/asking.py): a call carries the answers so far
and ends "input required" when it asks something unanswered. Here, for a tools/call:

1. `read_round` gathers the answers: those sealed in the echoed ``requestState`` (earlier rounds)
   and the client's ``inputResponses`` (this round; keys the function never asked are ignored),
   and the kinds of asks the client declared it answers
   (``_meta["io.modelcontextprotocol/clientCapabilities"]``: elicitation, sampling, roots).
   They reach the function as call metadata.
2. When the call ends input-required, `input_required` answers with an ``InputRequiredResult``:
   the missing asks as ``inputRequests`` (keyed as the function keyed them) and a
   ``requestState`` holding every answer so far and the round's number. The client answers and
   retries; the function runs again with all answers. More than ``[mcp] max_input_rounds``
   rounds, or an ask of a kind the client did not declare, ends the call with an error result.

``requestState`` is sealed by the SDK's `RequestStateBoundary` (`state_boundary`): AES-256-GCM
(so integrity, like an HMAC, and the answers stay unreadable to the client), bound to the
method, the tool, a digest of its arguments, this server's name and the caller's API key, with
an expiry. A state that fails any of these is refused with -32602 "Invalid or expired
requestState" before the function runs. The key comes from ``[mcp] state_secret_env``, shared by
every replica; without it each process draws its own, so a retry must reach the replica that
asked and a restart invalidates open rounds (the client then starts the call over).

The 2025 handshake era has no such result: there the asks go to the client as requests on the
call's stream (client_requests.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY, MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolmesh.errors import InputRequired
from toolmesh.gateway.core.requests import CallOptions
from toolmesh.runtimes.functions.asking import ANSWERS_KEY, CAN_ANSWER_KEY, KINDS, Ask
from toolmesh.runtimes.functions.results import ErrorInfo, Result

#: The MCP method of each kind of ask.
METHODS = {"elicitation": "elicitation/create", "sampling": "sampling/createMessage", "roots": "roots/list"}


Principal = Callable[[ServerRequestContext[Any, Any]], str | None]


def state_boundary(
    secret: str | None, ttl: float, audience: str, principal: Principal
) -> RequestStateBoundary:
    """The SDK middleware that seals outgoing and checks incoming ``requestState``."""
    key = secret.encode() if secret is not None else os.urandom(32)
    security = RequestStateSecurity(keys=[key], ttl=ttl, bind_principal=principal)
    return RequestStateBoundary(security, default_audience=audience)


@dataclass(frozen=True, slots=True)
class Round:
    """What one tools/call brings to a function that asks."""

    #: Answers so far by ask key, as the client sent them (JSON).
    answers: dict[str, Any] = field(default_factory=dict)
    #: How many rounds of asks came before this one.
    number: int = 0
    #: The kinds of asks the client declared it answers.
    can: tuple[str, ...] = ()
    #: Whether this request speaks the era that has input-required results.
    modern: bool = False

    def apply(self, options: CallOptions) -> CallOptions:
        """`options` with the round in their metadata (for the function, asking.py)."""
        found = self.metadata()
        return dataclasses.replace(options, metadata={**options.metadata, **found}) if found else options

    def metadata(self) -> dict[str, str]:
        """The call metadata that carries the round to the function (asking.py reads it)."""
        found: dict[str, str] = {}
        if self.answers:
            found[ANSWERS_KEY] = json.dumps(self.answers)
        if self.can:
            found[CAN_ANSWER_KEY] = ",".join(self.can)
        return found


def read_round(ctx: ServerRequestContext[Any, Any]) -> Round:
    """The round of a tools/call (its ``requestState`` already unsealed by the boundary)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        # Asked on the call's stream (client_requests.py); what the client declared at initialize
        # is not kept by a stateless server, so every kind is tried and a refusal is an error.
        return Round(can=KINDS)
    params: Mapping[str, Any] = ctx.params or {}
    answers: dict[str, Any] = {}
    number = 0
    sealed = params.get("requestState")
    if isinstance(sealed, str) and sealed:
        # Minted by this server and checked by the boundary: its shape is ours.
        state = json.loads(sealed)
        answers.update(state.get("answers", {}))
        number = int(state.get("round", 0))
    responses = params.get("inputResponses")
    if isinstance(responses, Mapping):
        answers.update({str(k): v for k, v in responses.items() if isinstance(v, Mapping)})
    meta: Mapping[str, Any] = ctx.meta or {}
    declared = meta.get(CLIENT_CAPABILITIES_META_KEY)
    can = tuple(k for k in KINDS if isinstance(declared, Mapping) and declared.get(k) is not None)
    return Round(answers, number, can, modern=True)


def input_required(
    asked: Round, asks: list[Ask], unable: list[str], max_rounds: int
) -> types.InputRequiredResult | Result:
    """The answer to a call that ended asking `asks`: an input-required result, or an error
    result when the call took too many rounds. A client that did not declare it can answer what
    the function asks gets MissingRequiredClientCapabilityError (-32021, HTTP 400, SEP-2575),
    naming the capabilities in `data.requiredCapabilities`."""
    if unable:
        message = (
            f"the function asks its caller ({', '.join(unable)}) and this client did not declare it "
            "can answer: call it through an MCP client that supports it"
        )
        required: dict[str, dict[str, Any]] = {kind: {} for kind in unable}
        raise MCPError(MISSING_REQUIRED_CLIENT_CAPABILITY, message, {"requiredCapabilities": required})
    if (too_many := too_many_rounds(asked, max_rounds)) is not None:
        return too_many
    requests = {a.key: {"method": METHODS[a.kind], "params": a.params} for a in asks}
    state = json.dumps({"answers": asked.answers, "round": asked.number + 1})
    return types.InputRequiredResult.model_validate(
        {"resultType": "input_required", "inputRequests": requests, "requestState": state}
    )


def too_many_rounds(asked: Round, max_rounds: int) -> Result | None:
    """The error result of a call that would ask once more than `max_rounds` allows, or None."""
    if asked.number + 1 <= max_rounds:
        return None
    message = f"the function asked its caller more than {max_rounds} rounds of questions"
    return Result.failure(ErrorInfo(InputRequired.code, message))
