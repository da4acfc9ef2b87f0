"""What a prompt asks for: an answer, a change, that something not be done, or too little to say.

Read from the words alone, clause by clause ("I changed my mind, cancel order 9" has a
command in its second clause). Requests are peeled off first, so "can you remove HW-001?"
and "could you please delete it" are commands, not questions, and so is any verb a
request leads to ("help me initialize the map") unless it asks for information ("can you
tell me ..."). "Should I remove HW-001?" and "can I remove ...?" stay questions: they ask
for advice or permission, not for the removal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from toolmesh.router.safety.verbs import DESTROY_VERBS, READ_VERBS, WRITE_VERBS, base
from toolmesh.router.search.text import STOPWORDS, words

_CLAUSES = re.compile(r"[,;:.!?]+\s*|\s+(?:and then|then|but)\s+")
_TOKEN = re.compile(r"[\w'-]+")
# Words that open a clause without being part of what it says.
_OPENING = re.compile(r"^(?:(?:ok(?:ay)?|so|now|hey|hi|hello|yes|right|and|or|also|just|then)\s+)+", re.I)
# Openings that ask for something to be done: the verb after them is what is asked for, a
# command unless it asks for information ("can you tell me ...", "I'd like to know ...").
_REQUEST = re.compile(
    r"^(?:(?:kindly|please|pls)\s+"
    r"|(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+)?(?:(?:help|assist)\s+(?:me|us)\s+(?:to|in|with)?\s*)?"
    r"|(?:can|could|shall)\s+we\s+"
    r"|(?:i|we)(?:'d| would| want| need| wish)(?: like)?\s+(?:you\s+)?to\s+"
    r"|(?:go ahead and|let's|lets|let us|help me|help us|try to)\s+)+",
    re.I,
)
_NEGATION = re.compile(r"^(?:don'?t|do not|never|no need to|not)\b", re.I)
_QUESTION = re.compile(
    r"^(?:is|are|was|were|am|isn't|aren't|does|do|did|doesn't|can|could|may|might|should|shall|would|"
    r"will|has|have|had|what|what's|whats|which|where|where's|when|why|who|whom|whose|how|how's)\b",
    re.I,
)
# Asking for information with a verb ("tell me about ...") or none ("price of HW-001",
# "stock level for GD-002"): a noun or two, then of/for/about/on.
_LOOKUP_PHRASE = re.compile(
    r"^(?:tell me|info|information|details?)\b|^(?:[a-z]+\s+){1,2}(?:of|for|about|on)\b", re.I
)
_SAME = re.compile(r"^(?:the\s+)?same\b", re.I)
_ID = re.compile(r"^(?=.*\d)(?=.*[a-z])[\w-]+$|^\w+-\d[\w-]*$", re.I)
# Words that say nothing about which function fits, beyond the router's stopwords.
_FILLER = words(
    """please pls thanks thank hey hi hello ok okay just now also yes no sure about tell show let lets
    like want need would could not don't dont never any anything all"""
)
#: A prompt with fewer content words than this (ids aside) says too little to change data on.
MIN_CONTENT_WORDS = 2


@dataclass(frozen=True, slots=True)
class Intent:
    """What a prompt asks for, as far as the safety rules need to know."""

    #: It asks for an answer: a question, a lookup ("tell me about ...", "price of ...").
    question: bool
    #: It says that something must not be done ("don't delete HW-001").
    prohibition: bool
    #: A clause opens as a question, a lookup or with a verb that looks something up ("is
    #: ...", "price of ...", "show ..."): a surer sign than a question mark alone.
    asks: bool
    #: The base forms of the verbs that lead its clauses, and those of them that change data.
    leads: frozenset[str]
    commands: frozenset[str]
    #: How many content words it has (no stopwords, fillers or ids), and how many ids ("HW-001").
    content: int
    ids: int

    @property
    def decided(self) -> bool:
        """Whether it says on its own what it wants; a fragment ("the same for ORD-4", "and
        in Paris?") continues the turn before it."""
        return self.prohibition or self.asks or bool(self.commands)

    @property
    def destroys(self) -> bool:
        """Whether a clause leads with a verb that destroys data ("delete it")."""
        return not self.commands.isdisjoint(DESTROY_VERBS)

    @property
    def low_content(self) -> bool:
        # An id is what a command acts on ("remove HW-001"), so it counts there; alone it
        # names no task ("sku HW-001").
        return self.content + (self.ids if self.commands else 0) < MIN_CONTENT_WORDS

    def commands_function(self, own_verbs: frozenset[str]) -> bool:
        """Whether it asks for a change: a clause leads with a verb that changes data, or with
        one the function's author uses for it ("ship HW-001" for `ship_item`)."""
        return bool(self.commands) or not self.leads.isdisjoint(own_verbs)

    def names_function(self, own_verbs: frozenset[str]) -> bool:
        """Whether a clause leads with a verb the function's author uses for it."""
        return not self.leads.isdisjoint(own_verbs)


def read_intent(prompt: str) -> Intent:
    """Read `prompt` clause by clause: a clause led by a verb that changes data (or by any
    verb but one that looks something up, after a request) is a command; one that opens as
    a question or a lookup asks; one that opens with "don't"/"never" prohibits."""
    prompt = prompt.replace("\u2019", "'")  # the apostrophe phones type
    question = prohibition = asks = False
    leads: set[str] = set()
    commands: set[str] = set()
    for clause in _CLAUSES.split(prompt.strip()):
        opened = _OPENING.sub("", clause.strip(), count=1)
        bare = _REQUEST.sub("", opened, count=1)
        requested = bare != opened
        tokens = _TOKEN.findall(bare.lower())
        if not tokens:
            continue
        if _NEGATION.match(bare):
            prohibition = True
            continue
        lead = base(tokens[0])
        if lead in WRITE_VERBS or lead in DESTROY_VERBS:
            commands.add(lead)
        elif requested and lead not in READ_VERBS and lead not in STOPWORDS:
            commands.add(lead)  # "help me initialize ...": asked for, whatever the verb
        elif _SAME.match(bare):
            leads.add("same")  # "the same for ORD-4": whatever the turn before asked
        elif _QUESTION.match(bare) or lead in READ_VERBS or _LOOKUP_PHRASE.match(bare):
            question = asks = True
        else:
            leads.add(lead)
    question = question or (prompt.rstrip().endswith("?") and not commands)
    tokens = _TOKEN.findall(prompt.lower())
    ids = sum(1 for t in tokens if _ID.match(t))
    content = sum(1 for t in tokens if not _ID.match(t) and t not in STOPWORDS and t not in _FILLER)
    return Intent(question, prohibition, asks, frozenset(leads | commands), frozenset(commands), content, ids)
