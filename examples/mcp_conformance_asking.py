"""The MCP conformance suite's tools that ask their caller, as plain toolmesh functions.

Names and behaviour follow the scenarios of `@modelcontextprotocol/conformance`
(``tools-call-sampling``, ``tools-call-elicitation``, ``elicitation-sep1034-defaults``,
``elicitation-sep1330-enums`` and the 2026-07-28 ``input-required-result-*`` set). They ask with
`ctx.elicit`, `ctx.sample`, `ctx.list_roots` and `ctx.ask_all`: each call is *replayed* with the
answers gathered so far, so everything before an ask runs again on every round (here: nothing
that matters). Served next to `examples.mcp_conformance`.
"""

from __future__ import annotations

import json

import toolmesh
from toolmesh.runtimes.functions import asking

_NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

_DEFAULTS = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

_CHOICES = [("value1", "First"), ("value2", "Second"), ("value3", "Third")]
_ENUMS = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": [{"const": v, "title": f"{t} Option"} for v, t in _CHOICES],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {"anyOf": [{"const": v, "title": f"{t} Choice"} for v, t in _CHOICES]},
        },
    },
    "required": [],
}


def _elicited(answer: asking.Elicited) -> str:
    return f"action={answer.action}, content={json.dumps(answer.content)}"


# -- 2025-11-25: server-to-client requests -------------------------------------------------------


@toolmesh.function
async def test_sampling(prompt: str, ctx: toolmesh.Context) -> str:
    """Tests server-initiated sampling (LLM completion request).

    Args:
        prompt: The prompt to send to the LLM.
    """
    reply = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {reply.text or 'No response'}"


@toolmesh.function
async def test_elicitation(message: str, ctx: toolmesh.Context) -> str:
    """Tests server-initiated elicitation (user input request).

    Args:
        message: The message to show the user.
    """
    schema = {
        "type": "object",
        "properties": {"response": {"type": "string", "description": "User's response"}},
        "required": ["response"],
    }
    answer = await ctx.elicit(message, schema)
    return f"User response: {_elicited(answer)}"


@toolmesh.function
async def test_elicitation_sep1034_defaults(ctx: toolmesh.Context) -> str:
    """Tests elicitation with default values per SEP-1034."""
    answer = await ctx.elicit("Please review and update the form fields with defaults", _DEFAULTS)
    return f"Elicitation completed: {_elicited(answer)}"


@toolmesh.function
async def test_elicitation_sep1330_enums(ctx: toolmesh.Context) -> str:
    """Tests elicitation with enum schema improvements per SEP-1330."""
    answer = await ctx.elicit("Please select options from the enum fields", _ENUMS)
    return f"Elicitation completed: {_elicited(answer)}"


# -- 2026-07-28: input-required results ----------------------------------------------------------


@toolmesh.function
async def test_input_required_result_elicitation(ctx: toolmesh.Context) -> str:
    """MRTR: asks the user's name with an elicitation."""
    answer = await ctx.elicit("What is your name?", _NAME, key="user_name")
    return f"Hello, {answer.content.get('name', 'stranger')}!"


@toolmesh.function
async def test_input_required_result_sampling(ctx: toolmesh.Context) -> str:
    """MRTR: asks the client's model a question."""
    reply = await ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
    return f"LLM response: {reply.text}"


@toolmesh.function
async def test_input_required_result_list_roots(ctx: toolmesh.Context) -> str:
    """MRTR: asks the client's roots."""
    roots = await ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(root.uri for root in roots)


@toolmesh.function
async def test_input_required_result_request_state(ctx: toolmesh.Context) -> str:
    """MRTR: round-trips requestState (toolmesh always seals one)."""
    answer = await ctx.elicit(
        "Please confirm",
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        key="confirm",
    )
    return f"state-ok: confirmed={answer.content.get('ok')}"


@toolmesh.function
async def test_input_required_result_multiple_inputs(ctx: toolmesh.Context) -> str:
    """MRTR: asks an elicitation, a sampling and the roots in one round."""
    name, greeting, roots = await ctx.ask_all(
        asking.elicitation("What is your name?", _NAME, key="user_name"),
        asking.sampling("Generate a greeting", max_tokens=50, key="greeting"),
        asking.roots(key="client_roots"),
    )
    return f"name={name.content.get('name')}, greeting={greeting.text}, roots={len(roots)}"


@toolmesh.function
async def test_input_required_result_multi_round(ctx: toolmesh.Context) -> str:
    """MRTR: two rounds of questions, one after the other."""
    name = await ctx.elicit("Step 1: What is your name?", _NAME, key="step1")
    color = await ctx.elicit(
        "Step 2: What is your favorite color?",
        {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
        key="step2",
    )
    return f"multi-round-ok: {name.content.get('name')} likes {color.content.get('color')}"


@toolmesh.function
async def test_input_required_result_tampered_state(ctx: toolmesh.Context) -> str:
    """MRTR: a tampered requestState is refused (by the gateway, before this runs again)."""
    answer = await ctx.elicit("What is your name?", _NAME, key="user_name")
    return f"Hello, {answer.content.get('name')}!"


@toolmesh.function
async def test_input_required_result_capabilities(ctx: toolmesh.Context) -> str:
    """MRTR: asks only what the client declared it can answer."""
    parts = []
    if ctx.can_ask("elicitation"):
        value = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
        parts.append(asking.elicitation("Elicitation input", value, key="elicit_input"))
    if ctx.can_ask("sampling"):
        parts.append(asking.sampling("Sample request", max_tokens=50, key="sample_input"))
    await ctx.ask_all(*parts)
    return "capabilities-ok: received " + ",".join(key for _, key, _ in parts if key)


# -- 2026-07-28: server-stateless diagnostics -----------------------------------------------------


@toolmesh.function
async def test_missing_capability(ctx: toolmesh.Context) -> str:
    """Test tool requiring sampling: a client that did not declare it gets -32021 (HTTP 400)."""
    reply = await ctx.sample("Say hello.", max_tokens=20, key="hello")
    return f"LLM response: {reply.text}"


@toolmesh.function
async def test_streaming_elicitation(ctx: toolmesh.Context) -> str:
    """Diagnostic tool validating response streams: it asks through an input-required result,
    never an independent request on the call's stream."""
    answer = await ctx.elicit("What is your name?", _NAME, key="user_name")
    return f"Hello, {answer.content.get('name')}!"
