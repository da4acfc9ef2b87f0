"""Socket directories: private, marked with their gateway, and removed once that gateway is gone."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gateway.conftest import StartGateway, runtime
from toolmesh.gateway.pool.socket_dirs import OWNER, make_socket_dir, remove_stale_socket_dirs


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def socket_dir(root: Path, name: str, owner: int | None) -> Path:
    path = root / name
    path.mkdir(mode=0o700)
    (path / "pod-1.sock").write_text("")
    if owner is not None:
        (path / OWNER).write_text(f"{owner}\n")
    return path


def owners(root: Path) -> list[str]:
    """The OWNER files' contents of the socket directories under `root`."""
    return [(p / OWNER).read_text() for p in root.iterdir() if p.name.startswith("toolmesh-tools-")]


def test_a_new_socket_directory_is_private_and_names_its_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    path = Path(make_socket_dir("tools"))
    assert path.parent == tmp_path and path.name.startswith("toolmesh-tools-")
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert (path / OWNER).read_text() == f"{os.getpid()}\n"


def test_only_directories_of_gateways_that_are_gone_are_removed(tmp_path: Path) -> None:
    stale = socket_dir(tmp_path, "toolmesh-tools-stale", dead_pid())
    mine = socket_dir(tmp_path, "toolmesh-tools-mine", os.getpid())
    live = socket_dir(tmp_path, "toolmesh-tools-live", os.getppid())
    being_made = socket_dir(tmp_path, "toolmesh-tools-new", None)
    other = socket_dir(tmp_path, "other-tools", dead_pid())
    (tmp_path / "toolmesh-link").symlink_to(stale)
    garbled = socket_dir(tmp_path, "toolmesh-tools-garbled", None)
    (garbled / OWNER).write_text("not a pid")

    assert remove_stale_socket_dirs(str(tmp_path)) == [str(stale)]
    assert not stale.exists()
    assert all(path.is_dir() for path in (mine, live, being_made, other, garbled))


def test_a_directory_of_another_user_is_never_removed(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to make a directory another user owns")
    theirs = socket_dir(tmp_path, "toolmesh-tools-theirs", dead_pid())
    os.chown(theirs, 65534, 65534)
    assert remove_stale_socket_dirs(str(tmp_path)) == []
    assert theirs.is_dir()


async def test_a_gateway_removes_what_a_killed_gateway_left_behind(
    gateway_factory: StartGateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    stale = socket_dir(tmp_path, "toolmesh-tools-abcd1234", dead_pid())
    await gateway_factory(runtime("tools", "isolation_tools"))
    assert not stale.exists()
    assert owners(tmp_path) == [f"{os.getpid()}\n"]
