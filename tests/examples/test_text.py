"""examples.text: extractive summaries, links and page details from HTML."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.examples.conftest import Client, Serve

ARTICLE = """\
Solar power is now the cheapest source of electricity in many countries. Dr. Ada Lee, who studies \
energy markets, says solar prices fell by ninety percent in a decade.

The interview took place on a rainy Tuesday. Cheap solar power is changing how countries plan \
their electricity grids. Storage remains the hard part: batteries are needed after sunset. \
"Solar power and batteries together will dominate electricity," Lee said. She also enjoys gardening.
"""

SENTENCES = [
    "Solar power is now the cheapest source of electricity in many countries.",
    "Dr. Ada Lee, who studies energy markets, says solar prices fell by ninety percent in a decade.",
    "The interview took place on a rainy Tuesday.",
    "Cheap solar power is changing how countries plan their electricity grids.",
    "Storage remains the hard part: batteries are needed after sunset.",
    '"Solar power and batteries together will dominate electricity," Lee said.',
    "She also enjoys gardening.",
]

PAGE = """<!doctype html>
<html lang="en"><head>
  <title> Fernhill Supply Co. &mdash; Contact </title>
  <base href="/help/">
  <meta name="description" content="Talk to   our team.">
  <meta property="og:title" content="Contact Fernhill">
  <meta property="og:type" content="website">
  <script>var decoy = "robot@tracker.example +1 555 000 0000";</script>
</head><body>
  <h1>Contact <em>us</em></h1>
  <p>Write to <a href="mailto:help@fernhill.example?subject=Order">help@fernhill.example</a>
     or call +31 30 123 4567. Opened on 2024-01-15.</p>
  <h2>More help</h2>
  <a href="returns.html">Returns</a>
  <a href="../shipping#costs">Shipping <b>costs</b></a>
  <a href="https://partner.example/"><img src="logo.png" alt="Our partner"></a>
  <a href="javascript:void(0)">Chat</a>
  <a href="tel:+31301234567" title="Call us"></a>
  <a href="/account">Your account
</body></html>
"""


@pytest.fixture
async def text(serve: Serve) -> Client:
    return await serve("examples.text")


async def test_summary_keeps_the_best_sentences_in_their_original_order(text: Client) -> None:
    summary = await text.ok("text.summarise", text=ARTICLE, sentences=3)

    assert summary["total_sentences"] == len(SENTENCES), "'Dr.' must not end a sentence"
    kept = summary["sentences"]
    assert len(kept) == 3
    assert kept == sorted(kept, key=SENTENCES.index), "original order"
    assert summary["summary"] == " ".join(kept)
    assert SENTENCES[0] in kept
    assert "She also enjoys gardening." not in kept
    assert "The interview took place on a rainy Tuesday." not in kept
    assert summary["keywords"][:2] == ["solar", "power"]


async def test_a_short_text_is_its_own_summary(text: Client) -> None:
    summary = await text.ok("text.summarise", text="One sentence. Two sentences!", sentences=5)
    assert summary["sentences"] == ["One sentence.", "Two sentences!"]


@pytest.mark.parametrize("sentences", [0, 11])
async def test_summary_length_is_bounded(text: Client, sentences: int) -> None:
    result = await text.call("text.summarise", text=ARTICLE, sentences=sentences)
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert result.error.violations[0].path == "sentences"


async def test_links_are_resolved_against_the_page_and_its_base_tag(text: Client) -> None:
    links = await text.ok("text.extract_links", html=PAGE, base_url="https://fernhill.example/contact")
    assert links == [
        {"url": "mailto:help@fernhill.example?subject=Order", "text": "help@fernhill.example"},
        {"url": "https://fernhill.example/help/returns.html", "text": "Returns"},
        {"url": "https://fernhill.example/shipping#costs", "text": "Shipping costs"},
        {"url": "https://partner.example/", "text": "Our partner"},
        {"url": "tel:+31301234567", "text": "Call us"},
        {"url": "https://fernhill.example/account", "text": "Your account"},
    ]


async def test_links_without_a_base_url_stay_as_written(text: Client) -> None:
    links = await text.ok("text.extract_links", html='<a href="guide.html">Guide</a>')
    assert links == [{"url": "guide.html", "text": "Guide"}]


async def test_page_info(text: Client) -> None:
    info = await text.ok("text.extract_page_info", html=PAGE)
    assert info["title"] == "Fernhill Supply Co. — Contact"
    assert info["description"] == "Talk to our team."
    assert info["language"] == "en"
    assert info["headings"] == [{"level": 1, "text": "Contact us"}, {"level": 2, "text": "More help"}]
    assert info["open_graph"] == {"title": "Contact Fernhill", "type": "website"}
    assert info["emails"] == ["help@fernhill.example"], "script contents are not page text"
    assert info["phones"] == ["+31 30 123 4567", "+31301234567"], "a date is not a phone number"


async def test_page_info_of_a_bare_fragment(text: Client) -> None:
    info = await text.ok("text.extract_page_info", html="<p>Nothing to see</p>")
    assert info["title"] is None and info["description"] is None
    assert info["headings"] == [] and info["emails"] == [] and info["phones"] == []
