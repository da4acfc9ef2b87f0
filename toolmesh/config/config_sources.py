"""Where a command's config comes from: --config, else ./toolmesh.toml, else the examples; or
`toolmesh up --module`, which makes one runtime of the modules given."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from toolmesh.config.mesh_config import ConfigError, MeshConfig, RuntimeConfig
from toolmesh.config.runtime_config import RUNTIME_NAME

#: The file `toolmesh up`, `deploy render` and `router` read when given no --config, if it exists
#: in the current directory.
CONFIG_FILE = "toolmesh.toml"
#: The runtime `toolmesh up --module` serves when the first module's name makes no runtime name.
LOCAL_RUNTIME = "local"


def find_config(path: str | Path | None, cwd: Path | None = None) -> Path | None:
    """The config a command reads: `path` when given, else ./toolmesh.toml when it exists, else
    None (the default config)."""
    if path is not None:
        return Path(path)
    here = (cwd or Path.cwd()) / CONFIG_FILE
    return here if here.is_file() else None


def runtime_name(module: str) -> str:
    """A runtime name (a DNS label) for a module: its last part, "my_tools" -> "my-tools"."""
    name = re.sub(r"[^a-z0-9]+", "-", module.rsplit(".", 1)[-1].lower()).strip("-")[:63].strip("-")
    return name if RUNTIME_NAME.match(name) else LOCAL_RUNTIME


def modules_config(modules: Sequence[str], directory: Path) -> MeshConfig:
    """`toolmesh up --module ...`: the modules as one runtime named after the first, found in
    `directory`, with every other setting at its default."""
    if not modules:
        raise ConfigError("give at least one module")
    runtime = RuntimeConfig(name=runtime_name(modules[0]), modules=tuple(modules))
    return MeshConfig(directory=directory.resolve(), runtimes=(runtime,))
