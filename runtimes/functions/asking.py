"""Asking the caller from inside a function: `ctx.elicit`, `ctx.sample`, `ctx.list_roots`.

The contract is *replay*. A call carries the answers its caller has given so far (`ANSWERS_KEY`
in the call's metadata, a JSON object keyed by each ask's key). An ask whose answer is there
returns it at once; otherwise the call ends with an "input required" outcome listing what is
missing (`InputRequired`, turned into a result by `input_required_result`), and the caller (the
MCP endpoint) gets the answers from its client and runs the call again with them. So:

- the code before an ask runs once per round: it must be safe to run again (no side effects
  that must not happen twice, or guard them by the answers you already have);
- every ask has a stable key: the one you give, else its kind and position in the call
  (``elicit-0``, ``sample-1``...): asks must come in the same order on every run;
- `ask_all` asks several things in one round (a client answers them together);
- `InputRequired` is how the call ends; a function that catches it (say, with a broad
  ``except Exception``) still ends input-required when it returns (the executor checks).

Which kinds the caller can answer travels as `CAN_ANSWER_KEY` (a comma-separated list of
"elicitation", "sampling", "roots"); a caller that sends neither key (HTTP, gRPC, OpenAI
formats) can answer nothing, and the call ends with `InputRequired` shown as a 409.

Plain Python only: no MCP type appears here; `gateway/mcp/asking.py` converts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import TypeAdapter

from toolmesh.errors import InputRequired
from toolmesh.runtimes.functions.results import ErrorInfo, Result, Text

#: Metadata key of the answers so far (JSON object: ask key -> the client's answer).
ANSWERS_KEY = "toolmesh-answers"
#: Metadata key of the kinds of asks the caller can answer ("elicitation,sampling,roots").
CAN_ANSWER_KEY = "toolmesh-can-answer"

Kind = Literal["elicitation", "sampling", "roots"]
KINDS: tuple[Kind, ...] = ("elicitation", "sampling", "roots")


@dataclass(frozen=True, slots=True)
class Ask:
    """One question to the caller: its kind, its stable key, and its parameters as JSON
    (the MCP request's params: elicitation/create, sampling/createMessage, roots/list)."""

    kind: Kind
    key: str
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "params": self.params}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ask:
        kind = data.get("kind")
        if kind not in KINDS:
            raise ValueError(f"unknown ask kind {kind!r}")
        return cls(kind, str(data["key"]), dict(data.get("params") or {}))


@dataclass(frozen=True, slots=True)
class Elicited:
    """The user's answer to `ctx.elicit`: ``action`` is "accept", "decline" or "cancel";
    ``content`` holds the form's values when accepted (empty otherwise)."""

    action: str
    content: dict[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


@dataclass(frozen=True, slots=True)
class Sampled:
    """The model's message from `ctx.sample`: its text (empty when its content is not text),
    the raw content block(s), and what the client says about it."""

    text: str
    role: str = "assistant"
    model: str = ""
    stop_reason: str | None = None
    content: Any = None


@dataclass(frozen=True, slots=True)
class Root:
    """One of the client's roots (`ctx.list_roots`): a ``file://`` URI and an optional name."""

    uri: str
    name: str | None = None


def elicitation(
    message: str, schema: Any = None, *, key: str | None = None
) -> tuple[Kind, str | None, dict[str, Any]]:
    """The parts of an elicitation ask (see `Context.elicit`)."""
    return "elicitation", key, {"message": message, "requestedSchema": requested_schema(schema)}


def sampling(
    messages: str | Sequence[Mapping[str, Any] | str],
    *,
    max_tokens: int = 1000,
    system_prompt: str | None = None,
    temperature: float | None = None,
    key: str | None = None,
) -> tuple[Kind, str | None, dict[str, Any]]:
    """The parts of a sampling ask (see `Context.sample`)."""
    params: dict[str, Any] = {"messages": _messages(messages), "maxTokens": max_tokens}
    if system_prompt is not None:
        params["systemPrompt"] = system_prompt
    if temperature is not None:
        params["temperature"] = temperature
    return "sampling", key, params


def roots(*, key: str | None = None) -> tuple[Kind, str | None, dict[str, Any]]:
    """The parts of a roots ask (see `Context.list_roots`)."""
    return "roots", key, {}


def requested_schema(schema: Any) -> dict[str, Any]:
    """A flat JSON object schema from a JSON-schema dict, a ``{"field": type}`` dict, a
    dataclass or a TypedDict; None asks for nothing but the action."""
    if schema is None:
        return {"type": "object", "properties": {}}
    if isinstance(schema, Mapping):
        if schema.get("type") == "object" or "properties" in schema:
            return dict(schema)
        properties = {name: _type_schema(tp) for name, tp in schema.items()}
        return {"type": "object", "properties": properties, "required": list(schema)}
    built = TypeAdapter(schema).json_schema()
    built.pop("title", None)
    for prop in built.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return built


def _type_schema(tp: Any) -> dict[str, Any]:
    built = TypeAdapter(tp).json_schema()
    built.pop("title", None)
    return built


def _messages(messages: str | Sequence[Mapping[str, Any] | str]) -> list[dict[str, Any]]:
    # A plain string is one user message; a mapping is taken as the MCP message it spells.
    items = [messages] if isinstance(messages, str) else list(messages)
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            out.append({"role": "user", "content": {"type": "text", "text": item}})
        else:
            out.append(dict(item))
    return out


class Asker:
    """One call's asks: numbers them, finds their answers, and says what is missing."""

    __slots__ = ("_answers", "_can", "_count", "function", "unanswered")

    def __init__(self, function: str, metadata: Mapping[str, str]) -> None:
        self.function = function
        self._count = 0
        #: The last ask left without an answer: the call's outcome even if the function caught it.
        self.unanswered: InputRequired | None = None
        raw = metadata.get(ANSWERS_KEY, "")
        try:
            answers = json.loads(raw) if raw else {}
        except ValueError:
            answers = {}
        self._answers: dict[str, Any] = answers if isinstance(answers, dict) else {}
        can = metadata.get(CAN_ANSWER_KEY)
        self._can: frozenset[str] = frozenset(can.split(",")) if can else frozenset()

    def can_answer(self, kind: str) -> bool:
        return kind in self._can

    def ask(self, parts: Sequence[tuple[Kind, str | None, dict[str, Any]]]) -> list[Any]:
        """The answers to `parts`, in order; raises `InputRequired` listing the missing ones."""
        asks = []
        for kind, key, params in parts:
            asks.append(Ask(kind, key or f"{kind_prefix(kind)}-{self._count}", params))
            self._count += 1
        missing = [a for a in asks if a.key not in self._answers]
        if missing:
            self.unanswered = self._required(missing)
            raise self.unanswered
        return [_answer(a.kind, self._answers[a.key]) for a in asks]

    def _required(self, missing: list[Ask]) -> InputRequired:
        kinds = sorted({a.kind for a in missing})
        unable = [k for k in kinds if k not in self._can]
        if unable:
            message = (
                f"{self.function} needs to ask its caller ({', '.join(unable)}) and this caller cannot "
                "answer: call it through an MCP client that supports "
                f"{' and '.join(unable)}"
            )
        else:
            message = f"{self.function} is waiting for its caller to answer {len(missing)} question(s)"
        return InputRequired(message, details={"asks": [a.to_dict() for a in missing], "unable": unable})


def kind_prefix(kind: Kind) -> str:
    return {"elicitation": "elicit", "sampling": "sample", "roots": "roots"}[kind]


def _answer(kind: Kind, data: Any) -> Any:
    data = data if isinstance(data, dict) else {}
    if kind == "elicitation":
        content = data.get("content")
        return Elicited(str(data.get("action", "cancel")), dict(content) if isinstance(content, dict) else {})
    if kind == "sampling":
        content = data.get("content")
        blocks = content if isinstance(content, list) else [content]
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        stop = data.get("stopReason")
        return Sampled(text, str(data.get("role", "assistant")), str(data.get("model", "")), stop, content)
    items = data.get("roots")
    found = items if isinstance(items, list) else []
    return [Root(str(r.get("uri", "")), r.get("name")) for r in found if isinstance(r, dict)]


def input_required_result(error: InputRequired) -> Result:
    """The call's outcome when it asked what it has no answer for: an error result whose
    ``structured_json`` lists the asks (``{"asks": [...], "unable": [...]}``) for the gateway."""
    details = dict(error.details or {})
    result = Result.failure(ErrorInfo(InputRequired.code, error.message))
    result.content = [Text(error.message)]
    result.structured_json = json.dumps(details).encode()
    return result


def pending_asks(result: Result) -> tuple[list[Ask], list[str]] | None:
    """The asks and the kinds the caller could not answer, of an input-required result; None
    for any other result."""
    if result.error is None or result.error.code != InputRequired.code or result.structured_json is None:
        return None
    try:
        data = json.loads(result.structured_json)
        asks = [Ask.from_dict(a) for a in data.get("asks", [])]
        unable = [str(k) for k in data.get("unable", [])]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return asks, unable


__all__ = [
    "ANSWERS_KEY",
    "CAN_ANSWER_KEY",
    "Ask",
    "Asker",
    "Elicited",
    "Root",
    "Sampled",
]
