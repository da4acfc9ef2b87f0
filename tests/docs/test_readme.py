"""The README is the entry point: short, its example the getting-started page's, its links alive."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def test_the_readme_is_an_entry_point() -> None:
    assert len(README.splitlines()) <= 300
    assert README.index("# my_tools.py") < README.index("## Install")


def test_the_readmes_example_is_the_getting_started_pages() -> None:
    """The README opens with the blocks that tests/gateway/test_up.py runs on the getting-started page."""
    page = [body for _, body in FENCE.findall((ROOT / "docs" / "getting-started.md").read_text())]
    readme = [body for _, body in FENCE.findall(README)]
    start = page.index(next(b for b in page if b.startswith("# my_tools.py")))
    assert readme[:3] == page[start : start + 3]


def test_the_readmes_links_lead_somewhere() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    assert len(links) > 15
    for link in links:
        assert (ROOT / link).is_file(), link


def test_the_readmes_make_commands_exist() -> None:
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    used = re.findall(r"^\$ make ([\w-]+)", README, re.MULTILINE)
    assert used and set(used) <= targets
