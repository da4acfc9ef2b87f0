"""Forms, multipart uploads, text bodies, cookie and header parameters, against the real shop."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.conftest import StartGateway
from tests.gateway.sources.openapi.shop import serve_shop
from tests.gateway.sources.openapi.shop_forms import FORMS_DOCUMENT
from tests.gateway.sources.openapi.test_openapi_runtime import invoke, listing
from toolmesh.config import RuntimeConfig
from toolmesh.gateway.server import Gateway

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


@pytest.fixture(scope="module")
def shop_url() -> Iterator[str]:
    with serve_shop() as url:
        yield url


@pytest.fixture
async def gateway(gateway_factory: StartGateway, tmp_path: Path, shop_url: str) -> Gateway:
    path = tmp_path / "forms.json"
    path.write_text(json.dumps(FORMS_DOCUMENT))
    config = RuntimeConfig(name="forms", openapi=str(path), base_url=shop_url, headers={"X-Api-Key": "k1"})
    return await gateway_factory(config)


async def structured(gateway: Gateway, name: str, arguments: dict[str, Any]) -> Any:
    answer = (await invoke(gateway.url, name, arguments)).json()
    assert answer["is_error"] is False, answer
    return answer["structured"]


async def test_a_urlencoded_form_takes_its_fields_as_arguments(gateway: Gateway) -> None:
    schema = (await listing(gateway.url))["forms.login"]["parameters"]
    assert set(schema["properties"]) == {"user", "remember", "scopes"} and schema["required"] == ["user"]
    got = await structured(gateway, "forms.login", {"user": "ann", "remember": True, "scopes": ["a", "b c"]})
    assert got == {
        "content_type": "application/x-www-form-urlencoded",
        "fields": {"user": ["ann"], "remember": ["true"], "scopes": ["a", "b c"]},
    }


async def test_a_multipart_upload_takes_files_in_base64(gateway: Gateway) -> None:
    schema = (await listing(gateway.url))["forms.upload"]["parameters"]
    assert schema["properties"]["photo"] == {
        "type": "string",
        "contentEncoding": "base64",
        "description": "The photo. (base64)",
    }
    assert schema["properties"]["extra"]["items"]["contentEncoding"] == "base64"
    arguments = {
        "title": "Rex",
        "photo": base64.b64encode(PNG).decode(),
        "extra": [base64.b64encode(b"a,b\n").decode(), base64.b64encode(b"c,d\n").decode()],
        "meta": {"taken": 2024},
    }
    got = await structured(gateway, "forms.upload", arguments)
    assert got["content_type"] == "multipart/form-data"
    fields = got["fields"]
    assert fields["title"] == ["Rex"]
    # The bytes arrive as they were, as a file part of the type the document's `encoding` gives.
    photo = {"filename": "photo", "type": "image/png", "sha256": hashlib.sha256(PNG).hexdigest()}
    assert fields["photo"] == [photo]
    assert [f["type"] for f in fields["extra"]] == ["text/csv", "text/csv"]
    assert fields["extra"][1]["sha256"] == hashlib.sha256(b"c,d\n").hexdigest()
    assert fields["meta"] == ['{"taken": 2024}']


async def test_a_file_that_is_not_base64_is_refused_before_the_service_is_called(gateway: Gateway) -> None:
    response = await invoke(gateway.url, "forms.upload", {"photo": "not base64!"})
    assert response.status_code == 422
    assert "argument 'photo' must be bytes in base64" in response.json()["error"]["message"]


async def test_json_is_chosen_when_an_operation_offers_a_form_too(gateway: Gateway) -> None:
    got = await structured(gateway, "forms.either", {"user": "ann", "scopes": ["x"]})
    assert got == {"content_type": "application/json", "fields": {"user": "ann", "scopes": ["x"]}}


async def test_a_text_body_is_the_body_argument(gateway: Gateway) -> None:
    schema = (await listing(gateway.url))["forms.note"]["parameters"]
    assert schema == {"type": "object", "properties": {"body": {"type": "string"}}, "required": ["body"]}
    got = await structured(gateway, "forms.note", {"body": "héllo\nworld"})
    assert got == {"content_type": "text/plain; charset=utf-8", "text": "héllo\nworld"}


async def test_other_text_is_text_and_other_types_are_bytes_in_base64(gateway: Gateway) -> None:
    got = await structured(gateway, "forms.xml", {"body": "<pet>Rex</pet>"})
    assert got == {"content_type": "application/xml", "text": "<pet>Rex</pet>"}
    functions = await listing(gateway.url)
    assert functions["forms.picture"]["parameters"]["properties"]["body"] == {
        "type": "string",
        "contentEncoding": "base64",
        "contentMediaType": "application/octet-stream",
    }
    got = await structured(gateway, "forms.picture", {"body": base64.b64encode(PNG).decode()})
    assert got == {"content_type": "application/octet-stream", "sha256": hashlib.sha256(PNG).hexdigest()}


async def test_cookie_parameters_are_one_cookie_header_and_no_cookie_is_kept(gateway: Gateway) -> None:
    got = await structured(gateway, "forms.cookies", {"flavour": "oat; raisin", "ids": [3, 4]})
    assert got == {"cookie": "flavour=oat%3B%20raisin; ids=3,4"}
    # The service set a session cookie on that answer; the next caller does not send it.
    assert await structured(gateway, "forms.cookies", {"flavour": "plain"}) == {"cookie": "flavour=plain"}
    assert (await structured(gateway, "forms.headers", {}))["cookie"] is None
    missing = await invoke(gateway.url, "forms.cookies", {})
    assert "missing argument 'flavour'" in missing.json()["error"]["message"]


async def test_header_parameters_leave_out_what_the_spec_and_the_runtime_set(gateway: Gateway) -> None:
    schema = (await listing(gateway.url))["forms.headers"]["parameters"]
    # Accept, Authorization and Content-Type are ignored (the spec); X-Api-Key is the runtime's.
    assert set(schema["properties"]) == {"X-Trace"} and "required" not in schema
    got = await structured(gateway, "forms.headers", {"X-Trace": "t-1"})
    assert got["x-trace"] == "t-1" and got["x-api-key"] == "k1"
    smuggled = await invoke(gateway.url, "forms.headers", {"X-Trace": "a\r\nX-Api-Key: mine"})
    assert smuggled.status_code == 422
    assert "argument 'X-Trace' is a header and cannot hold line breaks" in smuggled.json()["error"]["message"]
