"""A config's modules and catalog are found beside the config file, whatever the gateway's
current directory: real template processes and pods, and the child process that reads the
modules of a runtime someone else runs."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT
from toolmesh.config import ConfigError, RuntimeConfig
from toolmesh.errors import Unavailable
from toolmesh.gateway.pool.runtime_pool import Pool
from toolmesh.protocol.calls import Call

pytestmark = pytest.mark.slow

MODULE = textwrap.dedent(
    '''
    def where_am_i() -> str:
        """The directory this module was loaded from."""
        import os

        return os.path.dirname(os.path.abspath(__file__))
    '''
)


@pytest.fixture
def beside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config directory holding `beside_tools.py`, while the gateway runs in the checkout
    with nothing of it on PYTHONPATH."""
    directory = tmp_path / "project"
    directory.mkdir()
    (directory / "beside_tools.py").write_text(MODULE)
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert not (ROOT / "beside_tools.py").exists() and not (ROOT / "catalog.json").exists()
    return directory


async def test_pods_import_the_modules_beside_the_config(beside: Path) -> None:
    pool = Pool([RuntimeConfig(name="beside", modules=("beside_tools",))], os.environ, directory=beside)
    await pool.start()
    try:
        specs, _ = await pool.list_functions("beside")
        assert [spec.name for spec in specs] == ["where_am_i"]
        result = await pool.invoke("beside", Call("where_am_i", b"{}"), timeout=20)
        assert not result.is_error and result.text == str(beside)
    finally:
        await pool.close()


async def test_without_the_directory_the_modules_are_not_found(beside: Path) -> None:
    pool = Pool([RuntimeConfig(name="beside", modules=("beside_tools",))], os.environ)
    with pytest.raises(Unavailable, match=r"failed to load its modules: module .beside_tools. not found"):
        await pool.start()


async def test_a_remote_runtime_reads_its_modules_and_catalog_beside_the_config(beside: Path) -> None:
    catalog = {"functions": [{"name": "listed", "description": "From the catalog file."}]}
    (beside / "catalog.json").write_text(json.dumps(catalog))
    runtimes = [
        # Nothing listens at these addresses: the functions come from the modules and the file.
        RuntimeConfig(name="modules", address="127.0.0.1:9", modules=("beside_tools",)),
        RuntimeConfig(name="catalog", address="127.0.0.1:9", catalog="catalog.json"),
    ]
    pool = Pool(runtimes, os.environ, directory=beside)
    await pool.start()
    try:
        assert [s.name for s in (await pool.list_functions("modules"))[0]] == ["where_am_i"]
        assert [s.name for s in (await pool.list_functions("catalog"))[0]] == ["listed"]
    finally:
        await pool.close()
    # The same catalog path without the config's directory is looked for in the checkout.
    with pytest.raises(ConfigError, match=r"catalog file catalog\.json"):
        await Pool(runtimes[1:], os.environ).start()
