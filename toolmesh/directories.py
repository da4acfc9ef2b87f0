"""Where toolmesh keeps files of its own: the XDG cache and data directories."""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(variable: str, fallback: str) -> Path:
    return Path(os.environ.get(variable) or Path.home() / fallback) / "toolmesh"


def default_cache_dir() -> Path:
    """Where built models live: ``$XDG_CACHE_HOME/toolmesh`` (``~/.cache/toolmesh``)."""
    return _xdg("XDG_CACHE_HOME", ".cache")


def default_data_dir() -> Path:
    """Where sessions and cached function embeddings live: ``~/.local/share/toolmesh``."""
    return _xdg("XDG_DATA_HOME", ".local/share")
