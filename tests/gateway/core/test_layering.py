"""The core knows no transport and no front door. (The folders' layers, and their sizes, are
tests/test_layering.py's.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap

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
