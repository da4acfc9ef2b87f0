"""Functions that serve MCP resources, prompts and completions, as plain Python::

    @toolmesh.resource("docs://readme", mime_type="text/markdown")
    def readme() -> str:
        \"\"\"The project's README.\"\"\"
        return Path("README.md").read_text()

    @toolmesh.resource("users://{user_id}/avatar", mime_type="image/png")
    def avatar(user_id: str) -> bytes: ...

    @toolmesh.prompt(title="Review code")
    def review(code: str, language: Literal["python", "rust"] = "python") -> str:
        return f"Review this {language} code:\\n{code}"

    @toolmesh.completion("review", "code")
    def complete_code(value: str) -> list[str]: ...

A resource returns text (`str`), bytes, a `Binary` or JSON-like data; a template's
``{name}`` parts are the function's parameters. A prompt returns a string (one user message),
or a list of messages and content items: `str`, `Binary` (images, audio), `Embedded`
resources, `Message` for another role. A completion receives the typed prefix as `value` (and,
if it has that parameter, the other arguments so far as `context`) and returns suggestions;
without one, an argument typed with `Literal`/`Enum` completes from its values.

These functions are not tools: they are hosted and called like functions, but tool lists
leave them out and only their MCP method (resources/read, prompts/get, completion/complete)
calls them. Decorating a `Toolset` method works too.
"""

from __future__ import annotations

import base64
import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

from toolmesh.errors import DefinitionError
from toolmesh.runtimes.functions.decorators import OPTIONS_ATTRIBUTE, FunctionOptions
from toolmesh.runtimes.functions.results import Binary, Json, Text
from toolmesh.runtimes.functions.spec import COMPLETION, PROMPT, RESOURCE, Annotations, Feature, FunctionSpec

F = TypeVar("F", bound=Callable[..., Any])
#: A URI template's variables: RFC 6570 level 1, ``{name}``.
TEMPLATE_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
Role = Literal["user", "assistant"]


def _mark(options: FunctionOptions) -> Callable[[F], F]:
    def mark(target: F) -> F:
        setattr(target, OPTIONS_ATTRIBUTE, options)
        return target

    return mark


def resource(
    uri: str,
    *,
    name: str | None = None,
    mime_type: str = "",
    title: str = "",
    description: str | None = None,
    timeout: float | None = None,
) -> Callable[[F], F]:
    """Serve the function's return value as the MCP resource `uri` (or URI template).

    `mime_type` is what the contents are; without it, text is ``text/plain``, JSON
    ``application/json`` and bytes ``application/octet-stream``.
    """
    feature = Feature(RESOURCE, uri=uri, mime_type=mime_type, title=title)
    hints = Annotations(read_only=True, idempotent=True, title=title)
    return _mark(FunctionOptions(name, None, description, timeout, hints, feature=feature))


@overload
def prompt(fn: F, /) -> F: ...


@overload
def prompt(
    *, name: str | None = None, title: str = "", description: str | None = None, timeout: float | None = None
) -> Callable[[F], F]: ...


def prompt(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    title: str = "",
    description: str | None = None,
    timeout: float | None = None,
) -> Any:
    """Serve the function as an MCP prompt: its parameters are the prompt's arguments and it
    returns the messages (see the module docstring). Use bare or with arguments."""
    feature = Feature(PROMPT, title=title)
    options = FunctionOptions(name, None, description, timeout, Annotations(title=title), feature=feature)
    mark = _mark(options)
    return mark(fn) if fn is not None else mark


def completion(target: str, argument: str, *, name: str | None = None) -> Callable[[F], F]:
    """Suggest values for `argument` of `target` (a prompt's name or a resource template's URI).

    The function takes ``value: str`` (what the user typed so far) and optionally
    ``context: dict[str, str]`` (the arguments already given), and returns a list of strings.
    """
    feature = Feature(COMPLETION, target=target, argument=argument)
    return _mark(FunctionOptions(name, None, "", None, Annotations(read_only=True), feature=feature))


@dataclass(frozen=True, slots=True)
class Embedded:
    """A resource embedded in a prompt message: its URI and its text or bytes."""

    uri: str
    text: str | None = None
    data: bytes | None = None
    mime_type: str = "text/plain"


@dataclass(frozen=True, slots=True)
class Message:
    """One prompt message, for a role other than the default ``user``."""

    content: Any
    role: Role = "user"


def template_variables(uri: str) -> list[str]:
    """The ``{name}`` variables of a URI template, in order (none for a plain URI)."""
    return TEMPLATE_VARIABLE.findall(uri)


def match_uri(template: str, uri: str) -> dict[str, str] | None:
    """The variables that make `template` read `uri` (each one path segment), or None when it
    cannot; ``{}`` for a plain URI equal to `uri`."""
    parts = TEMPLATE_VARIABLE.split(template)
    # split() alternates literal text and variable names.
    pattern = "".join(
        re.escape(part) if index % 2 == 0 else f"(?P<{part}>[^/?#]+)" for index, part in enumerate(parts)
    )
    match = re.fullmatch(pattern, uri)
    return None if match is None else match.groupdict()


def check_feature(spec: FunctionSpec, fn: Callable[..., Any]) -> None:
    """Raise DefinitionError when a feature's function cannot serve it."""
    feature = spec.feature
    assert feature is not None
    target = inspect.unwrap(fn)
    if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
        raise DefinitionError(f"{spec.qualified_name}: a {feature.kind} cannot be a generator")
    properties = set(spec.input_schema.get("properties", {}))
    required = set(spec.input_schema.get("required", ()))
    if feature.kind == RESOURCE:
        variables = set(template_variables(feature.uri))
        if required - variables or variables - properties:
            raise DefinitionError(
                f"{spec.qualified_name}: the parameters of resource {feature.uri!r} must be its template "
                f"variables {sorted(variables)}; the function requires {sorted(required)}"
            )
    elif feature.kind == COMPLETION and ("value" not in properties or required - {"value", "context"}):
        raise DefinitionError(
            f"{spec.qualified_name}: a completion takes `value` (and optionally `context`), nothing else"
        )


def feature_call(feature: Feature, fn: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
    """What the pod calls for `feature`: prompts turn their return value into MCP messages."""
    if feature.kind != PROMPT:
        return fn
    if is_async:

        @functools.wraps(fn)
        async def async_prompt(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
            return prompt_messages(await fn(*args, **kwargs))

        return async_prompt

    @functools.wraps(fn)
    def sync_prompt(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return prompt_messages(fn(*args, **kwargs))

    return sync_prompt


def _block(item: Any) -> dict[str, Any]:
    if isinstance(item, str):
        return {"type": "text", "text": item}
    if isinstance(item, Text):
        return {"type": "text", "text": item.text}
    if isinstance(item, Json):
        return {"type": "text", "text": item.data.decode()}
    if isinstance(item, Binary):
        kind = item.mime_type.partition("/")[0]
        if kind not in ("image", "audio"):
            raise TypeError(f"a prompt's {item.mime_type} bytes need a URI: return them as toolmesh.Embedded")
        return {"type": kind, "data": base64.b64encode(item.data).decode(), "mimeType": item.mime_type}
    if isinstance(item, Embedded):
        contents: dict[str, Any] = {"uri": item.uri, "mimeType": item.mime_type}
        if item.data is not None:
            contents["blob"] = base64.b64encode(item.data).decode()
        else:
            contents["text"] = item.text or ""
        return {"type": "resource", "resource": contents}
    if isinstance(item, dict):
        return item  # already an MCP content block
    raise TypeError(f"a prompt cannot hold a {type(item).__name__}: use str, Binary, Embedded or Message")


def _message(item: Any) -> dict[str, Any]:
    if isinstance(item, Message):
        return {"role": item.role, "content": _block(item.content)}
    if isinstance(item, dict) and "role" in item:
        return item  # already an MCP prompt message
    return {"role": "user", "content": _block(item)}


def prompt_messages(value: Any) -> list[dict[str, Any]]:
    """A prompt function's return value as MCP prompt messages (plain dicts)."""
    items = value if isinstance(value, list | tuple) else [value]
    return [_message(item) for item in items]
