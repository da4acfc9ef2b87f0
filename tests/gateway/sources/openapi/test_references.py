"""`$ref`s to other files: by relative path or URL, YAML or JSON, recursive across files, limited."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.gateway.conftest import StartGateway
from tests.gateway.sources.openapi.shop import DOCUMENT, serve_shop
from tests.gateway.sources.openapi.shop_forms import FILES
from tests.gateway.sources.openapi.test_openapi_runtime import invoke, listing
from toolmesh.config import RuntimeConfig
from toolmesh.gateway.sources.openapi import references
from toolmesh.gateway.sources.openapi.document import read_document
from toolmesh.gateway.sources.openapi.operations import read_operations
from toolmesh.gateway.sources.openapi.schemas import DocumentError


@pytest.fixture(scope="module")
def shop_url() -> Iterator[str]:
    with serve_shop() as url:
        yield url


def write(path: Path, content: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content) if path.suffix == ".json" else yaml.safe_dump(content))
    return path


def split_shop(folder: Path) -> Path:
    """The shop's document with its schemas and a parameter in other files, in other folders."""
    schemas = DOCUMENT["components"]["schemas"]
    pets = {
        "NewPet": {
            **schemas["NewPet"],
            "properties": {
                **schemas["NewPet"]["properties"],
                # Back into the document that referred here.
                "kind": {"$ref": "../shop.yaml#/components/schemas/Kind"},
            },
        },
        "Pet": {
            "allOf": [{"$ref": "#/NewPet"}, {"type": "object", "properties": {"id": {"type": "integer"}}}]
        },
    }
    write(folder / "schemas" / "pets.yaml", pets)
    # A recursive schema, the whole file, referring to itself through another file.
    category = {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "children.yaml#/Children"}},
        },
    }
    write(folder / "schemas" / "category.json", category)
    write(folder / "schemas" / "children.yaml", {"Children": {"$ref": "category.json"}})
    write(folder / "common" / "parameters.yaml", {"PetId": DOCUMENT["components"]["parameters"]["PetId"]})
    text = json.dumps(DOCUMENT)
    text = text.replace('"#/components/schemas/NewPet"', '"schemas/pets.yaml#/NewPet"')
    text = text.replace('"#/components/schemas/Pet"', '"schemas/pets.yaml#/Pet"')
    text = text.replace('"#/components/schemas/Category"', '"./schemas/category.json"')
    text = text.replace('"#/components/parameters/PetId"', '"common/parameters.yaml#/PetId"')
    document = json.loads(text)
    document["components"] = {**document["components"], "schemas": {"Kind": schemas["Kind"]}}
    del document["components"]["parameters"]
    return write(folder / "shop.yaml", document)


async def test_files_referred_to_by_path_are_read_and_their_schemas_named(
    gateway_factory: StartGateway, tmp_path: Path, shop_url: str
) -> None:
    path = split_shop(tmp_path)
    gateway = await gateway_factory(
        RuntimeConfig(name="shop", openapi=str(path), base_url=shop_url, exclude=("admin",))
    )
    functions = await listing(gateway.url)
    create = functions["shop.create_pet"]["parameters"]
    assert set(create["properties"]) == {"name", "kind", "nickname"}
    assert create["properties"]["kind"] == {"$ref": "#/$defs/Kind"}
    assert create["$defs"] == {"Kind": {"type": "string", "enum": ["cat", "dog"]}}
    assert functions["shop.getPet"]["parameters"]["required"] == ["petId"]
    output = functions["shop.getPet"]["output_schema"]
    assert output["$ref"] == "#/$defs/Pet" and output["$defs"]["Pet"]["allOf"][0] == {
        "$ref": "#/$defs/NewPet"
    }
    # Recursion across two files is written once, as a local one is.
    tree_name = next(name for name in functions if name.startswith("shop.getTheWhole"))
    tree = functions[tree_name]["output_schema"]
    assert tree["$ref"] == "#/$defs/category"
    assert tree["$defs"]["category"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Children"}
    assert tree["$defs"]["Children"] == {"$ref": "#/$defs/category"}
    created = (await invoke(gateway.url, "shop.create_pet", {"name": "Tom", "kind": "cat"})).json()
    assert created["structured"]["name"] == "Tom"


async def test_a_missing_file_or_pointer_names_the_runtime_the_ref_and_the_cause(
    gateway_factory: StartGateway, tmp_path: Path, shop_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    good = split_shop(tmp_path / "good")
    missing = split_shop(tmp_path / "missing")
    (tmp_path / "missing" / "schemas" / "pets.yaml").unlink()
    pointer = split_shop(tmp_path / "pointer")
    write(tmp_path / "pointer" / "common" / "parameters.yaml", {"Other": {}})
    gateway = await gateway_factory(
        RuntimeConfig(name="good", openapi=str(good), base_url=shop_url),
        RuntimeConfig(name="missing", openapi=str(missing), base_url=shop_url),
        RuntimeConfig(name="pointer", openapi=str(pointer), base_url=shop_url),
    )
    assert (
        "runtime 'missing': OpenAPI document " in caplog.text
        and "$ref 'schemas/pets.yaml#/NewPet': cannot read " in caplog.text
        and "No such file or directory" in caplog.text
    )
    assert "runtime 'pointer'" in caplog.text
    assert "$ref 'common/parameters.yaml#/PetId' points at nothing in its file" in caplog.text
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        ready = (await http.get("/readyz")).json()["runtimes"]
    assert ready == {"good": True, "missing": False, "pointer": False}
    assert (await invoke(gateway.url, "good.getPet", {"petId": 1})).json()["structured"]["name"] == "Rex"


#: The schema of the property `name` of parts/pet.yaml: a schema of another file, so named.
NAME = {"name": {"$ref": "#/$defs/Name"}}


def url_document(ref: str) -> str:
    parts = {
        "Pet": {"type": "object", "properties": {"name": {"$ref": "#/Name"}}},
        "Name": {"type": "string"},
    }
    FILES["parts/pet.yaml"] = yaml.safe_dump(parts)
    body = {"content": {"application/json": {"schema": {"$ref": ref}}}}
    return yaml.safe_dump(
        {
            "openapi": "3.1.0",
            "paths": {"/forms/pet": {"post": {"operationId": "add", "requestBody": body, "responses": {}}}},
        }
    )


async def test_a_url_documents_refs_reach_its_own_origin_and_those_configured(shop_url: str) -> None:
    root = shop_url.removesuffix("/api")
    FILES["docs/relative.yaml"] = url_document("../parts/pet.yaml#/Pet")
    document = await read_document(f"{root}/files/docs/relative.yaml", None, 5)
    schema = read_operations(document, "ns")[0].spec.input_schema
    assert schema["properties"] == NAME
    # The same server under another name is another origin: not fetched unless configured.
    other = root.replace("127.0.0.1", "localhost")
    FILES["docs/other.yaml"] = url_document(f"{other}/files/parts/pet.yaml#/Pet")
    with pytest.raises(DocumentError, match=r"is not from the document's origin .*`ref_origins`"):
        await read_document(f"{root}/files/docs/other.yaml", None, 5)
    document = await read_document(f"{root}/files/docs/other.yaml", None, 5, [other])
    assert read_operations(document, "ns")[0].spec.input_schema["properties"] == NAME
    # A document from the network never reads the gateway's files.
    FILES["docs/local.yaml"] = url_document("file:///etc/hostname")
    with pytest.raises(DocumentError, match="a document read from a URL reads no local files"):
        await read_document(f"{root}/files/docs/local.yaml", None, 5)
    FILES["docs/gone.yaml"] = url_document("missing.yaml#/Pet")
    with pytest.raises(
        DocumentError, match=r"\$ref 'missing.yaml#/Pet': fetching .*/missing.yaml answered 404"
    ):
        await read_document(f"{root}/files/docs/gone.yaml", None, 5)


async def test_a_file_document_fetches_urls_only_from_configured_origins(
    tmp_path: Path, shop_url: str
) -> None:
    root = shop_url.removesuffix("/api")
    path = tmp_path / "doc.yaml"
    path.write_text(url_document(f"{root}/files/parts/pet.yaml#/Pet"))
    with pytest.raises(DocumentError, match="is not from the document's origin"):
        await read_document(str(path), None, 5)
    document = await read_document(str(path), None, 5, [root])
    assert read_operations(document, "ns")[0].spec.input_schema["properties"] == NAME


async def test_how_many_files_and_bytes_a_document_pulls_is_limited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(3):
        write(tmp_path / f"f{n}.yaml", {"S": {"$ref": f"f{n + 1}.yaml#/S"} if n < 2 else {"type": "string"}})
    path = tmp_path / "doc.yaml"
    path.write_text(url_document("f0.yaml#/S"))
    assert "x-toolmesh-external" in await read_document(str(path), None, 5)
    monkeypatch.setattr(references, "MAX_REF_FILES", 2)
    with pytest.raises(DocumentError, match=r"\$ref 'f2.yaml#/S': the document refers to more than 2 files"):
        await read_document(str(path), None, 5)
    monkeypatch.setattr(references, "MAX_REF_FILES", 64)
    monkeypatch.setattr(references, "MAX_REF_BYTES", 30)
    with pytest.raises(DocumentError, match="the files the document refers to hold more than 30 bytes"):
        await read_document(str(path), None, 5)


async def test_references_that_only_refer_to_each_other_are_an_error(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", {"P": {"$ref": "b.yaml#/P"}})
    write(tmp_path / "b.yaml", {"P": {"$ref": "a.yaml#/P"}})
    operation = {"parameters": [{"$ref": "a.yaml#/P"}], "responses": {}}
    path = write(tmp_path / "doc.yaml", {"openapi": "3.0.0", "paths": {"/x": {"get": operation}}})
    document = await read_document(str(path), None, 5)
    with pytest.raises(DocumentError, match="refers to itself"):
        read_operations(document, "ns")


def test_ref_origins_are_http_origins_and_go_with_an_openapi_document() -> None:
    with pytest.raises(ValueError, match="`ref_origins` goes with `openapi`"):
        RuntimeConfig(name="x", mcp_url="http://127.0.0.1:1/mcp", ref_origins=("https://a.example",))
    with pytest.raises(ValueError, match="must be an http:// or https:// origin"):
        RuntimeConfig(name="x", openapi="doc.yaml", ref_origins=("file:///etc",))
