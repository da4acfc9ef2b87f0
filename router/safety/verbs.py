"""What a verb does to data: read it, change it, or destroy it.

Shared by the two sides of the free-text safety rules (safety.py): a function's name and
description (effects.py) and a prompt (intent.py) are read with the same word lists, so
"remove" means the same thing in `remove_item` and in "remove HW-001".
"""

from __future__ import annotations

import enum
import re

from toolmesh.router.search.text import words


class Effect(enum.Enum):
    """What calling a function (or doing what a prompt asks) does to data."""

    READ = "read"
    WRITE = "write"
    DESTROY = "destroy"

    @property
    def mutating(self) -> bool:
        return self is not Effect.READ


# Verbs of functions that answer something and change nothing.
READ_VERBS = words(
    """get list find search check calculate calc compute convert estimate count show describe look lookup
    return retrieve fetch query view read display tell answer summarise summarize extract analyze analyse
    predict validate verify identify locate determine evaluate solve parse detect recommend suggest
    compare translate track is has browse inspect explain measure forecast sum multiply subtract divide
    average plan see give know understand learn review hear provide filter sort"""
)
# Verbs that change data without destroying any (an order can be cancelled, a price set again).
WRITE_VERBS = words(
    """add create update set send book order reprice restock transfer buy purchase place pay post put
    write insert save store upload edit modify change rename move assign grant register submit schedule
    reschedule reserve rent enable disable publish share invite subscribe install deploy apply approve
    charge refund increase decrease adjust replace upsert import mark tag attach configure reset restart
    activate lock unlock commit merge push archive sync email notify make"""
)
# Verbs whose effect cannot be undone by calling the function again.
DESTROY_VERBS = words(
    """delete remove cancel drop purge erase revoke destroy wipe clear truncate terminate kill unsubscribe
    uninstall discard void shred evict deactivate stop"""
)

_ENDINGS = ("ies", "es", "s", "ing", "ed")
_TO_DESTINATION = re.compile(r"\b(?:to|into|onto)\b")


def base(word: str) -> str:
    """The verb's base form as the lists hold it: "Deletes" -> "delete", "searching" -> "search",
    "getting" -> "get"."""
    word = word.lower()
    if word in READ_VERBS or word in WRITE_VERBS or word in DESTROY_VERBS:
        return word
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            stem = word[: -len(ending)]
            undoubled = stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else stem  # "stopped"
            for candidate in (stem, stem + "e", stem + "y" if ending == "ies" else stem, undoubled):
                if candidate in READ_VERBS or candidate in WRITE_VERBS or candidate in DESTROY_VERBS:
                    return candidate
    return word


def effect_of_verb(word: str, rest: str = "") -> Effect | None:
    """The effect `word` names (None: not a verb the lists know). `rest` is the text after it:
    "add" changes data when it adds something *to* somewhere ("add a user to the group"), and
    computes when it does not ("add two numbers")."""
    verb = base(word)
    if verb in DESTROY_VERBS:
        return Effect.DESTROY
    if verb == "add":
        return Effect.WRITE if _TO_DESTINATION.search(rest) else Effect.READ
    if verb in WRITE_VERBS:
        return Effect.WRITE
    if verb in READ_VERBS:
        return Effect.READ
    return None
