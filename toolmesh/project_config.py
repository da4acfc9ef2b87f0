"""`toolmesh.toml`'s `[project]` section: which project a gateway belongs to and where its data
lives; `toolmesh.config` reads it with the rest and `MeshConfig.settled` fills in the defaults."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

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
