"""The Python files a runtime's modules come from, as `toolmesh up --reload` watches them.

For a module in a package (``tools.weather``), every ``.py`` file of its top-level
package (``tools/``), so that an edit to a helper module it imports counts too; for a
top-level module (``my_tools``), its own file. They are looked for where the pods
import them from: the config's directory, then the current directory. Modules found
elsewhere (installed packages, other ``PYTHONPATH`` entries) are not watched.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from toolmesh.config import MeshConfig

#: Directories never looked into for sources.
SKIPPED = frozenset({"__pycache__", ".git", ".venv", "node_modules"})


def module_roots(directory: Path | None) -> list[Path]:
    """Where pods find the modules: the config's directory (first on their path), then the
    current directory."""
    roots = [directory, Path.cwd()] if directory is not None else [Path.cwd()]
    return list(dict.fromkeys(root.resolve() for root in roots))


def _python_files(folder: Path) -> list[Path]:
    found = []
    for here, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in SKIPPED and not d.startswith(".")]
        found += [Path(here, name) for name in files if name.endswith(".py")]
    return found


def module_sources(modules: Iterable[str], roots: Sequence[Path]) -> list[Path]:
    """The files behind `modules` (see the module docstring), sorted."""
    files: set[Path] = set()
    for module in modules:
        top = module.split(".", 1)[0]
        for root in roots:
            if (root / top).is_dir():
                files.update(_python_files(root / top))
                break
            if (root / f"{top}.py").is_file():
                files.add(root / f"{top}.py")
                break
    return sorted(files)


def runtime_sources(config: MeshConfig) -> dict[str, list[Path]]:
    """Each runtime's source files (runtimes given only by an address have none)."""
    roots = module_roots(config.directory)
    return {r.name: module_sources(r.modules, roots) for r in config.runtimes if r.modules}


def forget_bytecode(files: Iterable[Path]) -> None:
    """Remove the cached bytecode of `files`. A ``.pyc`` records its source's mtime in whole
    seconds and its size: an edit within the same second that keeps the size (``1`` -> ``2``)
    would otherwise load the old code."""
    for file in files:
        cache = file.parent / "__pycache__"
        for stale in cache.glob(f"{file.stem}.*.pyc") if cache.is_dir() else ():
            with contextlib.suppress(OSError):
                stale.unlink()


Stamps = Mapping[Path, tuple[int, int]]


def stamps(files: Iterable[Path]) -> dict[Path, tuple[int, int]]:
    """Each file's (mtime in ns, size); a file that is gone is left out."""
    found = {}
    for file in files:
        with contextlib.suppress(OSError):
            info = file.stat()
            found[file] = (info.st_mtime_ns, info.st_size)
    return found
