"""Free-text safety: "no function fits" is better than a harmful guess.

verbs.py    the verbs that read, write and destroy
intent.py   what a prompt asks: a command, a question, a prohibition; how much it says
effects.py  what a function does to data, from its annotations or its words
rules.py    which candidate may be the match (`profiles`, `choose`)
"""

from __future__ import annotations

from toolmesh.router.safety.rules import Declined, Profile, choose, profiles

__all__ = ["Declined", "Profile", "choose", "profiles"]
