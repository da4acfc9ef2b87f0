"""The fast path's answer bytes (gateway/mcp/answers/call_answer.py) are the SDK chain's, byte for byte,
for every result it writes itself; the others take the chain."""

from __future__ import annotations

from typing import Any

import pytest

from toolmesh.gateway.mcp.answers.call_answer import HANDSHAKE, MODERN, CallAnswers
from toolmesh.gateway.mcp.convert import call_result
from toolmesh.runtimes.functions.results import Binary, ErrorInfo, Json, Resource, Result, Text
from toolmesh.runtimes.functions.spec import FunctionSpec

SPEC = FunctionSpec("echo", "", {"type": "object"})
TYPED = FunctionSpec("add", "", {"type": "object"}, output_schema={"type": "object"})
INFO = {"name": "toolmesh", "version": "0.1.0", "icons": [{"src": "https://x/é.png"}]}
TEXTS = [
    "",
    "hi",
    'héllo ✓ "quoted" \\ </script> \u2028 \x7f',
    "\x00\x01\x1f\n\r\t\b\f",
    "😀 astral",
    "\ud800 lone surrogate",
]
RESULTS: list[tuple[FunctionSpec, Result]] = [
    (SPEC, Result()),
    *((SPEC, Result(content=[Text(text)])) for text in TEXTS),
    (SPEC, Result(content=[Text("a"), Json(b'{"k": [1, 2.5, null, "\\u00e9"]}'), Text("b")])),
    (SPEC, Result(is_error=True, error=ErrorInfo("internal", "it broke, ünïcode"))),
    (SPEC, Result(content=[Text("own words")], is_error=True, error=ErrorInfo("internal", "x"))),
    (SPEC, Result(is_error=True)),
    (TYPED, Result(content=[Text("5")], structured_json=b'{"result": 5}')),
    (TYPED, Result(content=[Text("x")], is_error=True, structured_json=b'{"result": 5}')),
    (SPEC, Result(content=[Binary(b"\x89PNG", "image/png")])),
    # What an MCP server behind the gateway sent: annotations, `_meta`, resources (the chain's).
    (SPEC, Result(content=[Text("a", {"audience": ["user"], "priority": 0.5})])),
    (SPEC, Result(content=[Json(b"[1]", None, {"k": "v"})])),
    (SPEC, Result(content=[Text("a")], meta={"ui": {"resourceUri": "ui://a"}})),
    (SPEC, Result(content=[Resource("file:///a.txt", "a.txt", mime_type="text/plain", size=3)])),
    (SPEC, Result(content=[Resource("memo://1", embedded=True, text="memo", meta={"k": 1})])),
]
IDS: list[Any] = [0, 7, -1, 2**70, "", 'id-é"\n', "😀"]


def written(answers: CallAnswers, version: str, request_id: Any, spec: FunctionSpec, result: Result) -> bytes:
    if version == MODERN:
        return answers.modern_body(request_id, spec, result)
    return answers.handshake_frame(request_id, spec, result)


def by_chain(
    answers: CallAnswers, version: str, request_id: Any, spec: FunctionSpec, result: Result
) -> bytes:
    data = answers._sdk_data(request_id, spec, result, version).encode()
    return data if version == MODERN else b"event: message\r\ndata: " + data + b"\r\n\r\n"


@pytest.mark.parametrize("version", [HANDSHAKE, MODERN])
@pytest.mark.parametrize("request_id", IDS)
@pytest.mark.parametrize("case", range(len(RESULTS)))
def test_the_answer_is_the_sdk_chains_byte_for_byte(version: str, request_id: Any, case: int) -> None:
    spec, result = RESULTS[case]
    answers = CallAnswers(lambda: dict(INFO), call_result)
    try:
        expected = by_chain(answers, version, request_id, spec, result)
    except Exception as exc:  # the chain refuses it: so does the fast path, in the chain's words
        with pytest.raises(type(exc)):
            written(answers, version, request_id, spec, result)
        return
    assert written(answers, version, request_id, spec, result) == expected
    assert written(answers, version, request_id, spec, result) == expected  # nothing kept but the tail


def test_what_an_mcp_server_added_takes_the_chain() -> None:
    """A text result with annotations or a `_meta` is not the fast path's to write: it would drop them."""
    answers = CallAnswers(lambda: dict(INFO), call_result)
    for result in (
        Result(content=[Text("a", {"priority": 0.5})]),
        Result(content=[Text("a", None, {"k": 1})]),
        Result(content=[Text("a")], meta={"k": 1}),
    ):
        modern = answers.modern_body(1, SPEC, result)
        assert modern == by_chain(answers, MODERN, 1, SPEC, result)
        assert b'"priority":0.5' in modern or b'"k":1' in modern
