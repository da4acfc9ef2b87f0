"""The package's layers, one line from the bottom up:

    toolmesh/ (errors, directories), logs, metrics, tracing < runtimes/functions (the SDK) <
    protocol (the gateway<->pod contract) < runtimes/pod, runtimes/mcp < config < router (embedding
    < search < safety, extraction < router) < gateway/state, identity < idempotency < core < jobs,
    openai < triggers < front doors (http/guards < http/lean, openapi < http; grpc; mcp) and sources
    (base < openapi, remote_mcp, grpc_reflection < sources), reload < pool < gateway (server), listing
    < toolmesh/commands < toolmesh/cli; the client SDK stands on the contract alone

Each folder is a node of its own (a parent and its subfolder are two: a parent sits above its
subfolders), and so are the public face (toolmesh/__init__.py) and the CLI (toolmesh/cli.py,
__main__.py). An import counts wherever it is, at module level or inside a function; only those
under `if TYPE_CHECKING:` do not, since they never run. The walker below is the same rule as
../shared/tools/layers.py, in a few lines of `ast`.

Also here: what holds for every folder (no folder needs scrolling, no module is long, names say
which one they are). The core's own rule (no transport) is tests/gateway/core/test_layering.py;
the pods' (no gateway side) is tests/runtimes/test_layering.py.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

#: The folders the package is made of (toolmesh/ links the others in).
PACKAGE_FOLDERS = ("gateway", "runtimes", "router", "client", "deploy", "toolmesh")
PUBLIC_FACE = "toolmesh(api)"
CLI = "toolmesh(cli)"
#: Who may import the pod's own modules from outside runtimes/: the pool, which launches pods,
#: and the CLI, which runs one (`toolmesh runtime`).
POD = "toolmesh.runtimes.pod"
POD_IMPORTERS = ("gateway/pool", CLI)


@dataclass(frozen=True)
class Import:
    """One import a module makes: the name as written, the node it reaches, and the module."""

    module: str
    name: str
    target: str


def _package_files() -> Iterator[Path]:
    for folder in PACKAGE_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if any(part in ("v1", "__pycache__", "node_modules") for part in relative.parts):
                continue
            if path.name.endswith(("_pb2.py", "_pb2_grpc.py")) or _through_link(path):
                continue
            yield path


def _through_link(path: Path) -> bool:
    """toolmesh/gateway/... is gateway/... again, reached through toolmesh/'s link."""
    return any((ROOT / parent).is_symlink() for parent in path.relative_to(ROOT).parents)


def node_of_file(path: Path) -> str:
    """A module's node: its folder, except the public face and the CLI, which stand apart."""
    relative = path.resolve().relative_to(ROOT)
    if relative == Path("toolmesh/__init__.py"):
        return PUBLIC_FACE
    if relative in (Path("toolmesh/cli.py"), Path("toolmesh/__main__.py")):
        return CLI
    return relative.parent.as_posix()


def _source_of(module: str) -> Path | None:
    """The file of `toolmesh.a.b` (a module or a package's __init__), or None."""
    parts = module.split(".")
    if parts[0] != "toolmesh":
        return None
    base = ROOT.joinpath("toolmesh", *parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate.resolve()
    return None


def node_of_module(module: str) -> str | None:
    """The node an imported name reaches; None outside the package (and for protos/, generated
    code below everything)."""
    if module == "toolmesh.v1" or module.startswith("toolmesh.v1."):
        return None
    while module.startswith("toolmesh"):
        source = _source_of(module)
        if source is not None:
            return node_of_file(source)
        module = module.rpartition(".")[0]  # a name defined in a module: the module's node
    return None


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under `if TYPE_CHECKING:` (its body: an else branch runs)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(sub) for stmt in node.body for sub in ast.walk(stmt))
    return skipped


def _absolute(node: ast.ImportFrom, path: Path) -> str | None:
    if node.level == 0:
        return node.module
    package = path.resolve().parent
    for _ in range(node.level - 1):
        package = package.parent
    parts = ["toolmesh", *package.relative_to(ROOT).parts]
    if parts[1:2] == ["toolmesh"]:  # toolmesh/'s own modules are toolmesh.x, not toolmesh.toolmesh.x
        parts = parts[1:]
    return ".".join([*parts, node.module] if node.module else parts)


def imports_of(path: Path) -> Iterator[tuple[str, bool]]:
    """(imported name, whether it is the public face by name) for each import that runs."""
    tree = ast.parse(path.read_text(), str(path))
    skipped = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, alias.name == "toolmesh"
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, path)
            if module is None:
                continue
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                if _source_of(submodule) is not None:
                    yield submodule, False
                else:
                    yield module, module == "toolmesh"


def package_imports() -> list[Import]:
    found = []
    for path in _package_files():
        module = path.relative_to(ROOT).as_posix()
        for name, _ in imports_of(path):
            target = node_of_module(name)
            if target is not None:
                found.append(Import(module, name, target))
    return found


def folder_graph(found: list[Import]) -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """Node -> the nodes it imports, and for each edge one import that makes it."""
    graph: dict[str, set[str]] = defaultdict(set)
    why: dict[tuple[str, str], str] = {}
    for each in found:
        source = node_of_file(ROOT / each.module)
        if each.target != source:
            graph[source].add(each.target)
            why.setdefault((source, each.target), f"{each.module} imports {each.name}")
    return graph, why


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_no_folder_imports_another_that_imports_it_back() -> None:
    graph, why = folder_graph(package_imports())
    assert "gateway/core" in graph and "router" in graph  # the walker sees the package
    report = []
    for group in cycles(graph):
        report.append("cycle: " + " <-> ".join(group))
        report += [f"    {a} -> {b}: {why[a, b]}" for a in group for b in sorted(graph[a]) if b in group]
    assert not report, "folders import each other in a cycle:\n" + "\n".join(report)


def test_no_internal_module_imports_the_public_face() -> None:
    # `toolmesh/__init__.py` re-exports from the internals; one that imports it back makes the
    # face a layer below itself (and loads everything the face loads).
    offending = sorted(
        {
            f"{path.relative_to(ROOT)}: {name}"
            for path in _package_files()
            if node_of_file(path) != PUBLIC_FACE
            for name, face in imports_of(path)
            if face
        }
    )
    assert not offending, "these import `toolmesh` itself rather than the module they need:\n" + "\n".join(
        offending
    )


def test_only_the_pool_and_the_cli_reach_into_the_pod() -> None:
    # The gateway and the pod share a contract; what the pod keeps in runtimes/pod/ is its own.
    offending = sorted(
        {
            f"{each.module}: {each.name}"
            for each in package_imports()
            if (each.name == POD or each.name.startswith(POD + "."))
            and not each.module.startswith("runtimes/")
            and not any(node_of_file(ROOT / each.module).startswith(n) for n in POD_IMPORTERS)
        }
    )
    assert not offending, (
        "outside runtimes/, only gateway/pool and the CLI import runtimes.pod:\n" + "\n".join(offending)
    )


def test_the_client_sdk_and_the_contract_stand_on_their_own() -> None:
    # A program that only calls a gateway needs no gateway code; the contract needs neither side.
    apart = {
        "client": ("gateway/", "runtimes/pod", "router"),
        "toolmesh/protocol": ("gateway/", "runtimes/pod", "router"),
    }
    offending = sorted(
        f"{each.module}: {each.name}"
        for each in package_imports()
        for folder, banned in apart.items()
        if node_of_file(ROOT / each.module) == folder
        and (node := node_of_module(each.name)) is not None
        and any(node == b.rstrip("/") or node.startswith(b) for b in banned)
    )
    assert not offending, "the client SDK or the contract imports a side:\n" + "\n".join(offending)


def test_the_walker_reads_folders_as_nodes() -> None:
    # A parent and its subfolder are two nodes; a name defined in a module reaches its folder.
    assert node_of_module("toolmesh.gateway.sources.openapi") == "gateway/sources/openapi"
    assert node_of_module("toolmesh.gateway.sources.factory") == "gateway/sources"
    assert node_of_module("toolmesh.gateway.core.mesh.Mesh") == "gateway/core"
    assert node_of_module("toolmesh.errors") == "toolmesh"
    assert node_of_module("toolmesh") == PUBLIC_FACE
    assert node_of_module("toolmesh.cli") == CLI
    assert node_of_module("toolmesh.v1.invoke_pb2") is None
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_folder_needs_scrolling_and_no_module_is_long() -> None:
    # Smoke alarms, not the architecture: the layout follows concepts.
    for package in (ROOT / name for name in PACKAGE_FOLDERS):
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
    return [p for p in _package_files() if p.name != "__init__.py"]


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
