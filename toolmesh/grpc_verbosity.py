"""Keeping gRPC's C-core log lines out of toolmesh's JSON logs.

The C core writes lines such as ``I1123 ... fork_posix.cc:71] Other threads are currently
calling into gRPC, skipping fork() handlers`` straight to stderr, where they break the one
JSON object per line that the gateway and its pods write. It reads GRPC_VERBOSITY once, when
grpc is first imported, so the default has to be in the environment before that import:
the `toolmesh` command sets it first thing (`cli.main`, for `toolmesh up`, `toolmesh runtime`,
`toolmesh template`), and the pool sets it for the templates it starts. `import toolmesh` itself
leaves the environment alone (and does not load grpc: errors.py looks its statuses up on first
use), so a program that only imports toolmesh keeps grpc's own defaults. A GRPC_VERBOSITY the
user set wins. Fork support (GRPC_ENABLE_FORK_SUPPORT) is left as it is: only the logging changes.
"""

from __future__ import annotations

from collections.abc import MutableMapping

GRPC_VERBOSITY_ENV = "GRPC_VERBOSITY"
#: Errors still reach stderr (rarely, and worth breaking a line for); INFO and WARNING do not.
QUIET_GRPC_VERBOSITY = "ERROR"


def quiet_grpc(environ: MutableMapping[str, str]) -> None:
    """Default `environ`'s GRPC_VERBOSITY to ERROR, keeping any value already there."""
    environ.setdefault(GRPC_VERBOSITY_ENV, QUIET_GRPC_VERBOSITY)
