"""Parameters on the wire: OpenAPI's `style` and `explode` for the path, the query and headers.

    path    simple  5 / 3,4,5 / role,admin,name,Al (explode: role=admin,name=Al)
            label   .5 / .3,4,5 (explode: .3.4.5) / .role,admin (explode: .role=admin)
            matrix  ;id=5 / ;id=3,4,5 (explode: ;id=3;id=4) / ;id=role,admin (explode: ;role=admin)
    query   form    id=5 / id=3&id=4 (no explode: id=3,4) / role=admin&name=Al (no explode: id=role,admin)
            spaceDelimited, pipeDelimited   id=3%204 / id=3|4 (arrays; exploded they are form's)
            deepObject  id[role]=admin&id[name]=Al
    header  simple, as in the path
    cookie  form, comma-separated

A parameter with `content` instead of a schema is its value in that media type (JSON: the value's
JSON text) in one piece. Values are percent-encoded, except the delimiters, and in the query the
reserved characters of a parameter that allows them (`allowReserved`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

#: Each location's default style (the spec's).
DEFAULT_STYLES = {"path": "simple", "query": "form", "header": "simple", "cookie": "form"}
#: What a query value may hold unencoded when its parameter allows reserved characters (RFC 3986's
#: reserved set, less `&` and `#`, which would end the value or the URL).
_RESERVED = ":/?[]@!$'()*+,;="
#: What a cookie's value may hold unencoded (RFC 6265's cookie-octet, less the comma that
#: separates an array's items).
_COOKIE_SAFE = "!#$%&'()*+-./:<=>?@[]^_`{|}~"


@dataclass(frozen=True, slots=True)
class WireParameter:
    """Where an argument goes and how it is written there."""

    location: str
    #: The parameter's name on the wire.
    name: str
    style: str = "form"
    explode: bool = True
    allow_reserved: bool = False
    #: The media type of a parameter given by `content` (its value written whole in it), else None.
    media_type: str | None = None

    @classmethod
    def of(cls, parameter: Mapping[str, Any]) -> WireParameter:
        """The parameter object's `in`, `name`, `style`, `explode`, `allowReserved`, `content`."""
        location = str(parameter["in"])
        style = str(parameter.get("style") or DEFAULT_STYLES[location])
        content = parameter.get("content")
        media_type = None
        if isinstance(content, Mapping) and "schema" not in parameter:
            media_type = next(iter(content), None)
        return cls(
            location,
            str(parameter["name"]),
            style,
            bool(parameter.get("explode", style == "form")),
            bool(parameter.get("allowReserved", False)),
            str(media_type).split(";")[0].strip().lower() if media_type is not None else None,
        )


def text(value: Any) -> str:
    """A value as the text of a parameter or field: strings as they are, the rest as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)


def path_value(parameter: WireParameter, value: Any) -> str:
    """What replaces `{name}` in the path."""
    if parameter.media_type is not None:
        return quote(_whole(parameter, value), safe="")
    if parameter.style == "matrix":
        return _matrix(parameter, value)
    if isinstance(value, dict) and parameter.explode:
        items = [f"{quote(str(k), safe='')}={quote(text(v), safe='')}" for k, v in value.items()]
    else:
        items = [quote(item, safe="") for item in _flat(value)]
    if parameter.style == "label":
        return "." + ("." if parameter.explode else ",").join(items)
    return ",".join(items)


def _matrix(parameter: WireParameter, value: Any) -> str:
    name = quote(parameter.name, safe="")
    if isinstance(value, dict) and parameter.explode:
        return "".join(f";{quote(str(k), safe='')}={quote(text(v), safe='')}" for k, v in value.items())
    if isinstance(value, list) and parameter.explode:
        return "".join(f";{name}={quote(text(v), safe='')}" for v in value)
    return f";{name}=" + ",".join(quote(item, safe="") for item in _flat(value))


def header_value(parameter: WireParameter, value: Any) -> str:
    if parameter.media_type is not None:
        return _whole(parameter, value)
    if isinstance(value, dict) and parameter.explode:
        return ",".join(f"{k}={text(v)}" for k, v in value.items())
    return ",".join(_flat(value))


def cookie_value(parameter: WireParameter, value: Any) -> str:
    if parameter.media_type is not None:
        return f"{parameter.name}={quote(_whole(parameter, value), safe=_COOKIE_SAFE)}"
    return f"{parameter.name}={','.join(quote(v, safe=_COOKIE_SAFE) for v in _flat(value))}"


def query_pairs(parameter: WireParameter, value: Any) -> list[str]:
    """The parameter's `name=value` pieces of the query string, encoded."""
    safe = _RESERVED if parameter.allow_reserved else ""

    def pair(name: str, items: list[str], delimiter: str = ",") -> str:
        # The delimiter stays as it is; a delimiter inside an item is encoded.
        return f"{quote(name, safe='[]')}={delimiter.join(quote(item, safe=safe) for item in items)}"

    name = parameter.name
    if parameter.media_type is not None:
        return [pair(name, [_whole(parameter, value)])]
    if isinstance(value, dict):
        if parameter.style == "deepObject":
            return [pair(f"{name}[{k}]", [text(v)]) for k, v in value.items()]
        if parameter.explode:
            return [pair(str(k), [text(v)]) for k, v in value.items()]
        return [pair(name, _flat(value))]
    if isinstance(value, list):
        if parameter.explode:
            return [pair(name, [text(v)]) for v in value]
        delimiter = {"spaceDelimited": "%20", "pipeDelimited": "|"}.get(parameter.style, ",")
        return [pair(name, _flat(value), delimiter)]
    return [pair(name, [text(value)])]


def _flat(value: Any) -> list[str]:
    """A value as its items' texts (the non-exploded styles: an object as key,value,...)."""
    if isinstance(value, list):
        return [text(v) for v in value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (str(k), text(v))]
    return [text(value)]


def _whole(parameter: WireParameter, value: Any) -> str:
    """A `content` parameter's value: JSON text for a JSON media type, else the value's text."""
    kind = parameter.media_type or ""
    if kind == "application/json" or kind.endswith("+json"):
        return json.dumps(value, separators=(",", ":"))
    return text(value)
