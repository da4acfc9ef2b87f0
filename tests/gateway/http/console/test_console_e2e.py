"""The console in a real headless Chromium against a real `toolmesh up`: it opens with no
JavaScript error, finds a function through the router, invokes it through the form generated
from its schema (a valid input shows the result, an invalid one the gateway's error beside the
field it names), shows a streaming function's items as they arrive, routes a prompt (each
candidate with its dense and lexical scores), shows a free-text call that may change data as
planned and runs it only when the user presses Run (Cancel, an expired confirmation and a
function free text may never run each shown as such), watches a cold start and the recent
invocations in the live view, sends an operation from the API reference, and shows a key only
the functions it may call.

Chromium is Debian's (`apt-get install chromium`), driven by the `playwright` package with
`executable_path`; `playwright install` is never run. Skipped when either is missing, unless
TOOLMESH_REQUIRE_E2E=1. With TOOLMESH_SCREENSHOTS=<folder> the run saves screenshots there
(the docs' come from `TOOLMESH_SCREENSHOTS=docs/console`).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, missing, require_tool, user_dirs
from tests.gateway.conftest import StartUp

pytestmark = pytest.mark.slow
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: What Chromium logs for a fetch answered with an error status; the invalid input provokes one.
REFUSED = re.compile(r"Failed to load resource: the server responded with a status of (\d+)")
NARROW_KEYS = """
[[keys]]
name = "narrow"
key_env = "TM_NARROW_KEY"
scopes = ["add"]
"""

try:
    from playwright.sync_api import BrowserContext, Page, expect, sync_playwright
except ImportError:  # pragma: no cover - the dev extras install it
    sync_playwright = None


class Browser:
    """One page in a fresh Chromium profile, recording every console error and page error."""

    def __init__(self, context: BrowserContext) -> None:
        self.context = context
        self.page: Page = context.pages[0] if context.pages else context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda message: message.type == "error" and self.errors.append(message.text))
        self.page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))

    def unexpected_errors(self, *allowed_statuses: int) -> list[str]:
        """Errors other than Chromium's note on an API answer with one of `allowed_statuses`."""
        return [
            error
            for error in self.errors
            if not ((match := REFUSED.search(error)) and int(match.group(1)) in allowed_statuses)
        ]

    def screenshot(self, name: str, selector: str) -> None:
        """The part of the page `selector` picks, into $TOOLMESH_SCREENSHOTS/<name>.png when asked."""
        folder = os.environ.get("TOOLMESH_SCREENSHOTS")
        if folder:
            target = ROOT / folder if not Path(folder).is_absolute() else Path(folder)
            target.mkdir(parents=True, exist_ok=True)
            self.page.locator(selector).screenshot(path=str(target / f"{name}.png"))


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    chromium = shutil.which("chromium") or require_tool("chromium", "apt-get install chromium")
    if sync_playwright is None:
        missing("the playwright package is not installed (pip install -e '.[dev]')")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=chromium,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield Browser(context)
        finally:
            context.close()


def test_search_invoke_and_route_through_the_console(
    up: StartUp, browser: Browser, tmp_path: Path, router_cache: Path
) -> None:
    gateway = up(env=user_dirs(tmp_path, router_cache))
    page = browser.page
    page.goto(f"http://127.0.0.1:{gateway.http_port}/ui")
    assert page.url.endswith("/ui/")
    expect(page.get_by_role("heading", name="Catalog")).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text("19 functions")
    expect(page.get_by_role("navigation", name="Functions")).to_contain_text("counter.increment")
    expect(page.locator("#runtimes")).to_contain_text("tools (ready)")

    # Search through the router: the function that adds comes first.
    page.get_by_label("Search functions").fill("add two integers")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#search-note")).to_contain_text("ranked by the router")
    functions = page.get_by_role("navigation", name="Functions").locator(".function-link")
    expect(functions.first).to_have_text("add")
    functions.first.click()
    detail = page.locator("#function-detail")
    expect(detail.get_by_role("heading", name="add", exact=True)).to_be_focused()
    expect(detail).to_contain_text("Add two integers.")
    detail.get_by_text("MCP tool").click()
    expect(detail).to_contain_text('"inputSchema"')

    # A valid input: the result.
    first = detail.get_by_role("textbox", name="a (integer)", exact=True)
    first.fill("2")
    detail.get_by_role("textbox", name="b (integer)", exact=True).fill("3")
    detail.get_by_role("button", name="Invoke").click()
    result = detail.get_by_test_id("result")
    expect(result).to_contain_text("Result")
    expect(result.locator(".result-json")).to_have_text("5")
    browser.screenshot("catalog", "#catalog")

    # An invalid one: the gateway's violation, beside the field it names.
    first.fill("two")
    detail.get_by_role("button", name="Invoke").click()
    error = detail.locator('.field[data-path="a"] .field-error')
    expect(error).to_have_text('a: expected integer, got string "two"')
    expect(first).to_have_attribute("aria-invalid", "true")
    expect(first).to_be_focused()
    expect(detail.locator(".invoke-output")).to_contain_text("422 invalid_arguments")

    # Route a prompt: the candidates with their scores; a dry run shows the extracted arguments.
    page.get_by_label("Prompt", exact=True).fill("add 2 and 3")
    page.get_by_role("button", name="Route", exact=True).click()
    output = page.locator("#prompt-output")
    candidates = output.get_by_role("table", name="Candidates, best first")
    expect(candidates.locator("tbody tr").first).to_contain_text("add")
    expect(candidates.locator("tbody tr").first).to_contain_text("chosen")
    # The fused score's two parts: the embedding cosine and BM25 ("add" is a shared word).
    expect(candidates.get_by_role("columnheader")).to_have_text(
        ["Function", "Score", "Dense", "Lexical", "Match"]
    )
    best = candidates.locator("tbody tr").first
    expect(best.locator(".score-dense")).to_have_text(re.compile(r"^0\.\d{4}$"))
    expect(best.locator(".score-lexical")).to_have_text(re.compile(r"^(?!0\.0000)\d+\.\d{4}$"))
    page.get_by_role("button", name="Execute (dry run)").click()
    arguments = output.get_by_role("table", name="Extracted arguments")
    expect(arguments.get_by_role("row", name=re.compile(r"^a 2"))).to_be_visible()
    expect(output).to_contain_text("Dry run: not called.")
    browser.screenshot("prompt", "#prompt")
    # add is not read_only: Execute plans it and runs it once the user confirms.
    page.get_by_role("button", name="Execute", exact=True).click()
    output.get_by_role("button", name="Run it").click()
    expect(output).to_contain_text("Confirmed: add ran.")
    expect(output.get_by_test_id("result")).to_contain_text("Result")

    # The API reference, from /openapi.json, sends an operation with its parameters filled in.
    operation = page.locator("#api details.operation", has_text="GET /v1/functions/{name}")
    operation.locator("summary").first.click()
    operation.get_by_role("textbox", name="name (path, required)").fill("add")
    operation.get_by_role("button", name="Send GET").click()
    expect(operation.get_by_test_id("api-answer")).to_contain_text('"description": "Add two integers."')

    assert browser.unexpected_errors(422) == []
    assert len(browser.errors) == 1, browser.errors  # the one 422 asked for above


def test_a_key_sees_only_the_functions_it_may_call(
    up: StartUp, browser: Browser, tmp_path: Path, router_cache: Path
) -> None:
    env = {**user_dirs(tmp_path, router_cache), "TM_NARROW_KEY": "narrow-secret"}
    gateway = up(runtimes=NARROW_KEYS, env=env)
    page = browser.page
    page.goto(f"http://127.0.0.1:{gateway.http_port}/ui/")
    expect(page.get_by_role("status")).to_contain_text("This gateway needs an API key")
    key = page.get_by_label("API key")
    expect(key).to_be_focused()

    # Keyboard only: Enter submits the key, the search; a function opens from its focused link.
    key.fill("narrow-secret")
    key.press("Enter")
    expect(page.get_by_role("status")).to_contain_text("1 functions for this key")
    listed = page.get_by_role("navigation", name="Functions").locator(".function-link")
    expect(listed).to_have_text(["add"])
    assert page.evaluate("sessionStorage.length") == 1

    search = page.get_by_label("Search functions")
    search.fill("increase the counter")
    search.press("Enter")
    expect(page.locator("#search-note")).to_contain_text("ranked by the router")
    expect(listed).to_have_text(["add"])
    listed.first.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="add", exact=True)).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("textbox", name="a (integer)", exact=True)).to_be_focused()

    # This key may not read the metrics: the live view says so once and stops asking.
    page.get_by_role("button", name="Watch live").click()
    expect(page.locator("#live-output").get_by_role("alert")).to_contain_text("needs the gateway's metrics")
    page.wait_for_timeout(3000)
    assert len([error for error in browser.errors if "status of 403" in error]) == 1

    # Without the key nothing is shown: the 401 that said so, and that 403, are the only errors.
    assert browser.unexpected_errors(401, 403) == []


CONSOLE_TOOLS = """
[[runtimes]]
name = "shapes"
modules = ["console_tools"]
min_replicas = 0
"""


def test_the_form_follows_the_schema_and_places_nested_errors(
    up: StartUp, browser: Browser, tmp_path: Path, router_cache: Path
) -> None:
    gateway = up(runtimes=CONSOLE_TOOLS, env=user_dirs(tmp_path, router_cache))
    page = browser.page
    page.goto(f"http://127.0.0.1:{gateway.http_port}/ui/")
    # The live view, watched from the start: "shapes" has no replica until its first call.
    page.get_by_role("button", name="Watch live").click()
    shapes = page.get_by_role("table", name="Runtimes now").locator('tr[data-runtime="shapes"]')
    expect(shapes.locator(".cold-starts")).to_have_text("0")
    page.get_by_role("button", name="plot", exact=True).click()
    detail = page.locator("#function-detail")
    invoke = detail.get_by_role("button", name="Invoke")
    point = detail.get_by_role("group", name="point")
    x = point.get_by_role("textbox", name="x (integer)", exact=True)
    tags = detail.get_by_role("textbox", name="tags (array)", exact=True)
    expect(detail.get_by_role("combobox", name="shape (one of)")).to_have_value("")
    expect(detail).to_contain_text("Where to draw it.")  # the argument's words, not Point's

    # An array field takes JSON, checked before anything is sent.
    tags.fill("[oops")
    invoke.click()
    expect(detail.locator('.field[data-path="tags"] .field-error')).to_contain_text("not valid JSON")
    expect(tags).to_be_focused()
    expect(detail.locator(".invoke-output")).to_be_empty()

    # The gateway's errors: the missing object on its fieldset, then a nested field's on that field.
    tags.fill('["a", "b"]')
    invoke.click()
    expect(detail.locator('.field[data-path="point"] > .field-error')).to_have_text(
        "point: missing required argument"
    )
    expect(point).to_be_focused()
    x.fill("1.5")
    invoke.click()
    expect(detail.locator('.field[data-path="point.x"] .field-error')).to_contain_text("point.x: expected")
    expect(detail.locator('.field[data-path="point"] > .field-error')).to_be_empty()

    # Enums and booleans as selects, numbers parsed: the result as a JSON tree.
    x.fill("3")
    detail.get_by_role("combobox", name="shape (one of)").select_option(label="square")
    detail.get_by_role("combobox", name="filled (boolean)").select_option(label="true")
    detail.get_by_role("textbox", name="scale (number)").fill("2.5")
    invoke.click()
    tree = detail.get_by_test_id("result").locator(".result-json")
    expect(tree).to_contain_text('shape: "square"')
    expect(tree).to_contain_text("filled: true")
    expect(tree).to_contain_text("scale: 2.5")
    expect(tree).to_contain_text('"b"')

    # Image content is shown as an image.
    page.get_by_role("button", name="pixel", exact=True).click()
    detail.get_by_role("button", name="Invoke").click()
    image = detail.get_by_role("img", name="image result 1 (image/png)")
    expect(image).to_be_visible()
    assert image.evaluate("img => img.naturalWidth") == 1

    # A streaming function's items appear one by one as they come, then its result.
    page.get_by_role("button", name="ticks", exact=True).click()
    detail.get_by_role("textbox", name="n (integer)", exact=True).fill("3")
    detail.get_by_role("textbox", name="delay (number)", exact=True).fill("1")
    detail.get_by_role("button", name="Invoke").click()
    items = detail.get_by_role("list", name="Streamed items").locator(":scope > li")
    expect(items).to_have_count(1)
    expect(detail.get_by_test_id("result")).to_have_count(0)  # the next item is a second away
    expect(detail.get_by_test_id("result")).to_contain_text("Result")
    expect(items).to_have_count(3)
    expect(items.nth(2)).to_contain_text("tick: 2")
    expect(detail.locator(".invoke-output")).to_contain_text("3 items streamed.")

    # The cold start the first call to "shapes" caused, and the calls since, in the live view.
    expect(shapes.locator(".cold-starts")).to_have_text(re.compile(r"^[1-9]\d*$"))
    live = page.locator("#live-output")
    latency = re.compile(r"^Call latency, up to the last 5 minutes; latest: p50 \d")
    expect(live.get_by_role("img", name=latency)).to_be_visible()
    expect(live.get_by_role("img", name=re.compile(r"^Cold starts per 2 s"))).to_be_visible()
    # The calls just made, newest first, in the list of recent invocations.
    recent = live.get_by_role("table", name=re.compile(r"^Recent invocations"))
    rows = recent.locator("tbody tr")
    expect(rows.first).to_contain_text("ticks")
    expect(rows.first.locator(".outcome")).to_have_text("ok")
    expect(recent.get_by_role("row", name=re.compile(r"plot invalid_arguments"))).to_have_count(2)
    expect(recent.get_by_role("row", name=re.compile(r" anonymous$")).first).to_be_visible()
    browser.screenshot("live", "#live")
    page.get_by_role("button", name="Pause live view").click()
    expect(page.get_by_role("button", name="Watch live")).to_have_attribute("aria-pressed", "false")

    assert browser.unexpected_errors(422) == []
    assert len(browser.errors) == 2, browser.errors  # the two 422s asked for above


INVENTORY_TOOLS = """
[[runtimes]]
name = "shop"
modules = ["inventory_tools"]
min_replicas = 1
free_text = { add_item = "never" }
"""


def test_a_call_that_may_change_data_waits_for_the_user_to_run_it(
    up: StartUp, browser: Browser, tmp_path: Path, router_cache: Path, request: pytest.FixtureRequest
) -> None:
    gateway = up(runtimes=INVENTORY_TOOLS, env=user_dirs(tmp_path, router_cache))
    base = f"http://127.0.0.1:{gateway.http_port}"
    http = httpx.Client(base_url=base, timeout=30)
    request.addfinalizer(http.close)

    def stock() -> list[str]:
        """The skus in stock, asked directly (not through free text)."""
        listed: list[str] = http.post("/v1/functions/list_items/invoke", json={}).json()["structured"]
        return listed

    def item(sku: str) -> dict[str, Any]:
        answer = http.post("/v1/functions/get_item/invoke", json={"sku": sku})
        found: dict[str, Any] = answer.json()["structured"]
        return found

    page = browser.page
    page.goto(f"{base}/ui/")
    expect(page.get_by_role("status")).to_contain_text("functions")
    prompt = page.get_by_label("Prompt", exact=True)
    output = page.locator("#prompt-output")
    plan = output.get_by_role("region", name="Planned call")
    run = plan.get_by_role("button", name="Run it")

    # A read-only function runs at once, as before: no plan, no button.
    prompt.fill("look up the item with sku HW-001")
    page.get_by_role("button", name="Execute", exact=True).click()
    expect(output.get_by_test_id("result").locator(".result-json")).to_contain_text('name: "hammer"')
    expect(output.get_by_role("button", name="Run it")).to_have_count(0)

    # A dry run of a destructive prompt says it would ask first, and why; there is nothing to run.
    prompt.fill("remove the item with sku HW-001")
    page.get_by_role("button", name="Execute (dry run)").click()
    expect(output).to_contain_text("Dry run: not called. Execute would ask for a confirmation first.")
    expect(output.locator(".reason")).to_contain_text("remove_item is destructive")
    expect(output.locator(".badge.danger")).to_have_text("destructive")
    expect(output.get_by_role("button", name="Run it")).to_have_count(0)

    # Execute plans it: the function, its argument and where it came from, the destructive mark.
    page.get_by_role("button", name="Execute", exact=True).click()
    expect(plan).to_contain_text("Planned, not run")
    expect(output.locator("p", has_text="Function:")).to_contain_text("remove_item destructive")
    expect(output.get_by_role("row", name=re.compile(r'^sku "HW-001" \w+$'))).to_be_visible()
    expect(plan.locator(".reason")).to_contain_text("it may delete or overwrite data")
    expect(run).to_have_class(re.compile(r"\bdanger\b"))
    browser.screenshot("confirm", "#prompt")
    page.wait_for_timeout(500)
    assert stock() == ["HW-001"], "nothing runs before Run"

    # Cancel drops it: nothing ran, and nothing is left to run.
    plan.get_by_role("button", name="Cancel").click()
    expect(plan).to_contain_text("Cancelled: nothing ran.")
    expect(run).to_have_count(0)
    assert stock() == ["HW-001"]

    # Planned again and Run: it runs, once, and its result is shown.
    page.get_by_role("button", name="Execute", exact=True).click()
    expect(plan).to_contain_text("Planned, not run")
    assert stock() == ["HW-001"]
    run.click()
    expect(plan).to_contain_text("Confirmed: remove_item ran.")
    expect(plan.get_by_test_id("result").locator(".result-text")).to_have_text("removed HW-001")
    expect(run).to_have_count(0)
    assert stock() == []

    # A change that is not destructive asks too, without the mark. Its confirmation spent
    # elsewhere (another tab, say) is told apart from a failure when Run is pressed.
    http.post("/v1/functions/add_item/invoke", json={"sku": "HW-002", "name": "saw", "quantity": 1})
    page.get_by_label("Session").fill("console-1")
    prompt.fill("restock sku HW-002 with 3 units")
    with page.expect_response(re.compile(r"/v1/execute$")) as planned:
        page.get_by_role("button", name="Execute", exact=True).click()
    expect(plan.locator(".reason")).to_contain_text("restock is not read-only")
    expect(output.locator(".badge.danger")).to_have_count(0)
    expect(run).not_to_have_class(re.compile(r"\bdanger\b"))
    token = planned.value.json()["confirmation"]["token"]
    assert http.post("/v1/execute", json={"confirm": token}).json()["status"] == "done"
    run.click()
    refused = plan.get_by_role("alert")
    expect(refused).to_contain_text("This confirmation expired or was used already: nothing ran.")
    expect(refused).to_contain_text("409 confirmation_invalid")
    expect(run).to_have_count(0)
    assert item("HW-002")["quantity"] == 4, "restocked once, by the token spent elsewhere"

    # A follow-up in the same session: the sku it carried over is marked as from the session.
    prompt.fill("same again with 7 units")
    page.get_by_role("button", name="Execute", exact=True).click()
    expect(plan.locator(".reason")).to_contain_text("sku carried over from the session's previous call")
    carried = output.get_by_role("row", name=re.compile(r'^sku "HW-002"'))
    expect(carried.locator(".badge.carried")).to_have_text("from the session")
    quantity = output.get_by_role("row", name=re.compile(r"^quantity 7 "))
    expect(quantity).not_to_contain_text("from the session")
    run.click()
    expect(plan).to_contain_text("Confirmed: restock ran.")
    assert item("HW-002")["quantity"] == 11

    # A function free text may never run: refused, with the call it planned and a way to call it
    # directly, its form in the catalog filled with the planned arguments.
    page.get_by_label("Session").fill("")
    prompt.fill('add a new item with sku GR-001 named "grapes" and quantity 4')
    page.get_by_role("button", name="Execute", exact=True).click()
    expect(output.get_by_role("alert")).to_contain_text("403 not_from_free_text")
    expect(output).to_contain_text("Free text may never run it; call it directly.")
    expect(output.get_by_role("row", name=re.compile(r'^sku "GR-001"'))).to_be_visible()
    output.get_by_role("button", name="Open add_item in the catalog").click()
    detail = page.locator("#function-detail")
    expect(detail.get_by_role("heading", name="add_item", exact=True)).to_be_focused()
    expect(detail.get_by_role("textbox", name="sku (string)", exact=True)).to_have_value("GR-001")
    assert stock() == ["HW-002"]

    assert browser.unexpected_errors(403, 409) == []
