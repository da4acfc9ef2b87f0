"""Where toolmesh keeps files of its own: the user-wide XDG cache (models, function embeddings)
and each project's data directory (jobs, router sessions, learned examples, function state), and
`toolmesh.toml`'s `[project]` section that names the project and its data directory
(`toolmesh.config` reads it with the rest and `MeshConfig.settled` fills in the defaults)."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: A project's data directory (jobs, router sessions, learned examples, function state), inside
#: the project's own directory: the config file's, or with `toolmesh up --module` the current one.
PROJECT_DATA_DIR = ".toolmesh"


#: Where a project whose own directory cannot be written keeps its data, under the user data dir.
PROJECTS = "projects"


def _xdg(variable: str, fallback: str) -> Path:
    return Path(os.environ.get(variable) or Path.home() / fallback) / "toolmesh"


def default_cache_dir() -> Path:
    """Where built models live: ``$XDG_CACHE_HOME/toolmesh`` (``~/.cache/toolmesh``)."""
    return _xdg("XDG_CACHE_HOME", ".cache")


def default_data_dir() -> Path:
    """The user's own: ``$XDG_DATA_HOME/toolmesh`` (``~/.local/share/toolmesh``), where cached
    function embeddings live (shared by every project: they are keyed by model and text) and
    the data of projects whose directory is read-only (``projects/<project id>``)."""
    return _xdg("XDG_DATA_HOME", ".local/share")


def project_id(project: Path) -> str:
    """A project's id, from its directory: the directory's name (for people) and a hash of its
    absolute path (so two projects called `tools` differ), e.g. "tools-3f9a0c2b7d1e"."""
    absolute = project.expanduser().resolve()
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", absolute.name).strip("-._")[:40] or "project"
    return f"{name}-{hashlib.sha256(str(absolute).encode()).hexdigest()[:12]}"


def may_write(directory: Path) -> bool:
    """Whether `directory` could be created (or is) and written, without creating it."""
    probe = directory
    while not probe.exists():
        if probe.parent == probe:
            return False
        probe = probe.parent
    return probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)


def project_data_dir(project: Path, project_id: str) -> Path:
    """The default data directory of the project in `project`: ``<project>/.toolmesh``, beside
    its code and config, so that deleting or moving a project takes its data along and two
    projects never share it; where that cannot be written (a read-only checkout or ConfigMap),
    ``<user data dir>/projects/<project id>``."""
    own = project.expanduser().resolve() / PROJECT_DATA_DIR
    return own if may_write(own) else default_data_dir() / PROJECTS / project_id


class DataDirError(OSError):
    """A data directory cannot be created or written; the message names it."""


def ensure_writable(directory: Path, what: str, how: str) -> Path:
    """Create `directory` and write a file in it; a DataDirError naming it, `what` is kept there
    and `how` to choose another, when that fails."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".write-check-"):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise DataDirError(f"cannot write {what} in {directory}: {reason}; {how}") from None
    return directory


#: A project id: safe in a Redis key and a SQLite value, short enough to read in a log.
PROJECT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class ProjectConfig(BaseModel):
    """One project, one data directory: its jobs, router sessions, learned examples and
    function state, never another project's, even on the same machine or the same Redis."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Stored with every job: a gateway claims, lists and returns only its own project's jobs.
    #: None: derived from the project's directory (its name and a hash of its path). Give
    #: gateways one id when they serve one project from different directories (machines
    #: sharing a Redis); replicas started from the same path agree already.
    id: str | None = Field(None, pattern=PROJECT_ID_PATTERN)
    #: Where the project's data lives (`toolmesh up --data-dir`). None: `.toolmesh` in the
    #: project's directory, or `~/.local/share/toolmesh/projects/<id>` when that is read-only.
    #: `[jobs] path` and `[router] data_dir`, when set, still win for their own files.
    data_dir: Path | None = None

    @field_validator("data_dir")
    @classmethod
    def _expand(cls, path: Path | None) -> Path | None:
        return None if path is None else path.expanduser()
