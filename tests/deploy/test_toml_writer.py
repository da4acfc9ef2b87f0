"""The TOML writer: what it writes reads back as the same document and the same config."""

from __future__ import annotations

import tomllib

import pytest

from toolmesh.config import KeyConfig, KubeScalerConfig, MeshConfig, RuntimeConfig, parse_config
from toolmesh.deploy.toml_writer import dumps


def test_awkward_values_read_back_exactly() -> None:
    document = {
        "title": 'quotes " and \\ backslashes',
        "gateway": {"host": "0.0.0.0", "port": 8080, "ratio": 0.1, "big": 1e300, "on": True, "off": False},
        "runtimes": [
            {"name": "a", "env": {"A B": "é\x7f\t\n", "C": ""}, "modules": ["x.y", "z"]},
            {"name": "b", "empty": [], "nested": [{"k": 1}], "unset": None},
        ],
        "emoji": "🛰",
        "empty": {},
    }
    text = dumps(document, header="first line\nsecond line")
    assert text.startswith("# first line\n# second line\n")
    del document["runtimes"][1]["unset"]  # type: ignore[index, attr-defined]  # TOML has no null
    assert tomllib.loads(text) == document


def test_unknown_types_are_refused() -> None:
    with pytest.raises(TypeError, match="cannot write object"):
        dumps({"x": object()})


def test_a_config_dump_reads_back_as_the_same_config() -> None:
    config = MeshConfig(
        runtimes=(
            RuntimeConfig(name="k8s", address="dns:///toolmesh-runtime-k8s.tools.svc.cluster.local:50061"),
            RuntimeConfig(name="local", modules=("examples.text",), env={"X": "1"}, timeout=2.5),
        ),
        keys=(KeyConfig(name="ci", key_env="CI_KEY", scopes=("text.*",), rate=2.5, burst=3),),
        kube_scaler=KubeScalerConfig(enabled=True, namespace="tools"),
    )
    text = dumps(config.model_dump(mode="json"))
    assert parse_config(tomllib.loads(text)) == config
