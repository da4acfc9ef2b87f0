"""The built wheel installs into a fresh venv and works outside the source tree."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_source_tree(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist, ROOT, cwd=tmp_path)
    (wheel,) = dist.glob("toolmesh-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "toolmesh/runtimes/pod/executor.py" in names and "toolmesh/v1/runtime_pb2.pyi" in names
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

    client = textwrap.dedent(
        """
        import json, subprocess, sys
        import grpc
        from toolmesh.runtimes.pod import wire
        from toolmesh.v1 import invoke_pb2, runtime_pb2_grpc

        pod = subprocess.Popen([sys.argv[1], "runtime", "--module", "my_tools", "--port", "0",
                                "--metrics-port", "-1"], stdout=subprocess.PIPE, text=True)
        port = json.loads(pod.stdout.readline())["grpc_port"]
        stub = runtime_pb2_grpc.RuntimeStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        reply = stub.Invoke(invoke_pb2.InvokeRequest(function="greet", arguments=b'{"name": "wheel"}'))
        pod.terminate()
        print(wire.result_from_proto(reply).text, pod.wait(timeout=10))
        """
    )
    assert run(python, "-c", client, venv / "bin" / "toolmesh", cwd=work, env=env).split() == [
        "hello",
        "wheel",
        "0",
    ]
