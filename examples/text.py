"""Text utilities: extractive summaries, and links and page details pulled out of HTML.

Every function sets its namespace with ``@toolmesh.function(namespace="text")``,
so they are served as ``text.summarise``, ``text.extract_links`` and
``text.extract_page_info``. HTML is read with the standard library's
`html.parser`, which copes with the broken markup real pages are made of.
Nothing is fetched: callers pass the text or HTML they already have.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from html.parser import HTMLParser
from typing import Annotated
from urllib.parse import urljoin

from pydantic import BaseModel, Field

import toolmesh


class Summary(BaseModel):
    """The most representative sentences of a text, in their original order."""

    summary: str
    sentences: list[str]
    total_sentences: int = Field(description="How many sentences the whole text has")
    keywords: list[str] = Field(description="The most frequent meaningful words, most frequent first")


class Link(BaseModel):
    """A link of a page: where it goes and what it says."""

    url: str
    text: str


class Heading(BaseModel):
    level: int
    text: str


class PageInfo(BaseModel):
    """What a page says about itself, and the contact details it shows."""

    title: str | None
    description: str | None
    language: str | None
    headings: list[Heading]
    open_graph: dict[str, str] = Field(description='The og:* properties, without the "og:" prefix')
    emails: list[str]
    phones: list[str]


# A word list reads best as words; it is split once, at import.
_STOPWORDS = frozenset(
    """a about after all also an and any are as at be because been but by can could did do does for from
    had has have he her his how i if in into is it its just me more most my no not of on one only or other
    our out she so some than that the their them then there these they this those to up us was we were
    what when which while who will with would you your""".split()  # noqa: SIM905
)
_ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "prof", "st", "vs", "etc", "e.g", "i.e"})
# A sentence ends at . ! or ? (perhaps followed by a closing quote) before a capital or a digit.
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[]?[A-Z0-9])")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_EMAIL = re.compile(r"[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_PHONE = re.compile(r"(?<![\w+])\+?\(?\d[\d ().-]{6,}\d(?!\w)")
_HIDDEN = frozenset({"script", "style", "noscript", "template"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


def _sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        merged: list[str] = []
        for piece in _SENTENCE_END.split(" ".join(paragraph.split())):
            if merged and merged[-1].rsplit(" ", 1)[-1].lower().rstrip(".") in _ABBREVIATIONS:
                merged[-1] += " " + piece
            elif piece:
                merged.append(piece)
        sentences.extend(merged)
    return sentences


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 1]


@toolmesh.function(
    namespace="text",
    read_only=True,
    idempotent=True,
    examples=[
        "summarise this article in 2 sentences",
        "give me a short summary of this text",
        "tl;dr of the following report",
    ],
)
def summarise(
    text: Annotated[str, Field(min_length=1, max_length=200_000)],
    sentences: Annotated[int, Field(ge=1, le=10)] = 3,
) -> Summary:
    """Summarise a text by picking its most representative sentences.

    Sentences are scored by how frequent their words are in the whole text, and the
    best ones are returned in the order they appear, so the summary reads naturally.

    Args:
        text: The text to summarise: an article, a report, an email thread...
        sentences: How many sentences to keep, from 1 to 10.
    """
    found = _sentences(text)
    if not found:
        raise ValueError("the text has no sentences to summarise")
    frequencies = Counter(_content_words(text))
    top = max(frequencies.values(), default=1)

    def score(sentence: str) -> float:
        words = _WORD.findall(sentence)
        # The square root favours dense sentences without rewarding length alone.
        return sum(frequencies[w] / top for w in _content_words(sentence)) / math.sqrt(len(words) or 1)

    best = sorted(range(len(found)), key=lambda i: score(found[i]), reverse=True)[:sentences]
    kept = [found[i] for i in sorted(best)]
    return Summary(
        summary=" ".join(kept),
        sentences=kept,
        total_sentences=len(found),
        keywords=[word for word, _ in frequencies.most_common(5)],
    )


class _PageParser(HTMLParser):
    """Collects, in one pass, everything the HTML functions need."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title: list[str] = []
        self.base: str | None = None
        self.language: str | None = None
        self.meta: dict[str, str] = {}
        self.headings: list[Heading] = []
        self.links: list[tuple[str, str]] = []
        self.text: list[str] = []
        self._hidden = 0
        self._in_title = False
        self._heading: tuple[int, list[str]] | None = None
        self._link: tuple[str, str, list[str]] | None = None  # href, title, text

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if tag in _HIDDEN:
            self._hidden += 1
        elif tag == "title":
            self._in_title = True
        elif tag == "html":
            self.language = attributes.get("lang") or None
        elif tag == "base" and self.base is None:
            self.base = attributes.get("href")
        elif tag == "meta" and "content" in attributes:
            key = (attributes.get("name") or attributes.get("property") or "").lower()
            if key:
                self.meta.setdefault(key, " ".join(attributes["content"].split()))
        elif tag in _HEADINGS:
            self._heading = (int(tag[1]), [])
        elif tag == "a":
            self._end_link()  # links cannot nest: a new one closes the last
            self._link = (attributes.get("href", ""), attributes.get("title", ""), [])
        elif tag == "img" and self._link is not None:
            self._link[2].append(f" {attributes.get('alt', '')} ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag == "title":
            self._in_title = False
        elif tag in _HEADINGS and self._heading is not None:
            level, parts = self._heading
            if text := " ".join("".join(parts).split()):
                self.headings.append(Heading(level=level, text=text))
            self._heading = None
        elif tag == "a":
            self._end_link()

    def handle_data(self, data: str) -> None:
        if self._hidden:
            return
        self.text.append(data)
        if self._in_title:
            self.title.append(data)
        if self._heading is not None:
            self._heading[1].append(data)
        if self._link is not None:
            self._link[2].append(data)

    def close(self) -> None:
        super().close()
        self._end_link()

    def _end_link(self) -> None:
        if self._link is not None:
            href, title, parts = self._link
            self.links.append((href.strip(), " ".join("".join(parts).split()) or title.strip()))
            self._link = None


def _parse(html: str) -> _PageParser:
    parser = _PageParser()
    parser.feed(html)
    parser.close()
    return parser


@toolmesh.function(
    namespace="text",
    read_only=True,
    idempotent=True,
    examples=[
        "list all the links in this HTML page",
        "which URLs does this html link to",
        "pull the hrefs out of this markup",
    ],
)
def extract_links(html: str, base_url: str | None = None) -> list[Link]:
    """List the links of an HTML page, with relative addresses made absolute.

    Args:
        html: The page's HTML source.
        base_url: The page's own address, e.g. "https://example.com/blog/"; relative links
            are resolved against it (and against the page's <base> tag, if it has one).
    """
    parser = _parse(html)
    base = urljoin(base_url or "", parser.base or "")
    return [
        Link(url=urljoin(base, href), text=text)
        for href, text in parser.links
        if href and not href.lower().startswith("javascript:")
    ]


@toolmesh.function(
    namespace="text",
    read_only=True,
    idempotent=True,
    examples=[
        "what is the title and the headings of this HTML page",
        "get the page title and meta description from this html",
        "outline of this web page's headings",
    ],
)
def extract_page_info(html: str) -> PageInfo:
    """Extract the title, description, headings, Open Graph data and contact details of a page.

    Emails and phone numbers are found in the visible text and in mailto: and tel: links.

    Args:
        html: The page's HTML source.
    """
    parser = _parse(html)
    title = " ".join("".join(parser.title).split()) or parser.meta.get("og:title")
    hrefs = " ".join(href for href, _ in parser.links if href.lower().startswith(("mailto:", "tel:")))
    text = " ".join(parser.text) + " " + hrefs
    phones = (" ".join(m.split()) for m in _PHONE.findall(text))
    return PageInfo(
        title=title,
        description=parser.meta.get("description") or parser.meta.get("og:description"),
        language=parser.language,
        headings=parser.headings,
        open_graph={k.removeprefix("og:"): v for k, v in parser.meta.items() if k.startswith("og:")},
        emails=list(dict.fromkeys(_EMAIL.findall(text))),
        phones=list(dict.fromkeys(p for p in phones if 9 <= sum(c.isdigit() for c in p) <= 15)),
    )
