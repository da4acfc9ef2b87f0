"""OpenAPI schemas (3.0 and 3.1) as JSON Schema (2020-12), the form function specs carry.

`$ref`s to `#/components/schemas/...` (and to schemas in other files, bundled by references.py)
stay references, to `#/$defs/...` of the schema that uses them, so that a recursive schema is
written once instead of unrolled forever; every other local `$ref` (parameters, request bodies,
responses) is inlined. Keywords beside a `$ref` (3.1's `description`, 3.0's `nullable`) are kept.
3.0's `nullable` becomes a `"null"` type (or a `null` branch), and keywords JSON Schema lacks
(`discriminator`, `xml`, `example`, `externalDocs`) are dropped. A converter writes schemas for
one direction: a request's leave out `readOnly` properties (the service sets them), an answer's
`writeOnly` ones (the service never sends them).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

COMPONENT_SCHEMAS = "#/components/schemas/"
#: Where references to other files' parts point once bundled (references.py).
EXTERNAL = "x-toolmesh-external"
EXTERNAL_REFS = f"#/{EXTERNAL}/"
#: Keywords of OpenAPI's schema object that are not JSON Schema.
_OPENAPI_ONLY = frozenset({"nullable", "discriminator", "xml", "example", "externalDocs"})
#: The most definitions one schema carries (the nearest to it): in a document whose schemas all
#: reach each other (expandable fields, back references) every function would carry them all.
MAX_DEFINITIONS = 32
#: How deep inlined (non-schema) references may nest before the document is called cyclic.
_MAX_INLINE_DEPTH = 32


class DocumentError(ValueError):
    """The document is not an OpenAPI document toolmesh can read; the message says where."""


def resolve(document: Mapping[str, Any], node: Any, depth: int = 0) -> Any:
    """`node`, or what its local `$ref` points at (followed until it is no reference)."""
    while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
        if depth > _MAX_INLINE_DEPTH:
            raise DocumentError(f"$ref {node['$ref']!r} refers to itself")
        node = pointer(document, node["$ref"])
        depth += 1
    return node


def pointer(document: Mapping[str, Any], ref: str) -> Any:
    """The part of `document` that the local JSON pointer `ref` ("#/a/b") names."""
    if not ref.startswith("#"):
        raise DocumentError(f"$ref {ref!r} is not local to the document (only '#/...' is read)")
    node: Any = document
    for part in ref[1:].split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise DocumentError(f"$ref {ref!r} points at nothing in the document")
    return node


#: The direction a converter writes schemas for: what each leaves out.
REQUEST = "readOnly"
ANSWER = "writeOnly"


class SchemaConverter:
    """Converts schemas of one document, for requests or for answers (`leave_out` is REQUEST or
    ANSWER); `definitions(used)` gives the `$defs` they refer to."""

    def __init__(self, document: Mapping[str, Any], leave_out: str = REQUEST) -> None:
        self._document = document
        self._leave_out = leave_out
        self._converted: dict[str, dict[str, Any]] = {}
        #: A converted definition's name -> the names of the definitions it refers to directly.
        self._refers: dict[str, set[str]] = {}
        components = (document.get("components") or {}).get("schemas") or {}
        # A definition's name -> the reference it stands for, and back.
        self._refs: dict[str, str] = {str(name): COMPONENT_SCHEMAS + str(name) for name in components}
        self._names: dict[str, str] = {ref: name for name, ref in self._refs.items()}

    def convert(self, schema: Any, used: set[str]) -> dict[str, Any]:
        """`schema` as JSON Schema; adds the definitions it refers to (by name) to `used`."""
        if schema is True or schema is None:
            return {}
        if not isinstance(schema, Mapping):
            raise DocumentError(f"a schema must be an object, not {schema!r}")
        ref = schema.get("$ref")
        if isinstance(ref, str):
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            name = self._name(ref)
            if name is None:
                target = resolve(self._document, {"$ref": ref})
                return self.convert({**target, **siblings} if isinstance(target, Mapping) else target, used)
            self._component(name, used)
            referred: dict[str, Any] = {"$ref": f"#/$defs/{name}"}
            if siblings:
                nullable = siblings.pop("nullable", None) is True
                referred = {**self.convert(siblings, used), **referred}
                referred = _nullable(referred) if nullable else referred
            return referred
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _OPENAPI_ONLY:
                continue
            if key == "properties" and isinstance(value, Mapping):
                kept = {k: v for k, v in value.items() if not self.left_out(v)}
                out[key] = {k: self.convert(v, used) for k, v in kept.items()}
                if len(kept) < len(value) and isinstance(schema.get("required"), list):
                    out["required"] = [r for r in schema["required"] if r in kept or r not in value]
            elif key == "required" and "required" in out:
                continue
            elif key in ("patternProperties", "$defs", "definitions"):
                out[key] = {k: self.convert(v, used) for k, v in value.items()}
            elif key in ("items", "additionalProperties", "not", "contains", "propertyNames") and (
                isinstance(value, Mapping)
            ):
                out[key] = self.convert(value, used)
            elif key in ("allOf", "oneOf", "anyOf", "prefixItems") and isinstance(value, list):
                out[key] = [self.convert(v, used) for v in value]
            else:
                out[key] = value
        if schema.get("nullable") is True:
            out = _nullable(out)
        return out

    def left_out(self, schema: Any) -> bool:
        """Whether a property of this schema is left out in this direction (`readOnly` in a
        request, `writeOnly` in an answer)."""
        target = resolve(self._document, schema) if isinstance(schema, Mapping) else schema
        own = isinstance(schema, Mapping) and schema.get(self._leave_out) is True
        return own or (isinstance(target, Mapping) and target.get(self._leave_out) is True)

    def _name(self, ref: str) -> str | None:
        """The definition a schema reference becomes: component schemas and the schemas of other
        files (bundled under EXTERNAL) are named, so recursion through them stays finite."""
        name = self._names.get(ref)
        if name is not None or not ref.startswith((COMPONENT_SCHEMAS, EXTERNAL_REFS)):
            return name
        last = ref.rstrip("/").rpartition("/")[2].replace("~1", "/").replace("~0", "~")
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", last) or "schema"
        name, n = stem, 1
        while name in self._refs:
            n += 1
            name = f"{stem}_{n}"
        self._refs[name], self._names[ref] = ref, name
        return name

    def _component(self, name: str, used: set[str]) -> None:
        # Only noted: definitions() converts it, so a long chain of references is no deep recursion.
        used.add(name)

    def _converted_component(self, name: str) -> tuple[dict[str, Any], set[str]]:
        """A definition converted (once), and the definitions it refers to directly."""
        if name not in self._converted:
            refers: set[str] = set()
            self._converted[name] = self.convert(pointer(self._document, self._refs[name]), refers)
            self._refers[name] = refers
        return self._converted[name], self._refers[name]

    def definitions(self, used: set[str]) -> dict[str, Any]:
        """The definitions `used` names and those they refer to, converted: the nearest
        MAX_DEFINITIONS of them (all of `used`); a reference beyond becomes `_stub`."""
        found: dict[str, dict[str, Any]] = {}
        refers: dict[str, set[str]] = {}
        level = sorted(used)
        while level:
            following: list[str] = []
            for name in level:
                if name in found or (len(found) >= MAX_DEFINITIONS and name not in used):
                    continue
                found[name], refers[name] = self._converted_component(name)
                following.extend(r for r in sorted(refers[name]) if r not in found)
            level = following
        return {
            name: found[name] if refers[name] <= found.keys() else _stubbed(found[name], found.keys())
            for name in sorted(found)
        }

    def document_schema(self, schema: Any) -> dict[str, Any]:
        """A standalone JSON Schema: `schema` converted, with the `$defs` it needs."""
        used: set[str] = set()
        out = self.convert(schema, used)
        return with_definitions(out, self.definitions(used))


def _stubbed(schema: Any, kept: Collection[str]) -> Any:
    """`schema` with its references to definitions not `kept` made any value, described."""
    if isinstance(schema, Mapping):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[len("#/$defs/") :] not in kept:
            name = ref[len("#/$defs/") :]
            return {"description": f"A {name} (its schema left out: the function's schema is large)"}
        return {key: _stubbed(value, kept) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_stubbed(value, kept) for value in schema]
    return schema


def with_definitions(schema: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "$defs": definitions} if definitions else schema


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        schema = {**schema, "type": [kind, "null"]}
        if "enum" in schema and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return schema
    return {"anyOf": [schema, {"type": "null"}]}
