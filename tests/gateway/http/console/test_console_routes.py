"""The console's files over a real gateway: served from the package without a key, with a strict
content-security policy, small, and with every file the page names present."""

from __future__ import annotations

import re

import httpx

from tests.gateway.conftest import StartGateway
from toolmesh.config import KeyConfig, hash_key
from toolmesh.gateway.http.console.console_routes import CONTENT_SECURITY_POLICY, load_assets


async def test_ui_redirects_to_the_page_which_needs_no_key(gateway_factory: StartGateway) -> None:
    keys = [KeyConfig(name="only", key_hash=hash_key("secret"))]
    gateway = await gateway_factory(keys=keys)
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        moved = await http.get("/ui")
        assert moved.status_code == 308 and moved.headers["location"] == "ui/"
        # A browser at the gateway's address is taken to the console; a program gets a map.
        browser = await http.get("/", headers={"Accept": "text/html,application/xhtml+xml"})
        assert browser.status_code == 307 and browser.headers["location"] == "ui/"
        assert (await http.get("/")).json()["console"] == "/ui/"
        page = await http.get("/ui/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert (
            "default-src 'self'" in CONTENT_SECURITY_POLICY
            and "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY
        )
        assert page.headers["x-content-type-options"] == "nosniff"
        # The page is public; the data behind it is not.
        assert (await http.get("/v1/functions")).status_code == 401


async def test_every_file_the_page_names_is_served_with_its_type(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        page = (await http.get("/ui/")).text
        named = set(re.findall(r'(?:src|href)="([\w.]+\.(?:js|css))"', page))
        scripts = {"main.js"}
        while scripts:  # follow the ES module imports from main.js
            name = scripts.pop()
            named.add(name)
            source = (await http.get(f"/ui/{name}")).text
            scripts |= set(re.findall(r'from "\./([\w.]+\.js)"', source)) - named
        assert {"console.css", "main.js", "api.js", "schema_form.js", "result_view.js"} <= named
        for name in named:
            answer = await http.get(f"/ui/{name}")
            assert answer.status_code == 200, name
            expected = "text/css" if name.endswith(".css") else "text/javascript"
            assert answer.headers["content-type"].startswith(expected), name
            assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert named == set(load_assets()) - {"index.html"}, "a file is shipped that nothing loads"


async def test_etag_revalidation_and_unknown_files(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        first = await http.get("/ui/main.js")
        again = await http.get("/ui/main.js", headers={"If-None-Match": first.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
        # The name is only ever a key of the files read at start-up, never a path on disk.
        missing = await http.get("/ui/%2e%2e/pyproject.toml")
        assert missing.status_code == 404
        unknown = await http.get("/ui/nothing.js")
        assert unknown.status_code == 404
        assert unknown.json()["error"]["message"] == "the console has no file 'nothing.js'"


def test_the_console_is_small_and_self_contained() -> None:
    assets = load_assets()
    assert sum(len(asset.body) for asset in assets.values()) < 500_000
    for name, asset in assets.items():
        text = asset.body.decode()
        # No CDN, nothing fetched from elsewhere at run time.
        assert not re.search(r"(?:src|href)=\"(?:https?:)?//", text), name
        assert ".innerHTML" not in text and "insertAdjacentHTML" not in text, (
            f"{name} builds markup from strings"
        )
