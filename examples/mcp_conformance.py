"""The official MCP conformance suite's fixture, as plain toolmesh functions.

`make conformance` serves this module (see tools/conformance/toolmesh.toml) and runs
`@modelcontextprotocol/conformance` against it: the tool, resource and prompt names and
contents are the ones the suite's scenarios ask for (its everything-server.ts).
"""

from __future__ import annotations

import base64
import json
import logging
import time

import toolmesh

log = logging.getLogger("conformance-test-server")

#: A 1x1 red PNG pixel and a minimal WAV file, as the suite's fixture has them.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")

# -- tools -------------------------------------------------------------------------------


def test_simple_text() -> str:
    """Tests simple text content response."""
    return "This is a simple text response for testing."


def test_image_content() -> toolmesh.Binary:
    """Tests image content response."""
    return toolmesh.Binary(PNG, "image/png")


def test_audio_content() -> toolmesh.Binary:
    """Tests audio content response."""
    return toolmesh.Binary(WAV, "audio/wav")


def test_embedded_resource() -> toolmesh.Binary:
    """Tests embedded resource content response."""
    return toolmesh.Binary(b"This is an embedded resource content.", "text/plain")


def test_multiple_content_types() -> list[toolmesh.Text | toolmesh.Binary]:
    """Tests response with multiple content types (text, image, resource)."""
    return [
        toolmesh.Text("Multiple content types test:"),
        toolmesh.Binary(PNG, "image/png"),
        toolmesh.Binary(json.dumps({"test": "data", "value": 123}).encode(), "application/json"),
    ]


def test_tool_with_logging(ctx: toolmesh.Context) -> str:
    """Tests tool that emits log messages during execution."""
    for message in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        ctx.logger.info(message)
        time.sleep(0.05)
    return "Tool with logging executed successfully"


def test_tool_with_progress(ctx: toolmesh.Context) -> str:
    """Tests tool that reports progress notifications."""
    for step in (0, 50, 100):
        ctx.report_progress(step, total=100, message=f"Completed step {step} of 100")
        time.sleep(0.05)
    return "Progress reported"


def test_logging_tool(ctx: toolmesh.Context) -> str:
    """Diagnostic logging validator tool: logs, which a 2026 client hears only when it asked."""
    ctx.logger.info("test_logging_tool ran")
    return "logged"


def test_error_handling() -> str:
    """Tests error response handling."""
    raise RuntimeError("This tool intentionally returns an error for testing")


#: The suite's JSON Schema 2020-12 scenario: `$schema`, `$defs` with an `$anchor`, `$ref`,
#: `allOf`/`anyOf`, `if`/`then`/`else` and `additionalProperties`, published exactly as written.
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def _json_schema_2020_12_tool(**arguments: object) -> str:
    return f"Received: {json.dumps(arguments, sort_keys=True)}"


json_schema_2020_12_tool = toolmesh.FunctionDefinition(
    name="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features",
    parameters=JSON_SCHEMA_2020_12,
    handler=_json_schema_2020_12_tool,
)


# -- resources ---------------------------------------------------------------------------


@toolmesh.resource("test://static-text", mime_type="text/plain", title="Static Text Resource")
def static_text() -> str:
    """A static text resource for testing."""
    return "This is the content of the static text resource."


@toolmesh.resource("test://static-binary", mime_type="image/png", title="Static Binary Resource")
def static_binary() -> bytes:
    """A static binary resource (image) for testing."""
    return PNG


@toolmesh.resource("test://template/{id}/data", mime_type="application/json", title="Resource Template")
def template(id: str) -> dict[str, object]:
    """A resource template with parameter substitution."""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


@toolmesh.resource("test://watched-resource", mime_type="text/plain", title="Watched Resource")
def watched_resource() -> str:
    """A resource that clients may subscribe to."""
    return "Watched resource content"


# -- prompts -----------------------------------------------------------------------------


@toolmesh.prompt(title="Simple Test Prompt")
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@toolmesh.prompt(title="Prompt With Arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with required arguments.

    Args:
        arg1: First test argument.
        arg2: Second test argument.
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@toolmesh.prompt(title="Prompt With Embedded Resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[object]:
    """A prompt that includes an embedded resource.

    Args:
        resourceUri: URI of the resource to embed.
    """
    return [
        toolmesh.Embedded(resourceUri, "Embedded resource content for testing."),
        "Please process the embedded resource above.",
    ]


@toolmesh.prompt(title="Prompt With Image")
def test_prompt_with_image() -> list[object]:
    """A prompt that includes image content."""
    return [toolmesh.Binary(PNG, "image/png"), "Please analyze the image above."]


@toolmesh.prompt(title="Prompt That Asks")
async def test_input_required_result_prompt(ctx: toolmesh.Context) -> str:
    """A prompt that asks its caller first (2026-07-28: an input-required result)."""
    schema = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
    answer = await ctx.elicit("What context should the prompt use?", schema, key="user_context")
    return f"Write with this context: {(answer.content or {}).get('context', '')}"


# -- completion --------------------------------------------------------------------------


@toolmesh.completion("test_prompt_with_arguments", "arg1")
def complete_arg1(value: str) -> list[str]:
    """Words for arg1 that start with what was typed."""
    return [word for word in ("paris", "park", "party", "test", "testing") if word.startswith(value)]
