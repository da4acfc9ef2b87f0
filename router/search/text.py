"""What the router reads about a function, and how it cuts text into terms.

A `Document` is the router's view of a function: its name, namespace,
description and JSON-schema parameters, whatever catalog it came from (a
gateway's `FunctionSpec`, a BFCL pool entry). `dense_text` is what gets
embedded; `lexical_terms` is what BM25 counts.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[._\-/:]+")
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> frozenset[str]:
    """The whitespace-separated words of `text`, for writing word lists compactly."""
    return frozenset(text.split())


# Words that carry no signal about which function fits.
STOPWORDS = words(
    """a an and are as at be by can could do does for from get given how i in into is it its me my of on
    or please should some than that the their them then there these this to was what when which who will
    with would you your using use"""
)


def split_identifier(name: str) -> str:
    """Identifier to words: ``getWeather_forecast.v2`` -> ``get weather forecast v2``."""
    found: list[str] = []
    for part in _SEPARATORS.split(name):
        found.extend(w for w in _CAMEL.split(part) if w)
    return " ".join(found).lower()


# Suffixes stripped (first match wins, keeping at least four letters), so "booking",
# "booked" and "books" meet "book", and "calculation" meets "calculate".
_SUFFIXES = (
    ("ational", "ate"), ("ization", "ize"), ("ations", "ate"), ("ation", "ate"), ("ments", ""),
    ("ment", ""), ("ings", ""), ("ing", ""), ("ies", "y"), ("ied", "y"), ("ed", ""), ("ers", ""),
    ("er", ""), ("ors", ""), ("or", ""), ("ly", ""), ("es", ""), ("s", ""),
)  # fmt: skip


#: Longer words are stemmed without the cache: real words are shorter, and 65536 cached
#: prompt-length "words" would hold hundreds of megabytes.
MAX_CACHED_WORD = 32


def _stem(word: str) -> str:
    return _cached_stem(word) if len(word) <= MAX_CACHED_WORD else _strip_suffix(word)


@functools.lru_cache(maxsize=65536)
def _cached_stem(word: str) -> str:
    # Cached: a prompt's words are mostly words the catalog and earlier prompts had.
    return _strip_suffix(word)


def _strip_suffix(word: str) -> str:
    for suffix, replacement in _SUFFIXES:
        keep = 3 if replacement == "y" else 4  # "cities" -> "city"
        if word.endswith(suffix) and len(word) - len(suffix) >= keep:
            word = word[: -len(suffix)] + replacement
            break
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def text_hash(text: str) -> str:
    """The key of a text's embedding in the cache."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def terms(text: str) -> list[str]:
    """Lowercased, camelCase-split, stemmed words of `text`, without stopwords."""
    words = _WORD.findall(split_identifier(text))
    return [_stem(w) for w in words if w not in STOPWORDS]


@dataclass(frozen=True, slots=True)
class Document:
    """One routable function."""

    #: Unique within an index: the qualified name in a gateway, the pool id in an evaluation.
    key: str
    name: str
    description: str = ""
    namespace: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    #: Prompts this function answers, written by its author: each is embedded as one more
    #: view of the function (see index.py), and their words join its BM25 terms.
    examples: tuple[str, ...] = ()
    #: The function's own side-effect annotations (MCP's readOnlyHint and destructiveHint). A
    #: catalog without them (BFCL) leaves both False: free-text routing then reads the description.
    read_only: bool = False
    destructive: bool = False

    @property
    def display_name(self) -> str:
        return split_identifier(f"{self.namespace}.{self.name}" if self.namespace else self.name)

    def _parameters(self) -> Iterator[tuple[str, str, list[str]]]:
        properties = self.parameters.get("properties")
        if not isinstance(properties, Mapping):
            return
        for name, schema in properties.items():
            if not isinstance(schema, Mapping):
                continue
            enum = schema.get("enum") or schema.get("items", {}).get("enum") or []
            yield str(name), str(schema.get("description") or ""), [str(v) for v in enum]

    def dense_text(self) -> str:
        """Name words, description, then the parameters: what the embedding model reads."""
        text = f"{self.display_name}: {self.description.strip()}"
        params = []
        for name, description, enum in self._parameters():
            part = split_identifier(name)
            if description:
                part += f" ({description.strip().rstrip('.')})"
            if enum:
                part += " [" + ", ".join(enum[:8]) + "]"
            params.append(part)
        if params:
            text += " Parameters: " + "; ".join(params)
        return text

    def description_text(self) -> str:
        """The description alone (the name when there is none): the second dense view."""
        return self.description.strip() or self.display_name

    def lexical_terms(self) -> list[str]:
        """BM25 terms; the name counts twice, as it is the densest description there is."""
        name = terms(self.display_name)
        found = name * 2 + terms(self.description)
        for pname, description, enum in self._parameters():
            found += terms(pname) + terms(description) + terms(" ".join(enum))
        return found

    def text_hash(self) -> str:
        """Changes whenever anything the router reads changes (the full text and the examples)."""
        if not self.examples:
            return text_hash(self.dense_text())
        return text_hash("\n".join((self.dense_text(), *self.examples)))
