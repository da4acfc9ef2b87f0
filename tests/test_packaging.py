"""The built wheel installs into a fresh venv and works outside the source tree, and without
extras it is the slim install: small, no gateway or router dependencies, still enough to write,
serve and call functions."""

from __future__ import annotations

import contextlib
import json
import os
import site
import subprocess
import sys
import textwrap
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, user_dirs


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package's wheel, built once for this module's tests."""
    dist = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist, ROOT, cwd=dist)
    (built,) = dist.glob("toolmesh-*.whl")
    return built


#: Starts `toolmesh runtime` (argv[1]) for my_tools and calls its greet(argv[2]) on the pod's
#: own `Runtime` service.
POD_CLIENT = """
import json, subprocess, sys
import grpc
from toolmesh.protocol import wire
from toolmesh.v1 import invoke_pb2, runtime_pb2_grpc

pod = subprocess.Popen([sys.argv[1], "runtime", "--module", "my_tools", "--port", "0",
                        "--metrics-port", "-1"], stdout=subprocess.PIPE, text=True)
port = json.loads(pod.stdout.readline())["grpc_port"]
stub = runtime_pb2_grpc.RuntimeStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
arguments = json.dumps({"name": sys.argv[2]}).encode()
reply = stub.Invoke(invoke_pb2.InvokeRequest(function="greet", arguments=arguments))
pod.terminate()
print(wire.result_from_proto(reply).text, pod.wait(timeout=10))
"""


@contextlib.contextmanager
def serving_my_tools(toolmesh: list[str | Path], cwd: Path, env: dict[str, str]) -> Iterator[dict[str, Any]]:
    """`toolmesh up -m my_tools` on free ports; yields its ready line."""
    command = [*toolmesh, "up", "-m", "my_tools", "--http-port", "0", "--grpc-port", "0"]
    gateway = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=cwd, env=env
    )
    try:
        assert gateway.stdout is not None
        yield json.loads(gateway.stdout.readline())
    finally:
        gateway.terminate()
        gateway.communicate(timeout=30)


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_source_tree(
    tmp_path: Path, wheel: Path, router_cache: Path
) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "toolmesh/runtimes/pod/executor.py" in names and "toolmesh/v1/runtime_pb2.pyi" in names
    # The web console's files are package data: /ui works from the wheel.
    console = "toolmesh/gateway/http/console/static/"
    assert {console + "index.html", console + "main.js", console + "console.css"} <= set(names)
    assert not any(
        name.startswith(("toolmesh/tests", "toolmesh/examples", "toolmesh/bench")) for name in names
    )

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    # Dependencies come from this test environment (no network needed): a .pth
    # line adds its site-packages without processing its own .pth files, so the
    # editable toolmesh there stays invisible.
    purelib = run(
        python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path
    ).strip()
    (Path(purelib) / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    run(python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", wheel, cwd=tmp_path)

    work = tmp_path / "work"
    work.mkdir()
    (work / "my_tools.py").write_text(
        textwrap.dedent(
            """
            import toolmesh

            @toolmesh.function(read_only=True)
            def greet(name: str) -> str:
                \"\"\"Say hello.\"\"\"
                return f"hello {name}"
            """
        )
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    located = run(python, "-c", "import toolmesh; print(toolmesh.__file__)", cwd=work, env=env)
    assert str(ROOT) not in located and "site-packages" in located
    listing = json.loads(
        run(venv / "bin" / "toolmesh", "functions", "--module", "my_tools", cwd=work, env=env)
    )
    assert listing["functions"][0]["name"] == "greet"
    # The manifest templates ship as package data: `deploy render` works from the wheel.
    (work / "toolmesh.toml").write_text('[[runtimes]]\nname = "mine"\nmodules = ["my_tools"]\n')
    manifests = run(
        venv / "bin" / "toolmesh", "deploy", "render", "--config", "toolmesh.toml", cwd=work, env=env
    )
    assert "name: toolmesh-runtime-mine" in manifests and "--module=my_tools" in manifests

    pod = run(python, "-c", POD_CLIENT, venv / "bin" / "toolmesh", "wheel", cwd=work, env=env)
    assert pod.split() == ["hello", "wheel", "0"]

    # With the mesh's dependencies, `toolmesh up --module` serves the module...
    with serving_my_tools(
        [venv / "bin" / "toolmesh"], work, {**env, **user_dirs(tmp_path, router_cache)}
    ) as ready:
        request = urllib.request.Request(
            f"http://127.0.0.1:{ready['http_port']}/v1/functions/greet/invoke",
            data=b'{"name": "up"}',
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=20) as response:
            assert json.loads(response.read())["content"] == [{"type": "text", "text": "hello up"}]
        with urllib.request.urlopen(f"http://127.0.0.1:{ready['http_port']}/ui/", timeout=20) as response:
            assert b'<script type="module" src="main.js">' in response.read()
    # ... and with nothing to serve (no module, no toolmesh.toml, no checkout's examples/) says so.
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run(
        [venv / "bin" / "toolmesh", "up"], cwd=empty, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stderr.startswith("toolmesh up: nothing to serve: give --module")


#: The slim install's budget for site-packages (the package and its dependencies, byte code included).
SLIM_LIMIT_MB = 60
#: Distributions only the mesh extra may bring.
MESH_ONLY = ("onnxruntime", "onnx", "numpy", "tokenizers", "starlette", "uvicorn", "mcp")

SLIM_CLIENT = """
import asyncio, sys
import toolmesh

print(toolmesh.Client(sys.argv[1]).invoke("greet", {"name": "http"}).text)

async def main():
    async with toolmesh.GrpcClient(sys.argv[2]) as mesh:
        print((await mesh.invoke("greet", {"name": "grpc"})).text)

asyncio.run(main())
heavy = ("starlette", "uvicorn", "mcp", "numpy", "onnxruntime", "tokenizers", "yaml")
print(sorted(name for name in sys.modules if name.split(".")[0] in heavy))
"""


@pytest.mark.slow
def test_the_slim_install_is_small_and_serves_and_calls_functions(
    tmp_path: Path, wheel: Path, router_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A real install from the package index (pip's cache makes it quick), without extras. The venv
    # has no pip of its own (pip is not toolmesh's): this test's pip installs into it.
    venv = tmp_path / "slim"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python, toolmesh = venv / "bin" / "python", venv / "bin" / "toolmesh"
    run(sys.executable, "-m", "pip", "--python", python, "install", "-q", wheel, cwd=tmp_path)

    purelib = Path(
        run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path).strip()
    )
    size = run("du", "-sh", purelib, cwd=tmp_path).split()[0]
    kib = int(run("du", "-sk", purelib, cwd=tmp_path).split()[0])
    with capsys.disabled():
        print(f"\nslim install: du -sh site-packages = {size} ({kib / 1024:.1f} MiB)")
    assert kib / 1024 <= SLIM_LIMIT_MB, f"the slim install takes {size}, over {SLIM_LIMIT_MB} MB"
    installed = run(
        python,
        "-c",
        "import importlib.metadata as m; print(*(d.metadata['Name'].lower() for d in m.distributions()))",
        cwd=tmp_path,
    ).split()
    assert "toolmesh" in installed and not set(MESH_ONLY) & set(installed)

    work = tmp_path / "work"
    work.mkdir()
    (work / "my_tools.py").write_text(
        'def greet(name: str) -> str:\n    """Say hello."""\n    return f"hello {name}"\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    listing = json.loads(run(toolmesh, "functions", "--module", "my_tools", cwd=work, env=env))
    assert [f["name"] for f in listing["functions"]] == ["greet"]
    assert run(python, "-c", POD_CLIENT, toolmesh, "pod", cwd=work, env=env).split() == ["hello", "pod", "0"]
    assert run(toolmesh, "hash-key", "k", cwd=work, env=env).startswith("sha256:")

    # The commands of the mesh say what they need, in one line.
    for command, prog in (
        (["up", "--module", "my_tools"], "toolmesh up"),
        (["router", "build"], "toolmesh router build"),
        (["deploy", "render"], "toolmesh deploy render"),
    ):
        done = subprocess.run(
            [toolmesh, *command], cwd=work, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        (line,) = done.stderr.splitlines()
        assert line.startswith(f"{prog}: needs the mesh extra (")
        assert line.endswith("not installed): pip install 'toolmesh[mesh]'")

    # The slim clients call a gateway (run by this test's own, full install) over HTTP and gRPC.
    full = [sys.executable, "-m", "toolmesh"]
    with serving_my_tools(full, work, {**env, **user_dirs(tmp_path, router_cache)}) as ready:
        url, address = f"http://127.0.0.1:{ready['http_port']}", f"127.0.0.1:{ready['grpc_port']}"
        invoked = json.loads(
            run(toolmesh, "invoke", "greet", "--args", '{"name": "cli"}', "--url", url, cwd=work, env=env)
        )
        assert invoked["content"] == [{"type": "text", "text": "hello cli"}]
        assert run(python, "-c", SLIM_CLIENT, url, address, cwd=work, env=env).splitlines() == [
            "hello http",
            "hello grpc",
            "[]",
        ]
