"""completion/complete for prompt and resource-template arguments.

For `ref/prompt` (a prompt's name) or `ref/resource` (a template's URI) and one argument:
the function marked `@toolmesh.completion(target, argument)` is called with the typed
``value`` (and ``context``, the arguments given so far, when it takes that parameter) and
returns the suggestions. Without one, an argument whose schema lists its values (a `Literal`
or `Enum` parameter) completes to those that start with the value; any other, to nothing.
At most `MAX_VALUES` are sent, with `total` and `hasMore` saying how many there were.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext

from toolmesh.errors import FunctionNotFound, InternalError
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.mcp.caller import call_feature, caller, in_namespace, refusal
from toolmesh.gateway.mcp.prompts import prompt_name
from toolmesh.runtimes.functions.spec import COMPLETION, PROMPT, RESOURCE, FunctionSpec, tool_name

#: The most values one completion holds (the protocol's limit).
MAX_VALUES = 100


def _target_of(spec: FunctionSpec, ref: types.PromptReference | types.ResourceTemplateReference) -> bool:
    """Whether `spec` is the prompt or resource template that `ref` names."""
    feature = spec.feature
    if feature is None:
        return False
    if isinstance(ref, types.PromptReference):
        return feature.kind == PROMPT and ref.name in (spec.qualified_name, prompt_name(spec))
    return feature.kind == RESOURCE and feature.uri == ref.uri


def _names(target: str, spec: FunctionSpec) -> bool:
    assert spec.feature is not None
    if spec.feature.kind == RESOURCE:
        return target == spec.feature.uri
    return target in (spec.qualified_name, tool_name(spec.qualified_name))


def enum_values(spec: FunctionSpec, argument: str) -> list[str]:
    """The values an argument's schema lists (`enum`, or `const`s of `anyOf`), as strings."""
    schema: dict[str, Any] = spec.input_schema.get("properties", {}).get(argument, {})
    if "enum" in schema:
        return [str(value) for value in schema["enum"]]
    options = schema.get("anyOf", ())
    return [str(option["const"]) for option in options if isinstance(option, dict) and "const" in option]


def completion(values: Sequence[str]) -> types.Completion:
    return types.Completion(
        values=list(values[:MAX_VALUES]), total=len(values), has_more=len(values) > MAX_VALUES
    )


class Completions:
    """The completion/complete handler, for the SDK's low-level `Server`."""

    def __init__(self, mesh: Mesh) -> None:
        self.mesh = mesh

    async def complete(
        self, ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        principal, namespace = caller(ctx)
        features = in_namespace(self.mesh.features(principal), namespace)
        targets = [spec for spec in features if _target_of(spec, params.ref)]
        if not targets:
            what = params.ref.name if isinstance(params.ref, types.PromptReference) else params.ref.uri
            raise refusal(FunctionNotFound(f"no prompt or resource template {what!r} to complete"))
        target = targets[0]
        argument = params.argument.name
        completers = [
            spec
            for spec in features
            if spec.feature is not None
            and spec.feature.kind == COMPLETION
            and spec.feature.argument == argument
            and _names(spec.feature.target, target)
        ]
        if not completers:
            found = [v for v in enum_values(target, argument) if v.startswith(params.argument.value)]
            return types.CompleteResult(completion=completion(found))
        completer = completers[0]
        arguments: dict[str, Any] = {"value": params.argument.value}
        if "context" in completer.input_schema.get("properties", {}):
            arguments["context"] = dict(params.context.arguments or {}) if params.context else {}
        result = await call_feature(self.mesh, ctx, completer, arguments)
        values = result.structured
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise refusal(
                InternalError(f"completion {completer.qualified_name!r} must return a list of strings")
            )
        return types.CompleteResult(completion=completion(values))
