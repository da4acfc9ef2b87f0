"""The environment a stdio MCP server gets: what every program needs, the runtime's own `env`,
and the variables its `inherit_env` names, nothing else of the pod's.

A pod's environment is the gateway's (its API keys, the tokens its `headers` read, a Redis
password) plus the pod's own (its runtime's token to the mesh). A Python runtime's code is the
operator's own; a stdio server is usually someone else's program, run from npm or PyPI, so it
gets what the official MCP SDKs give a server they start (HOME, LOGNAME, PATH, SHELL, TERM,
USER) and the locale, time zone and temporary directory, and more only when asked.
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Mapping

from toolmesh.runtimes.mcp import PASSED_ENV

#: What every server gets from the pod's environment, when set.
COMMON = frozenset(
    {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
    | {"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"}
)


def server_environment(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables of `environ` (the pod's) a server it starts gets."""
    passed = json.loads(environ.get(PASSED_ENV, "[]"))
    globs = [name for name in passed if any(c in name for c in "*?[")]
    return {
        name: value
        for name, value in environ.items()
        if name in COMMON or name in passed or any(fnmatch.fnmatchcase(name, glob) for glob in globs)
    }
