"""Every code block of the docs site is run or checked, so the docs cannot rot.

How each kind of block is tested (a fence attribute picks among the Python ones):

- ```` ```python ````: a function module. It is imported from a file and its functions are
  described with toolmesh's own registry, as `toolmesh up --module` would.
- ```` ```python {.gateway} ````: a client snippet, run in a fresh interpreter against a real
  `toolmesh up` serving the examples (its addresses swapped in for 127.0.0.1:8080 and :50051).
- ```` ```python {.typecheck} ````: a snippet that needs a live outside service (an LLM, a key): mypy
  checks it against the real packages' types.
- ```` ```toml ````: parsed, then validated by toolmesh's own config loader.
- ```` ```console ````: each `$ toolmesh ...` line parses with the CLI's own parser; each `$ make X`
  names a target of the Makefile.
- ```` ```json ```` (or JSON lines) and ```` ```yaml ````: parsed.
- ```` ```text ````: output shown to the reader; nothing to run.
- `{.no-test}`: a sketch that must not run (a few, counted below).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.gateway.test_up import start_up

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>[\w-]*)(?: *\{(?P<attrs>[^}]*)\})?[^\n]*\n(?P<body>.*?)^(?P=indent)```$",
    re.MULTILINE | re.DOTALL,
)
TESTED = {"python", "toml", "console", "json", "yaml", "text"}
UP = [sys.executable, "-m", "toolmesh", "up"]
#: Plain mypy (not the package's strict config: these are snippets), against the real packages' types.
MYPY = [
    sys.executable,
    "-m",
    "mypy",
    "--config-file",
    "",
    "--python-version",
    "3.11",
    "--follow-imports",
    "silent",
]
#: Blocks marked `{.no-test}`: sketches. Keep them few; each is named in the docs as a sketch.
MOST_UNTESTED = 3


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    attrs: frozenset[str]
    body: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for path in sorted(DOCS.rglob("*.md")):
        text = path.read_text()
        for match in FENCE.finditer(text):
            attrs = frozenset(a.lstrip(".") for a in (match["attrs"] or "").split())
            line = text.count("\n", 0, match.start()) + 1
            body = textwrap.dedent(match["body"])
            found.append(Block(str(path.relative_to(DOCS)), line, match["lang"], attrs, body))
    return found


def module_name(block: Block) -> str:
    return "doc_block_" + re.sub(r"\W", "_", block.id)


def of(lang: str, mode: str | None = None) -> list[Block]:
    chosen = [b for b in blocks() if b.lang == lang and "no-test" not in b.attrs]
    if mode is not None:
        chosen = [b for b in chosen if mode in b.attrs]
    elif lang == "python":
        chosen = [b for b in chosen if not b.attrs & {"gateway", "typecheck"}]
    return chosen


def params(chosen: list[Block]) -> list[object]:
    return [pytest.param(b, id=b.id) for b in chosen]


def test_every_block_is_of_a_tested_kind_and_few_are_left_out() -> None:
    every = blocks()
    assert len(every) > 40
    untested = [b.id for b in every if "no-test" in b.attrs]
    assert len(untested) <= MOST_UNTESTED, untested
    unknown = [b.id for b in every if b.lang not in TESTED and "no-test" not in b.attrs]
    assert not unknown, f"blocks of a language no test reads (mark {{.no-test}} or add a test): {unknown}"
    python = [b for b in every if b.lang == "python" and "no-test" not in b.attrs]
    modes = {"gateway", "typecheck"}
    assert all(len(b.attrs & modes) <= 1 for b in python)


# ---- python: function modules ----


@pytest.mark.parametrize("block", params(of("python")))
def test_a_function_module_block_imports_and_describes(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolmesh.runtimes.functions.registry import Registry

    name = module_name(block)
    (tmp_path / f"{name}.py").write_text(block.body)
    (tmp_path / "README.md").write_text("# a readme for the resource example\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    try:
        registry = Registry.from_modules([name])
    finally:
        sys.modules.pop(name, None)
    assert registry.specs(), f"{block.id} serves no function"


# ---- python: client snippets against a real gateway ----


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, int]]:
    """`toolmesh up` serving the examples (the router off: no model needed), on free ports."""
    work = tmp_path_factory.mktemp("docs-gateway")
    modules = ", ".join(f'"examples.{m}"' for m in ("weather", "arithmetic", "streaming"))
    (work / "toolmesh.toml").write_text(
        f'[[runtimes]]\nname = "examples"\nmodules = [{modules}]\n\n[router]\nenabled = false\n'
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.update(XDG_DATA_HOME=str(work / "data"), XDG_CACHE_HOME=str(work / "cache"))
    process, ready = start_up([*UP, "--config", str(work / "toolmesh.toml")], work, env)
    try:
        yield ready
    finally:
        process.terminate()
        process.communicate(timeout=30)


@pytest.mark.parametrize("block", params(of("python", "gateway")))
def test_a_client_block_runs_against_a_real_gateway(
    block: Block, gateway: dict[str, int], tmp_path: Path
) -> None:
    code = block.body.replace("127.0.0.1:8080", f"127.0.0.1:{gateway['http_port']}")
    code = code.replace("127.0.0.1:50051", f"127.0.0.1:{gateway['grpc_port']}")
    assert code != block.body, f"{block.id} names no gateway address"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


# ---- python: snippets that need an outside service, type-checked ----


@pytest.mark.slow
def test_the_blocks_that_need_a_live_service_type_check(tmp_path: Path) -> None:
    chosen = of("python", "typecheck")
    assert chosen
    files = []
    for block in chosen:
        path = tmp_path / f"{module_name(block)}.py"
        path.write_text(block.body)
        files.append(str(path))
    done = subprocess.run(
        [*MYPY, "--cache-dir", str(ROOT / ".mypy_cache" / "docs"), *files],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# ---- toml, console, json, yaml ----


@pytest.mark.parametrize("block", params(of("toml")))
def test_a_toml_block_is_a_valid_config(block: Block) -> None:
    from toolmesh.config import parse_config

    parse_config(tomllib.loads(block.body), source=block.id)


def split(command: str) -> Iterator[list[str]]:
    """A shell line's simple commands (split at `&&`, `|`, `;`, `&`; redirections dropped)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    argv: list[str] = []
    for token in [*lexer, ";"]:
        if token in {"&&", "||", "|", ";", "&"}:
            if argv:
                yield argv
            argv = []
        elif token[:1] in ("<", ">"):
            argv.append("\0")  # the rest of this command is a redirection
        elif not argv or argv[-1] != "\0":
            argv.append(token)
    return


def commands(block: str) -> Iterator[list[str]]:
    """The `$ ...` lines of a console block, continued lines joined, as argv lists."""
    lines = iter(block.splitlines())
    for line in lines:
        if not line.startswith("$ "):
            continue
        command = line[2:]
        while True:
            if command.endswith("\\"):
                command = command[:-1] + next(lines)
                continue
            try:
                found = list(split(command))
            except ValueError:  # a quoted string that goes on on the next line
                command += "\n" + next(lines)
                continue
            break
        for argv in found:
            yield [a for a in argv if a != "\0"]


MAKE_TARGETS = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.MULTILINE))


@pytest.mark.parametrize("block", params(of("console")))
def test_a_console_blocks_toolmesh_and_make_commands_exist(block: Block) -> None:
    from toolmesh.cli import build_parser

    for argv in commands(block.body):
        if Path(argv[0]).name == "toolmesh":
            try:
                build_parser().parse_args(argv[1:])
            except SystemExit as exc:
                pytest.fail(f"{block.id}: {shlex.join(argv)} does not parse ({exc.code})")
        elif argv[0] == "make":
            assert set(argv[1:]) <= MAKE_TARGETS, f"{block.id}: {shlex.join(argv)}"


@pytest.mark.parametrize("block", params(of("json")))
def test_a_json_block_parses(block: Block) -> None:
    try:
        json.loads(block.body)
    except json.JSONDecodeError:  # JSON lines: one document a line
        for line in block.body.splitlines():
            if line.strip():
                json.loads(line)


@pytest.mark.parametrize("block", params(of("yaml")))
def test_a_yaml_block_parses(block: Block) -> None:
    assert list(yaml.safe_load_all(block.body))
