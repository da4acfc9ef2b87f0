"""Generate the Python code for the toolmesh protos: ``python protos/generate.py``.

The ``.proto`` files under ``protos/toolmesh/v1`` are the source of truth. The
generated ``*_pb2.py``, ``*_pb2.pyi``, ``*_pb2_grpc.py`` and ``*_pb2_grpc.pyi``
files are written next to them and imported as ``toolmesh.v1``. The include path
is ``protos/`` so the generated imports (``from toolmesh.v1 import ...``) match
the installed package and need no rewriting.

``--check`` regenerates into a temporary directory and fails if anything
differs from what is checked in (CI runs it).
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

PROTOS = Path(__file__).resolve().parent
PACKAGE = PROTOS / "toolmesh" / "v1"
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")
INIT = '"""Generated protobuf and gRPC code for toolmesh.v1. Do not edit: see protos/generate.py."""\n'


def generate(out: Path) -> None:
    from grpc_tools import protoc

    scripts = Path(sysconfig.get_path("scripts"))
    sources = sorted(str(p.relative_to(PROTOS)) for p in PACKAGE.glob("*.proto"))
    args = [
        "protoc",
        f"-I{PROTOS}",
        f"-I{Path(protoc.__file__).parent / '_proto'}",
        f"--plugin=protoc-gen-mypy={scripts / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={scripts / 'protoc-gen-mypy_grpc'}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        *sources,
    ]
    if protoc.main(args) != 0:
        sys.exit("protoc failed")
    (out / "toolmesh" / "v1" / "__init__.py").write_text(INIT)


def generated_files(root: Path) -> set[str]:
    package = root / "toolmesh" / "v1"
    names = {p.name for p in package.iterdir() if p.name.endswith(GENERATED_SUFFIXES)}
    return names | {"__init__.py"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the checked-in code is stale")
    check = parser.parse_args().check
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        generate(out)
        fresh = out / "toolmesh" / "v1"
        wanted = generated_files(out)
        if check:
            have = generated_files(PROTOS)
            stale = sorted(
                name
                for name in wanted | have
                if name not in wanted
                or name not in have
                or not filecmp.cmp(fresh / name, PACKAGE / name, shallow=False)
            )
            if stale:
                print("generated code is stale, run `make protos`:", *stale, sep="\n  ")
                return 1
            print("generated code is up to date")
            return 0
        for name in generated_files(PROTOS) - wanted:
            (PACKAGE / name).unlink()
        for name in wanted:
            shutil.copyfile(fresh / name, PACKAGE / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
