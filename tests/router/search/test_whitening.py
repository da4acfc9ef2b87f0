"""The examples' whitening: the numbers on their own, then on a real ONNX session."""

from __future__ import annotations

import numpy as np
import pytest

from toolmesh.router.embedding.embedder import OnnxEmbedder, normalise
from toolmesh.router.search.index import FunctionIndex, Fusion
from toolmesh.router.search.text import Document
from toolmesh.router.search.views import ExampleViews
from toolmesh.router.search.whitening import within_whitening


def test_whitening_shrinks_what_varies_within_a_function() -> None:
    """Axis 0 is how a prompt is phrased (it varies within each function), axis 1 what it
    asks for (+ for function 0, - for function 1), axis 2 what every prompt shares. A query
    phrased like function 1's last example but asking for function 0: its best raw example
    is function 1's; whitened, function 0's."""
    phrasing = {0: (-1.5, -0.5, 0.5), 1: (-0.5, 0.5, 1.5)}
    rows = normalise(np.array([[p, 0.3 if f == 0 else -0.3, 1.0, 0.0] for f in (0, 1) for p in phrasing[f]]))
    counts = np.array([3, 3], np.int64)
    query = normalise(np.array([[1.5, 0.3, 1.0, 0.0]]))[0]
    assert np.argmax(rows @ query) >= 3
    whitening = within_whitening(rows, counts)
    assert whitening is not None
    assert np.argmax(normalise(rows @ whitening) @ (query @ whitening)) < 3
    # Shrunk all the way to the identity, it is no whitening at all.
    identity = within_whitening(rows, counts, shrinkage=0.999999)
    assert identity is not None and np.allclose(identity, np.eye(4), atol=1e-3)


@pytest.mark.parametrize(
    ("rows", "counts"),
    [
        (np.eye(3, 4, dtype=np.float32), np.array([1, 1, 1])),  # no function with two examples
        (np.ones((4, 4), np.float32) / 2, np.array([2, 2])),  # two examples, no spread
    ],
)
def test_whitening_needs_something_to_learn_from(rows: np.ndarray, counts: np.ndarray) -> None:
    assert within_whitening(rows, counts) is None
    assert within_whitening(np.ones((4, 4), np.float32), np.array([4]), shrinkage=1.0) is None


SPECIES = [
    Document(
        f"classify_{kind}",
        f"classify_{kind}",
        f"Identify the species of a {kind} in a photo.",
        examples=(
            f"Could you suggest a tool that tells me which {kind} is in this picture?",
            f"{kind} species from photo",
            f"I took a snapshot in my garden this morning and I want to know what kind of {kind} it is,"
            " what can I use?",
        ),
    )
    for kind in ("bird", "flower", "mushroom")
]
PLAIN = Document("send_email", "send_email", "Send an email message to someone.")


def test_the_phrasing_of_examples_stops_counting(int8_embedder: OnnxEmbedder) -> None:
    """Three functions whose examples say the same three ways: whitened, each function's
    examples score alike for a query (what varies among them is how they are phrased), and a
    function without examples keeps exactly the score it had."""
    prompt = "Could you suggest a tool that tells me which toadstool is in this picture?"
    vector = int8_embedder.embed([prompt])[0]
    found = {}
    for whitening in (None, 0.3):
        index = FunctionIndex(int8_embedder, fusion=Fusion(whitening=whitening))
        index.sync([*SPECIES, PLAIN])
        assert index.search(prompt, 1)[0].key == "classify_mushroom"
        best, centroid = index._views.scores(vector, len(SPECIES) + 1)
        found[whitening] = (best - centroid)[:3], index.score_all(prompt, vector)
    raw_gap, (_, raw_dense, _) = found[None]
    white_gap, (_, white_dense, _) = found[0.3]
    assert raw_gap.min() > 0.05 and white_gap.max() < 0.01
    email = index.slot_keys().index("send_email")
    assert white_dense[email] == raw_dense[email]


def test_a_few_learned_rows_reuse_the_whitening_and_many_fit_it_again() -> None:
    """Fitting is the costly part of a rebuild: one prompt learned from use (a row added to
    one function) keeps the map; rows changed past REFIT_CHANGE of those it was fitted on,
    or a function's examples dropped and back, fit it again."""
    rng = np.random.default_rng(7)
    views = ExampleViews(8)
    for slot in range(10):
        views.set(slot, normalise(rng.standard_normal((4, 8)).astype(np.float32)))
    query = normalise(rng.standard_normal((1, 8)).astype(np.float32))[0]
    views.scores(query, 10)
    fitted = views._whitening
    assert fitted is not None
    one_more = np.concatenate([views._rows[0], normalise(rng.standard_normal((1, 8)).astype(np.float32))])
    views.set(0, one_more)
    views.set(1, views._rows[1].copy())  # the same rows again: no change at all
    views.scores(query, 10)
    assert views._whitening is fitted
    for slot in range(5):
        views.set(slot, normalise(rng.standard_normal((4, 8)).astype(np.float32)))
    views.scores(query, 10)
    assert views._whitening is not fitted
