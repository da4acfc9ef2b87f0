"""Building and validating manifests the way CI must: `kubectl kustomize`, then
`kubernetes-validate --strict` for Kubernetes 1.30 and the newest it knows, and the
KEDA / Prometheus Operator objects against their CRDs' schemas (tests/deploy/data).

Without kubectl or kubernetes-validate these tests skip, or fail under
TOOLMESH_REQUIRE_E2E=1 (kubectl comes with the machine image; the dev extra brings
kubernetes-validate).
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests.conftest import ROOT, missing, require_tool
from toolmesh.deploy.render import write

Manifest = dict[str, Any]

DEPLOY = ROOT / "deploy"
DATA = Path(__file__).resolve().parent / "data"
#: The oldest Kubernetes the manifests support, and the newest kubernetes-validate knows.
OLDEST_KUBERNETES = "1.30.0"
CRD_FILES = {
    "ScaledObject": "keda.sh_scaledobjects.yaml",
    "PodMonitor": "monitoring.coreos.com_podmonitors.yaml",
    "ServiceMonitor": "monitoring.coreos.com_servicemonitors.yaml",
}


def kustomize(directory: Path) -> list[Manifest]:
    """`kubectl kustomize directory`, as objects."""
    kubectl = require_tool("kubectl", "Debian package kubectl; .ci/run installs it")
    done = subprocess.run(
        [kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"kubectl kustomize {directory} failed:\n{done.stderr}"
    return [document for document in yaml.safe_load_all(done.stdout) if document]


def kustomize_with(tmp: Path, resources: Sequence[Path], components: Sequence[Path] = ()) -> list[Manifest]:
    """Build a kustomization made of other kustomizations (kustomize wants relative paths)."""
    relative = functools.partial(os.path.relpath, start=tmp)
    document = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [relative(path) for path in resources],
        "components": [relative(path) for path in components],
    }
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "kustomization.yaml").write_text(yaml.safe_dump(document))
    return kustomize(tmp)


def kustomize_rendered(files: dict[str, Manifest], directory: Path) -> list[Manifest]:
    """What `toolmesh deploy render --output directory` writes, built by kubectl."""
    write(files, directory)
    return kustomize(directory)


def _strict(schema: Any) -> Any:
    """A CRD schema as the API server's strict field validation applies it: no unknown fields
    where the schema lists properties (unless it preserves unknown fields)."""
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    strict = {key: _strict(value) for key, value in schema.items()}
    if (
        isinstance(schema.get("properties"), dict)
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        strict["additionalProperties"] = False
    return strict


@functools.cache
def crd_validator(kind: str, api_version: str) -> jsonschema.protocols.Validator:
    crd = yaml.safe_load((DATA / CRD_FILES[kind]).read_text())
    group, _, version = api_version.partition("/")
    assert crd["spec"]["group"] == group, f"{kind}: the CRD is for {crd['spec']['group']}, not {group}"
    (schema,) = [v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == version]
    validator: jsonschema.protocols.Validator = jsonschema.Draft7Validator(_strict(schema))
    return validator


def _kubernetes_validate() -> Any:
    try:
        import kubernetes_validate  # type: ignore[import-untyped]
    except ImportError:
        missing("kubernetes-validate is not installed (pip install -e '.[dev]')")
    return kubernetes_validate


def validate(objects: Iterable[Manifest]) -> None:
    """Every object valid: built-in kinds with kubernetes-validate --strict, CRD kinds
    against their schema. Unknown kinds fail: nothing goes unchecked."""
    kv = _kubernetes_validate()
    versions = (OLDEST_KUBERNETES, kv.utils.latest_version())
    for manifest in objects:
        name = f"{manifest['kind']}/{manifest['metadata']['name']}"
        if manifest["kind"] in CRD_FILES:
            errors = list(crd_validator(manifest["kind"], manifest["apiVersion"]).iter_errors(manifest))
            problems = "; ".join(f"{'.'.join(map(str, e.path))}: {e.message}" for e in errors)
            assert not errors, f"{name} breaks its CRD schema: {problems}"
            continue
        for version in versions:
            try:
                kv.validate(manifest, version, strict=True)
            except kv.utils.ValidationError as exc:
                where = ".".join(str(part) for part in exc.path)
                raise AssertionError(
                    f"{name} is invalid for Kubernetes {version}: {where}: {exc.message}"
                ) from None
            except kv.utils.SchemaNotFoundError as exc:
                raise AssertionError(f"{name}: {exc.message}") from None


def of_kind(objects: Iterable[Manifest], kind: str) -> list[Manifest]:
    return [manifest for manifest in objects if manifest["kind"] == kind]


def one(objects: Iterable[Manifest], kind: str, name: str) -> Manifest:
    (found,) = [m for m in objects if m["kind"] == kind and m["metadata"]["name"] == name]
    return found


def containers(deployment: Manifest) -> Iterator[dict[str, Any]]:
    yield from deployment["spec"]["template"]["spec"]["containers"]
