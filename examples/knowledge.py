"""Search and question answering over a help centre, with no model and no network.

The documents are the markdown files in ``knowledge_docs/`` next to this module:
the help centre of Fernhill Supply Co., the shop of `examples.delivery`. Each
paragraph is indexed with BM25, the ranking function behind most search
engines; the index is built once, on the first call.

`answer_question` is extractive: it answers with the best matching sentences
of the documents, word for word, and names where they come from, so every
answer can be checked against its source.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, NamedTuple

from pydantic import BaseModel, Field

import toolmesh

_DOCS = Path(__file__).parent / "knowledge_docs"
# BM25's usual parameters: how fast repeated terms saturate, and how much length matters.
_K1, _B = 1.5, 0.75
# How close to the best paragraph's score another must be for the answer to quote it.
_CLOSE = 0.8
# A word list reads best as words; it is split once, at import.
_STOPWORDS = frozenset(
    """a an and are as at be by can do does for from has have how i if in is it its my of on or our so
    that the their this to us was we what when where which who why will with you your""".split()  # noqa: SIM905
)
_WORD = re.compile(r"[^\W_]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])")


class Passage(BaseModel):
    """A paragraph of the help centre that matches a query."""

    doc: str = Field(description='The document\'s file name, e.g. "returns.md"')
    title: str
    section: str
    text: str
    score: float


class Source(BaseModel):
    """Where part of an answer comes from."""

    doc: str
    title: str
    section: str


class Answer(BaseModel):
    """An answer made of sentences quoted from the help centre."""

    question: str
    found: bool = Field(description="False when nothing in the help centre matches the question")
    answer: str
    sources: list[Source]


@dataclass(frozen=True)
class _Paragraph:
    doc: str
    title: str
    section: str
    text: str
    terms: Counter[str]


class _Candidate(NamedTuple):
    score: float
    rank: int
    position: int
    sentence: str
    paragraph: _Paragraph


def _stem(word: str) -> str:
    # A light suffix stripper, enough for "refunds", "refunded" and "refunding" to meet, and
    # "delivery" to meet "delivered". It need not give words, only the same stem both sides.
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)]
            break
    if len(word) > 4 and word[-1] in "ey":
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2]:
        word = word[:-1]  # "shipped" -> "shipp" -> "ship"
    return word


def _terms(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def _paragraphs(path: Path) -> list[_Paragraph]:
    title, section, found = path.stem.replace("_", " ").capitalize(), "", []
    for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
        text = " ".join(block.split())
        if text.startswith("# "):
            title = section = text[2:]
        elif text.startswith("## "):
            section = text[3:]
        elif text:
            terms = Counter(_terms(f"{title} {section} {text}"))
            found.append(_Paragraph(path.name, title, section, text, terms))
    return found


class _Index:
    def __init__(self, paragraphs: list[_Paragraph]) -> None:
        if not paragraphs:
            raise FileNotFoundError(f"no help-centre documents found in {_DOCS}")
        self.paragraphs = paragraphs
        self.average_length = sum(p.terms.total() for p in paragraphs) / len(paragraphs)
        frequency = Counter(term for p in paragraphs for term in p.terms)
        n = len(paragraphs)
        self.idf = {term: math.log(1 + (n - f + 0.5) / (f + 0.5)) for term, f in frequency.items()}

    def search(self, query: str) -> list[tuple[float, _Paragraph]]:
        """Paragraphs that match the query, best first."""
        terms = set(_terms(query))
        ranked = []
        for p in self.paragraphs:
            norm = _K1 * (1 - _B + _B * p.terms.total() / self.average_length)
            score = sum(
                self.idf[t] * p.terms[t] * (_K1 + 1) / (p.terms[t] + norm) for t in terms if t in p.terms
            )
            if score > 0:
                ranked.append((score, p))
        return sorted(ranked, key=lambda hit: hit[0], reverse=True)


@functools.cache
def _index() -> _Index:
    return _Index([p for path in sorted(_DOCS.glob("*.md")) for p in _paragraphs(path)])


@toolmesh.function(
    namespace="knowledge",
    read_only=True,
    idempotent=True,
    examples=[
        "search the help centre for return policy",
        "find help articles about changing my delivery address",
        "look up warranty information in the help docs",
    ],
)
def search_help_center(
    query: Annotated[str, Field(min_length=1, max_length=500)],
    limit: Annotated[int, Field(ge=1, le=10)] = 3,
) -> list[Passage]:
    """Search the shop's help centre (shipping, orders, returns, payment, warranty, account).

    Args:
        query: What to look for, in words, e.g. "refund time" or "change delivery address".
        limit: The most paragraphs to return, from 1 to 10.
    """
    return [
        Passage(doc=p.doc, title=p.title, section=p.section, text=p.text, score=round(score, 3))
        for score, p in _index().search(query)[:limit]
    ]


@toolmesh.function(
    namespace="knowledge",
    read_only=True,
    idempotent=True,
    examples=[
        "how long does a refund take?",
        "can I pay with PayPal?",
        "how do I reset my account password?",
    ],
)
def answer_question(
    question: Annotated[str, Field(min_length=1, max_length=500)],
    sentences: Annotated[int, Field(ge=1, le=5)] = 2,
) -> Answer:
    """Answer a customer's question with sentences quoted from the help centre, and their sources.

    Args:
        question: The question, e.g. "How long does a refund take?".
        sentences: The most sentences to quote, from 1 to 5.
    """
    index = _index()
    hits = index.search(question)[:3]
    # Paragraphs well behind the best one tend to match a word or two by chance.
    hits = [(score, paragraph) for score, paragraph in hits if score >= _CLOSE * hits[0][0]]
    if not hits:
        return Answer(
            question=question, found=False, answer="The help centre does not cover this.", sources=[]
        )
    wanted, best = set(_terms(question)), hits[0][0]
    candidates = []
    for rank, (score, paragraph) in enumerate(hits):
        for position, sentence in enumerate(_SENTENCE_END.split(paragraph.text)):
            overlap = sum(index.idf[t] for t in wanted & set(_terms(sentence)))
            # A sentence counts for as much as its paragraph matches the whole question.
            candidates.append(_Candidate(overlap * score / best, rank, position, sentence, paragraph))
    relevant = sorted((c for c in candidates if c.score > 0), key=lambda c: -c.score)[:sentences]
    # A paragraph may match through its heading alone; then its opening sentence answers.
    chosen = sorted(relevant, key=lambda c: (c.rank, c.position)) or candidates[:1]
    sources = {(c.paragraph.doc, c.paragraph.section): c.paragraph for c in chosen}
    return Answer(
        question=question,
        found=True,
        answer=" ".join(c.sentence for c in chosen),
        sources=[Source(doc=p.doc, title=p.title, section=p.section) for p in sources.values()],
    )
