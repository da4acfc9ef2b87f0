"""What a function does to data, from its annotations or, without them, from its words.

A catalog whose author annotated it (MCP's readOnlyHint and destructiveHint, toolmesh's
`read_only=` and `destructive=`) is taken at its word: a function not marked read-only
changes data whatever its verb. The unit of "annotated" is the namespace (a module or a
toolset, written by one author): when any of its functions carries an annotation, the
others' silence means "not read-only". A catalog without annotations (BFCL) is read from
the verbs of the description and the name; an unknown verb counts as not changing data,
as routing must not get worse on such catalogs (the gateway's confirmation step still
guards what runs).
"""

from __future__ import annotations

import functools
import re

from toolmesh.router.safety.intent import read_intent
from toolmesh.router.safety.verbs import Effect, base, effect_of_verb
from toolmesh.router.search.text import Document, split_identifier

_WORD = re.compile(r"[A-Za-z]+")
# Openings of descriptions that say nothing yet: "This function adds ...", "Used to list ...".
_PREAMBLE = re.compile(
    r"^(?:this|the|a|an)?\s*(?:function|method|api|endpoint|tool|operation)?\s*(?:is\s+)?"
    r"(?:used\s+to|will|can|helps?\s+(?:to\s+)?|allows?\s+(?:you\s+)?to)?\s*",
    re.I,
)
_HTTP_READ = re.compile(r"\b(?:HTTP\s+)?(?:GET|HEAD)\s+request", re.I)


def effect(doc: Document, annotated: bool) -> Effect:
    """What calling `doc`'s function does; `annotated`: its namespace carries annotations."""
    if doc.destructive:
        return Effect.DESTROY
    if doc.read_only:
        return Effect.READ
    if annotated:
        return Effect.WRITE
    return _from_words(doc.name, doc.description)


def answers_question(doc: Document) -> bool:
    """Whether the function's description leads with an answer ("Check the supplier's stock
    ..."; the name's verb when there is no description), whatever else it does. Not "...
    and returns the new order": most functions that change data return something."""
    return _answers(doc.name, doc.description)


@functools.lru_cache(maxsize=8192)
def _answers(name: str, description: str) -> bool:
    lead = _lead_verb(description)
    if lead is not None:
        return effect_of_verb(*lead) is Effect.READ
    first = _name_verbs(name)[:1]
    return bool(first) and effect_of_verb(first[0]) is Effect.READ


@functools.lru_cache(maxsize=8192)
def _from_words(name: str, description: str) -> Effect:
    """The description's leading verb says what the function does ("Calculates the sum ...");
    without a known one, the first verb of the name ("Hotels_2_BookHouse": book)."""
    if _HTTP_READ.search(_first_sentence(description)):
        return Effect.READ  # "Sends a GET request ...": GET and HEAD are safe methods (RFC 9110)
    lead = _lead_verb(description)
    if lead is not None:
        found = effect_of_verb(*lead)
        if found is not None:
            return found
    for verb in _name_verbs(name):
        found = effect_of_verb(verb, description)
        if found is not None:
            return found
    return Effect.READ


def own_verbs(doc: Document) -> frozenset[str]:
    """The verbs the function's author uses for it, in base form: the words of its name, its
    description's leading verb, and the verbs its examples lead with ("buy one headlamp").
    A prompt that asks for one of them asks for this function in its author's words."""
    return _own_verbs(doc.name, doc.description, doc.examples)


@functools.lru_cache(maxsize=8192)
def _own_verbs(name: str, description: str, examples: tuple[str, ...]) -> frozenset[str]:
    found = {base(w) for w in _name_verbs(name)}
    lead = _lead_verb(description)
    if lead is not None:
        found.add(base(lead[0]))
    for example in examples:
        found |= read_intent(example).leads
    return frozenset(found)


def _name_verbs(name: str) -> list[str]:
    """The first word of each part of the name's last segment: a verb leads its part
    (`Hotels_2_BookHouse`: hotels, book), while later words are its objects
    (`filterBooksByAuthor`: filter, not books)."""
    last = name.rsplit(".", 1)[-1]
    firsts = (split_identifier(part).split()[:1] for part in re.split(r"[_\-]+", last))
    return [words[0] for words in firsts if words and words[0].isalpha()]


def _first_sentence(description: str) -> str:
    return description.strip().split(". ", 1)[0]


def _lead_verb(description: str) -> tuple[str, str] | None:
    """The description's first word after any preamble, and the rest of its first sentence."""
    sentence = _PREAMBLE.sub("", _first_sentence(description), count=1)
    match = _WORD.search(sentence)
    if match is None:
        return None
    return match.group(), sentence[match.end() :]
