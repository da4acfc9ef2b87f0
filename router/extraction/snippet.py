"""Code that reproduces a call: a Python snippet on the toolmesh client, and a curl line."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

#: The environment variable both snippets read the API key from, as the CLI does.
API_KEY_ENV = "TOOLMESH_API_KEY"


def python_snippet(base_url: str, function: str, arguments: Mapping[str, Any], *, with_key: bool) -> str:
    key = f', api_key=os.environ["{API_KEY_ENV}"]' if with_key else ""
    lines = ["import os", ""] if with_key else []
    lines += [
        "import toolmesh",
        "",
        f"mesh = toolmesh.Client({base_url!r}{key})",
        f"result = mesh.invoke({function!r}, {dict(arguments)!r})",
        "print(result.value)",
    ]
    return "\n".join(lines)


def curl_line(base_url: str, function: str, arguments: Mapping[str, Any], *, with_key: bool) -> str:
    url = f"{base_url.rstrip('/')}/v1/functions/{function}/invoke"
    parts = [
        "curl",
        "-s",
        "-X",
        "POST",
        shlex.quote(url),
        "-H",
        shlex.quote("Content-Type: application/json"),
    ]
    if with_key:
        parts += ["-H", f'"Authorization: Bearer ${API_KEY_ENV}"']
    parts += ["-d", shlex.quote(json.dumps(dict(arguments), ensure_ascii=False))]
    return " ".join(parts)


def code_for(base_url: str, function: str, arguments: Mapping[str, Any], *, with_key: bool) -> dict[str, str]:
    """``{"python": ..., "curl": ...}`` for calling `function` with `arguments` at `base_url`."""
    return {
        "python": python_snippet(base_url, function, arguments, with_key=with_key),
        "curl": curl_line(base_url, function, arguments, with_key=with_key),
    }
