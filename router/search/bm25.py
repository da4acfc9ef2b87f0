"""Okapi BM25 over documents that come and go: the router's lexical half."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

#: Term-frequency saturation and length normalisation (the usual values).
DEFAULT_K1 = 1.2
DEFAULT_B = 0.75


class BM25:
    """Documents live in integer slots (the hybrid index's rows); `scores` returns one value per slot."""

    def __init__(self, k1: float = DEFAULT_K1, b: float = DEFAULT_B) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[int, int]] = {}
        self._docs: dict[int, Counter[str]] = {}
        self._lengths = np.zeros(0, np.float32)
        self._total_length = 0
        # Per term: its slots and each slot's BM25 contribution. These depend on the document
        # count and average length too, so any change to the corpus makes them all stale;
        # they are recomputed per term, on first use after a change.
        self._weights: dict[str, tuple[NDArray[np.int64], NDArray[np.float32]]] = {}

    def __len__(self) -> int:
        return len(self._docs)

    def add(self, slot: int, terms: Sequence[str]) -> None:
        if slot in self._docs:
            self.remove(slot)
        counts = Counter(terms)
        self._docs[slot] = counts
        if slot >= len(self._lengths):
            grown = np.zeros(max(slot + 1, 2 * len(self._lengths), 64), np.float32)
            grown[: len(self._lengths)] = self._lengths
            self._lengths = grown
        self._lengths[slot] = len(terms)
        self._total_length += len(terms)
        for term, count in counts.items():
            self._postings.setdefault(term, {})[slot] = count
        self._weights.clear()

    def remove(self, slot: int) -> None:
        counts = self._docs.pop(slot, None)
        if counts is None:
            return
        self._total_length -= int(self._lengths[slot])
        self._lengths[slot] = 0
        for term in counts:
            posting = self._postings[term]
            del posting[slot]
            if not posting:
                del self._postings[term]
        self._weights.clear()

    def _term_weights(self, term: str) -> tuple[NDArray[np.int64], NDArray[np.float32]] | None:
        found = self._weights.get(term)
        if found is None:
            posting = self._postings.get(term)
            if posting is None:
                return None
            n = len(self._docs)
            average = self._total_length / n or 1.0
            slots = np.fromiter(posting.keys(), np.int64, len(posting))
            tf = np.fromiter(posting.values(), np.float32, len(posting))
            idf = math.log(1.0 + (n - len(slots) + 0.5) / (len(slots) + 0.5))
            norm = self.k1 * (1.0 - self.b + self.b * self._lengths[slots] / average)
            found = slots, (idf * tf * (self.k1 + 1.0) / (tf + norm)).astype(np.float32)
            self._weights[term] = found
        return found

    def scores(self, query_terms: Sequence[str], size: int) -> NDArray[np.float32]:
        """BM25 of every slot below `size` for the query (0 where nothing matches)."""
        result = np.zeros(size, np.float32)
        for term in set(query_terms):
            found = self._term_weights(term)
            if found is not None:
                slots, weights = found
                result[slots] += weights
        return result
