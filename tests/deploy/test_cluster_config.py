"""The gateway's toolmesh.toml in the cluster: every file it writes is on a writable volume."""

from __future__ import annotations

import tomllib
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from tests.deploy.conftest import Manifest, containers, kustomize_rendered, one, validate
from toolmesh.cli import main
from toolmesh.config import MeshConfig, load_config, parse_config
from toolmesh.deploy.cluster_config import DROPPED_PATHS, READ_PATHS, WRITTEN_PATHS
from toolmesh.deploy.names import GATEWAY, GATEWAY_DATA_DIR
from toolmesh.deploy.render import RenderOptions, render

RUNTIME = '[[runtimes]]\nname = "w"\nmodules = ["examples.weather"]\n'


def _text(files: dict[str, Manifest]) -> str:
    text: str = files["configmap-gateway.yaml"]["data"]["toolmesh.toml"]
    return text


def _cluster(files: dict[str, Manifest]) -> MeshConfig:
    return parse_config(tomllib.loads(_text(files)))


def _writable_mounts(files: dict[str, Manifest]) -> dict[Path, dict[str, Any]]:
    """The gateway container's writable mounts, by path, with their volumes; its root is read-only."""
    pod = files["deployment-gateway.yaml"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    writable = ("emptyDir", "persistentVolumeClaim")
    return {
        Path(mount["mountPath"]): volumes[mount["name"]]
        for mount in container["volumeMounts"]
        if not mount.get("readOnly") and any(kind in volumes[mount["name"]] for kind in writable)
    }


def _volume_of(path: Path, files: dict[str, Manifest]) -> dict[str, Any] | None:
    mounts = _writable_mounts(files)
    found = [mount for mount in mounts if path.is_relative_to(mount)]
    return mounts[max(found, key=lambda m: len(m.parts))] if found else None


@pytest.mark.parametrize(
    "settings",
    [
        "",  # the defaults
        '[router]\ndata_dir = "state"\n[jobs]\nenabled = true\npath = "queue/jobs.db"\n',  # beside the config
        '[router]\ndata_dir = "/srv/toolmesh"\n[jobs]\nenabled = true\npath = "/srv/jobs.sqlite3"\n',
        '[gateway]\naudit_file = "logs/audit.jsonl"\n',
    ],
)
def test_every_path_the_gateway_writes_is_on_its_data_volume(settings: str, tmp_path: Path) -> None:
    """Locally these name files beside the config or in ~/.local/share; in the cluster the root
    is read-only (a relative data_dir used to become /app/state there: the router was down)."""
    (tmp_path / "toolmesh.toml").write_text(RUNTIME + settings)
    files = render(load_config(tmp_path / "toolmesh.toml"))
    cluster = _cluster(files)
    written = [cluster.router.data_dir] + ([cluster.jobs.path] if cluster.jobs.enabled else [])
    if "audit_file" in settings:
        written.append(cluster.gateway.audit_file)
    assert all(path is not None for path in written)
    for path in written:
        assert path is not None and path.is_absolute()
        volume = _volume_of(path, files)
        assert volume is not None, f"{path} is on the gateway's read-only root filesystem"
        assert volume["name"] == "data", f"{path} is on {volume['name']}, not the data volume"
    assert cluster.router.data_dir == Path(GATEWAY_DATA_DIR)


def test_a_path_already_on_the_data_volume_is_kept() -> None:
    config = parse_config(
        tomllib.loads(RUNTIME + f'[router]\ndata_dir = "{GATEWAY_DATA_DIR}/router"\n[jobs]\nenabled = true\n')
    )
    cluster = _cluster(render(config))
    assert cluster.router.data_dir == Path(GATEWAY_DATA_DIR) / "router"
    assert cluster.jobs.path == Path(GATEWAY_DATA_DIR) / "jobs.sqlite3"


def test_the_data_volume_is_an_empty_dir_or_a_claim(tmp_path: Path) -> None:
    config = parse_config(tomllib.loads(RUNTIME))
    data = _volume_of(Path(GATEWAY_DATA_DIR), render(config))
    assert data is not None and data["emptyDir"] == {"sizeLimit": "1Gi"}

    files = render(config, RenderOptions(data_claim="toolmesh-data", profile="dev"))
    data = _volume_of(Path(GATEWAY_DATA_DIR), files)
    assert data == {"name": "data", "persistentVolumeClaim": {"claimName": "toolmesh-data"}}
    # The claim's files belong to the image's group, which the pod's user is in.
    pod = files["deployment-gateway.yaml"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"] == 10001
    objects = kustomize_rendered(files, tmp_path)
    validate(objects)
    (container,) = containers(one(objects, "Deployment", GATEWAY))
    assert {"name": "data", "mountPath": GATEWAY_DATA_DIR} in container["volumeMounts"]


def test_the_router_uses_the_model_built_into_the_image() -> None:
    """A local cache_dir is not in the image; the image's (XDG_CACHE_HOME) holds the built model."""
    config = parse_config(tomllib.loads(RUNTIME + '[router]\ncache_dir = "/home/me/.cache/models"\n'))
    assert "cache_dir" not in tomllib.loads(_text(render(config)))["router"]


def _path_fields(model: type[BaseModel], prefix: str) -> list[str]:
    found = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        arguments = typing.get_args(annotation)
        inner = [a for a in arguments if isinstance(a, type)] if arguments else [annotation]
        for kind in inner:
            if kind is Path:
                found.append(f"{prefix}{name}")
            elif isinstance(kind, type) and issubclass(kind, BaseModel):
                found += _path_fields(kind, f"{prefix}{name}.")
    return found


def test_every_path_in_the_config_has_a_place_in_the_cluster() -> None:
    """A new path setting must say where it goes in the cluster: on the data volume if the
    gateway writes it, in the image if it only reads it (cluster_config.py's tables)."""
    known = {*WRITTEN_PATHS, *READ_PATHS, *DROPPED_PATHS}
    fields = set(_path_fields(MeshConfig, "")) - {"directory"}
    assert fields - known == set(), "add these to WRITTEN_PATHS, READ_PATHS or DROPPED_PATHS"


def test_cli_puts_the_data_volume_on_a_claim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "toolmesh.toml").write_text(RUNTIME)
    config = str(tmp_path / "toolmesh.toml")
    assert (
        main(["deploy", "render", "--config", config, "--data-claim", "gw-data", "-o", str(tmp_path / "k")])
        == 0
    )
    deployment = yaml.safe_load((tmp_path / "k" / "deployment-gateway.yaml").read_text())
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "gw-data"}} in volumes
    capsys.readouterr()
    assert main(["deploy", "render", "--config", config, "--data-claim", "Not A Name"]) == 2
    assert "data claim 'Not A Name' must be a PersistentVolumeClaim's name" in capsys.readouterr().err


def test_oauth_and_the_public_url_reach_the_cluster(tmp_path: Path) -> None:
    settings = (
        '[gateway]\npublic_url = "https://tools.example.com"\n'
        '[oauth]\nissuer = "https://login.example.com"\nscopes = { "tools.read" = ["get_*"] }\n'
    )
    (tmp_path / "toolmesh.toml").write_text(RUNTIME + settings)
    cluster = _cluster(render(load_config(tmp_path / "toolmesh.toml")))
    assert cluster.gateway.public_url == "https://tools.example.com"
    assert cluster.oauth is not None and cluster.oauth.issuer == "https://login.example.com"
    assert cluster.oauth.scopes == {"tools.read": ("get_*",)}


def test_an_openapi_runtime_runs_in_the_gateway_with_its_document_from_the_image() -> None:
    shop = '[[runtimes]]\nname = "shop"\nopenapi = "apis/shop.yaml"\nbase_url = "https://shop.example"\n'
    files = render(parse_config(tomllib.loads(RUNTIME + shop)))
    (runtime,) = [r for r in _cluster(files).runtimes if r.name == "shop"]
    assert runtime.openapi is not None and runtime.openapi.endswith("/apis/shop.yaml")
    assert Path(runtime.openapi).is_absolute() and runtime.base_url == "https://shop.example"
    # Pods (a Deployment, a Service) for the Python runtime only.
    assert not [name for name in files if "shop" in name]
