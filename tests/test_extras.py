"""The slim install and the `mesh` extra: which commands need it, and how they say so."""

from __future__ import annotations

import argparse
import re
import tomllib

import pytest

from tests.conftest import ROOT
from toolmesh.cli import build_parser
from toolmesh.extras import MESH_INSTALL, MESH_MODULES, RENDER_MODULES, ROUTER_MODULES, mesh_refusal

#: Distributions of the extra whose import name differs, and the one `toolmesh up` does without.
IMPORT_NAMES = {"pyyaml": "yaml", "pyjwt": "jwt"}
OPTIONAL = {"uvloop"}


def test_the_modules_checked_are_the_extra_in_pyproject() -> None:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["mesh"]
    distributions = {re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower() for requirement in extra}
    assert {IMPORT_NAMES.get(name, name) for name in distributions - OPTIONAL} == set(MESH_MODULES)
    assert set(RENDER_MODULES) <= set(MESH_MODULES) and set(ROUTER_MODULES) <= set(MESH_MODULES)


@pytest.mark.parametrize(
    ("argv", "needs"),
    [
        (["up"], MESH_MODULES),
        (["up", "--module", "m"], MESH_MODULES),
        (["deploy", "render"], RENDER_MODULES),
        (["router", "build"], ROUTER_MODULES),
        (["router", "eval", "--catalog", "c", "--queries", "q"], ROUTER_MODULES),
        (["runtime", "--module", "m"], ()),
        (["functions", "--module", "m"], ()),
        (["invoke", "f"], ()),
        (["tools"], ()),
        (["hash-key", "k"], ()),
    ],
)
def test_only_the_gateway_router_and_render_need_the_extra(argv: list[str], needs: tuple[str, ...]) -> None:
    assert getattr(build_parser().parse_args(argv), "mesh_modules", ()) == needs


def test_a_missing_module_is_refused_in_one_line() -> None:
    args = argparse.Namespace(mesh_command="toolmesh up", mesh_modules=("json", "no_such_module_here"))
    assert mesh_refusal(args) == (
        f"toolmesh up: needs the mesh extra (no_such_module_here not installed): {MESH_INSTALL}"
    )
    assert mesh_refusal(argparse.Namespace(mesh_command="toolmesh up", mesh_modules=("json",))) is None
    assert mesh_refusal(argparse.Namespace()) is None
