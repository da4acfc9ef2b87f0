"""The core knows no transport, pods know no gateway, and the folders stay small."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Server transports only: grpc itself comes with the error table (its status codes), httpx with
# the router (its LLM extractor is an HTTP client).
TRANSPORTS = ("starlette", "uvicorn", "mcp")
FRONT_DOORS = ("http", "grpc", "mcp", "openai", "pool")


def loaded_after(module: str, prefixes: tuple[str, ...]) -> list[str]:
    script = textwrap.dedent(
        f"""
        import importlib, sys
        importlib.import_module({module!r})
        print("\\n".join(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.parametrize("module", sorted(p.stem for p in (ROOT / "gateway" / "core").glob("[!_]*.py")))
def test_core_modules_import_no_transport_and_no_front_door(module: str) -> None:
    prefixes = (*TRANSPORTS, *(f"toolmesh.gateway.{door}" for door in FRONT_DOORS))
    assert loaded_after(f"toolmesh.gateway.core.{module}", prefixes) == []


def test_no_folder_needs_scrolling_and_no_module_is_long() -> None:
    packages = [ROOT / name for name in ("toolmesh", "gateway", "runtimes", "router", "client", "deploy")]
    for package in packages:
        for folder in [package, *(p for p in package.rglob("*") if p.is_dir() and not p.is_symlink())]:
            modules = [p for p in folder.glob("*.py") if not p.is_symlink() and "_pb2" not in p.name]
            assert len(modules) <= 15, f"{folder} holds {len(modules)} modules"
            for module in modules:
                lines = len(module.read_text().splitlines())
                assert lines <= 500, f"{module.relative_to(ROOT)} has {lines} lines"


def test_the_package_root_is_a_folder_of_its_own() -> None:
    assert not (ROOT / "__init__.py").exists()
    links = {p.name: p.resolve() for p in (ROOT / "toolmesh").iterdir() if p.is_symlink()}
    assert links == {
        "client": ROOT / "client",
        "deploy": ROOT / "deploy",
        "gateway": ROOT / "gateway",
        "router": ROOT / "router",
        "runtimes": ROOT / "runtimes",
        "v1": ROOT / "protos" / "toolmesh" / "v1",
    }


def _package_modules() -> list[Path]:
    folders = ["gateway", "runtimes", "router", "client", "deploy", "toolmesh"]
    found = [p for name in folders for p in (ROOT / name).rglob("*.py") if not p.is_symlink()]
    return [p for p in found if "toolmesh/v1" not in str(p) and p.name != "__init__.py"]


def test_module_and_class_names_say_which_one_they_are() -> None:
    # Two `service.py` or two `Executor` classes make a reader (and a stack trace) guess.
    names = sorted(p.name for p in _package_modules())
    assert sorted({n for n in names if names.count(n) > 1}) == []
    classes = sorted(
        match
        for module in _package_modules()
        for match in re.findall(r"^class ([A-Z]\w*)", module.read_text(), flags=re.MULTILINE)
    )
    assert sorted({c for c in classes if classes.count(c) > 1}) == []
