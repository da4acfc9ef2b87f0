"""Which candidate may be the match: "no function fits" is better than a harmful guess.

The ranking is left as it is; only the match is decided here. A candidate that clears the
threshold is passed over (and the answer says why) when:

- it changes data and the prompt says not to do something ("don't delete HW-001");
- it changes data and the prompt has too few words to ask for it ("item", "sku HW-001");
- it changes data, the prompt asks a question or looks something up ("is HW-001 in
  stock?", "price of HW-001") and asks for no change, and the function's words do not
  lead with an answer (`check_supplier` answers questions even when not read-only);
- it destroys data and its score is less than DESTRUCTIVE_MARGIN ahead of the best
  candidate that destroys nothing, or under the threshold plus DESTRUCTIVE_EXTRA unless
  the prompt leads with a verb its author uses for it ("remove HW-001", `remove_item`)
  or with one that destroys ("we no longer sell it, delete it").

The match is then the best remaining candidate that clears the threshold, else None.
Commands ("remove HW-001", "can you add 3 hats?") still reach functions that change data;
the gateway's confirmation step decides whether they run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from toolmesh.router.safety.effects import answers_question, effect, own_verbs
from toolmesh.router.safety.intent import Intent, read_intent
from toolmesh.router.safety.verbs import Effect
from toolmesh.router.search.index import Candidate, FunctionIndex

#: A function that destroys data needs this much more than the threshold...
DESTRUCTIVE_EXTRA = 0.1
#: ... and this lead over the best candidate that destroys nothing.
DESTRUCTIVE_MARGIN = 0.05

PROHIBITED = "the prompt says not to do something: it does not run a function that changes data"
TOO_SHORT = "too few words to run a function that changes data"
QUESTION = "a question does not run a function that changes data"
WEAK = "a function that destroys data needs a clearer match"
CLOSE = "a function that destroys data needs a clear lead over the functions that do not"


@dataclass(frozen=True, slots=True)
class Profile:
    """What the rules read about one candidate."""

    effect: Effect
    #: Its words lead with an answer ("Check ...", `check_supplier`).
    answers: bool = False
    #: The verbs its author uses for it (effects.own_verbs).
    verbs: frozenset[str] = frozenset()


READ_ONLY = Profile(Effect.READ)


@dataclass(frozen=True, slots=True)
class Declined:
    """A candidate that cleared the threshold and was passed over, and why."""

    key: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.key, "reason": self.reason}


def profiles(index: FunctionIndex, candidates: Sequence[Candidate]) -> dict[str, Profile]:
    """The candidates' profiles (call under the lock that guards `index`)."""
    found = {}
    for candidate in candidates:
        doc = index.document(candidate.key)
        found[candidate.key] = Profile(
            effect(doc, index.annotated(doc.namespace)), answers_question(doc), own_verbs(doc)
        )
    return found


def choose(
    prompt: str,
    candidates: Sequence[Candidate],
    found: Mapping[str, Profile],
    threshold: float,
    context: str | None = None,
) -> tuple[str | None, list[Declined]]:
    """The match for `prompt` among `candidates` (best first), and those passed over. A
    candidate without a profile is taken as read-only: only the threshold applies to it.
    `context` is the session's previous prompt when `prompt` follows up on it."""
    declined: list[Declined] = []
    intent: Intent | None = None
    safe = [c.score for c in candidates if found.get(c.key, READ_ONLY).effect is not Effect.DESTROY]
    best_safe = max(safe, default=float("-inf"))
    for candidate in candidates:
        if candidate.score < threshold:
            break
        profile = found.get(candidate.key, READ_ONLY)
        if not profile.effect.mutating:
            return candidate.key, declined
        intent = intent or intent_of(prompt, context)  # only prompts that reach a mutating function
        reason = objection(intent, candidate, profile, threshold, best_safe)
        if reason is None:
            return candidate.key, declined
        declined.append(Declined(candidate.key, reason))
    return None, declined


def intent_of(prompt: str, context: str | None) -> Intent:
    """What `prompt` asks for; a follow-up that does not say it alone ("the same for ORD-4")
    asks for what the turn before did, while one that does ("is HW-002 in stock too?")
    keeps its own reading, whatever the turn before asked."""
    intent = read_intent(prompt)
    if context is None or intent.decided:
        return intent
    return read_intent(f"{context}. {prompt}")


def objection(
    intent: Intent, candidate: Candidate, profile: Profile, threshold: float, best_safe: float
) -> str | None:
    """Why a function that changes data must not be the match for this prompt (None: it may)."""
    if intent.prohibition:
        return PROHIBITED
    if intent.low_content:
        return TOO_SHORT
    if intent.question and not intent.commands_function(profile.verbs) and not profile.answers:
        return QUESTION
    if profile.effect is Effect.DESTROY:
        # Asked for in its author's words ("remove HW-001" for `remove_item`) or with a verb
        # that destroys ("delete it"), the prompt is as clear as a command gets; otherwise
        # the score must say it.
        named = intent.names_function(profile.verbs) or intent.destroys
        if not named and candidate.score < threshold + DESTRUCTIVE_EXTRA:
            return f"{WEAK} (score {candidate.score:.2f} < {threshold + DESTRUCTIVE_EXTRA:.2f})"
        if candidate.score - best_safe < DESTRUCTIVE_MARGIN:
            return f"{CLOSE} ({candidate.score - best_safe:.2f} ahead, < {DESTRUCTIVE_MARGIN})"
    return None
