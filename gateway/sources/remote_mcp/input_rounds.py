"""How a server of the per-request era (2026-07-28) asks: not with requests of its own but with a
result, `{"resultType": "input_required", "inputRequests": {key: {method, params}}, "requestState"}`,
answered by sending the same request again with `inputResponses` (by the same keys) and the
`requestState` echoed (the draft's multi round-trip requests).

Each input request is asked of the call's caller through the same `Answerer` as a handshake-era
server's requests (runtimes/mcp/server_asks.py, by replay): all of a round's questions at once, so
a caller who must answer is asked them together.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolmesh.errors import InputRequired
from toolmesh.runtimes.mcp.server_asks import KINDS, Answerer

#: The `resultType` of a result that asks.
INPUT_REQUIRED = "input_required"
#: The methods whose results may ask.
ASKING_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
#: Rounds of one request at most (a server that never stops asking).
MAX_ROUNDS = 16
_COUNTED = re.compile(r"answer \d+ question")


class CannotAnswer(Exception):
    """The server asked what the gateway cannot answer: its message says what."""


def asks(result: Any) -> bool:
    """Whether `result` is an input-required result rather than the request's own."""
    return isinstance(result, dict) and result.get("resultType") == INPUT_REQUIRED


def retry_params(
    params: Mapping[str, Any] | None, result: Mapping[str, Any], answer: Answerer | None
) -> dict[str, Any]:
    """`params` again, with the answers to `result`'s input requests and its `requestState`.
    Raises InputRequired (listing every question of the round the caller has not answered yet)
    or CannotAnswer."""
    requests = result.get("inputRequests") or {}
    if not isinstance(requests, dict):
        raise CannotAnswer("sent inputRequests that are not an object")
    responses: dict[str, Any] = {}
    missing: list[InputRequired] = []
    for key, request in requests.items():
        method = request.get("method") if isinstance(request, dict) else None
        if method not in KINDS:
            raise CannotAnswer(f"asked {method!r}, which toolmesh does not answer")
        if answer is None:
            raise CannotAnswer(f"asked {method} where no caller can answer")
        asked = request.get("params")
        try:
            responses[key] = answer(method, asked if isinstance(asked, dict) else {})
        except InputRequired as exc:
            missing.append(exc)
    if missing:
        raise _together(missing)
    again = {
        key: value for key, value in (params or {}).items() if key not in ("inputResponses", "requestState")
    }
    if responses:
        again["inputResponses"] = responses
    state = result.get("requestState")
    if isinstance(state, str):
        again["requestState"] = state
    return again


def _together(missing: list[InputRequired]) -> InputRequired:
    """One InputRequired for the round's unanswered questions (each ask raised its own)."""
    if len(missing) == 1:
        return missing[0]
    asked: list[Any] = []
    unable: list[str] = []
    for exc in missing:
        details = exc.details or {}
        asked.extend(details.get("asks") or ())
        unable.extend(kind for kind in details.get("unable") or () if kind not in unable)
    # Each ask's message counts its own question; the caller is asked them all.
    message = _COUNTED.sub(f"answer {len(asked)} question", missing[0].message)
    return InputRequired(message, details={"asks": asked, "unable": sorted(unable)})
