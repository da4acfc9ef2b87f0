"""A generated document of realistic size: hundreds of operations, schemas chained through each
other, operationIds missing, repeated or not ASCII; listed by `toolmesh functions --config` and
served."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, pod_env
from tests.gateway.sources.openapi.big_document import big_document
from tests.gateway.sources.openapi.echo import echoed, runtime_for, serve_echo
from toolmesh.gateway.sources.openapi.schemas import MAX_DEFINITIONS
from toolmesh.runtimes.functions.spec import check_name


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serve_echo() as url:
        yield url


def test_toolmesh_functions_lists_every_operation(tmp_path: Path) -> None:
    (tmp_path / "big.json").write_text(json.dumps(big_document(120)))
    (tmp_path / "toolmesh.toml").write_text(
        '[[runtimes]]\nname = "big"\nopenapi = "big.json"\nexclude = ["group11"]\n'
    )
    config = str(tmp_path / "toolmesh.toml")
    command = [sys.executable, "-m", "toolmesh", "functions", "--config", config, "--format", "text"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT, env=pod_env())
    assert done.returncode == 0, done.stderr
    # 120 resources of 5 operations, less group11's 10 (tags excluded), plus 4 odd ones.
    assert done.stdout.startswith(f"# runtime big (openapi): {5 * 120 - 5 * 10 + 4} functions")


async def test_a_long_chain_of_references_and_odd_operation_ids(tmp_path: Path, origin: str) -> None:
    # 400 schemas each referring to the next: read without recursing through the chain.
    async with runtime_for(big_document(400), tmp_path, base_url=origin) as runtime:
        assert runtime.error is None and len(runtime.specs) == 2004
        names = {spec.name for spec in runtime.specs}
        assert all(check_name(name) for name in names)
        assert {"delete_v1_resource7_id", "getThing", "recuperer_donnees", "op"} <= names
        assert len([n for n in names if n.startswith("getThing")]) == 2
        create = next(spec for spec in runtime.specs if spec.name == "create_resource0")
        # Every schema reaches every other: each function carries the nearest ones only.
        definitions = create.input_schema["$defs"]
        assert len(definitions) == MAX_DEFINITIONS and "Resource1" in definitions
        far = f"Resource{MAX_DEFINITIONS + 1}"
        assert definitions[f"Resource{MAX_DEFINITIONS}"]["properties"]["related"]["items"] == {
            "description": f"A {far} (its schema left out: the function's schema is large)"
        }
        got = await echoed(runtime, "get_resource7", {"id": "x"})
        assert got["path"] == "/v1/resource7/x"
