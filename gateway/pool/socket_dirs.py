"""The directories the pods a gateway starts listen in, and those a dead gateway left behind.

Each template gets a fresh directory, ``<tmp>/toolmesh-<runtime>-<random>``, mode 0700, so no
other user can connect to the pods' sockets in it (they serve only there: no TCP port). The
directory holds an `OWNER` file with the gateway's pid. A gateway removes its directories
when it stops, but a gateway killed with SIGKILL runs no clean-up, so at start a gateway
removes those whose gateway is gone: only directories of its own user, with an `OWNER` file
naming a pid that no longer runs. A directory without one (being made right now, or not
toolmesh's) is left alone, and so is every directory of a gateway still running.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

log = logging.getLogger("toolmesh.pool")

PREFIX = "toolmesh-"
#: The file in a socket directory that names the gateway (its pid) that made it.
OWNER = "gateway.pid"


def make_socket_dir(runtime: str) -> str:
    """A new socket directory for `runtime`'s pods, mode 0700, marked as this process's."""
    path = tempfile.mkdtemp(prefix=f"{PREFIX}{runtime}-")
    os.chmod(path, 0o700)  # what mkdtemp makes; said once more, since pods trust it
    Path(path, OWNER).write_text(f"{os.getpid()}\n")
    return path


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: running
    return True


def _owner(path: Path) -> int | None:
    """The pid in a socket directory's OWNER file, if it has a readable one."""
    try:
        return int(path.joinpath(OWNER).read_text().strip())
    except (OSError, ValueError):
        return None


def remove_stale_socket_dirs(root: str | None = None) -> list[str]:
    """Remove the socket directories under `root` (the temporary directory) whose gateway is
    gone; returns their paths."""
    removed = []
    base = Path(root if root is not None else tempfile.gettempdir())
    try:
        candidates = [p for p in base.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return []
    for path in candidates:
        try:
            info = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            continue
        pid = _owner(path)
        if pid is None or pid == os.getpid() or _running(pid):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(str(path))
    if removed:
        log.info("removed socket directories of gateways that are gone", extra={"directories": removed})
    return removed
