"""The ONNX model reproduces sentence-transformers' all-MiniLM-L6-v2 embeddings.

reference/reference_embeddings.json was made once with sentence-transformers
(torch) by reference/make_reference.py, in a separate venv; see that script.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from toolmesh.router.embedding.embedder import OnnxEmbedder
from toolmesh.router.embedding.model import BuiltModel

REFERENCE = json.loads((Path(__file__).parent / "reference" / "reference_embeddings.json").read_text())


def cosines(embedder: OnnxEmbedder, one_at_a_time: bool) -> np.ndarray:
    sentences = REFERENCE["sentences"]
    expected = np.array(REFERENCE["embeddings"], np.float32)
    got = np.vstack([embedder.embed([s]) for s in sentences]) if one_at_a_time else embedder.embed(sentences)
    return (got * expected).sum(axis=1)


def test_the_reference_covers_varied_sentences(built_model: BuiltModel) -> None:
    sentences = REFERENCE["sentences"]
    assert len(sentences) == 30 and len(REFERENCE["embeddings"][0]) == 384
    tokenizer = Tokenizer.from_file(str(built_model.tokenizer))
    tokenizer.no_truncation()
    lengths = [len(tokenizer.encode(s).ids) for s in sentences]
    # Past the bundled tokenizer's 128, and past the model's 256.
    assert any(128 < n <= 256 for n in lengths) and max(lengths) > 256


@pytest.mark.parametrize("one_at_a_time", [False, True], ids=["batched", "single"])
def test_fp32_matches_sentence_transformers(fp32_embedder: OnnxEmbedder, one_at_a_time: bool) -> None:
    assert cosines(fp32_embedder, one_at_a_time).min() >= 0.999


@pytest.mark.parametrize("one_at_a_time", [False, True], ids=["batched", "single"])
def test_int8_stays_close_to_sentence_transformers(int8_embedder: OnnxEmbedder, one_at_a_time: bool) -> None:
    found = cosines(int8_embedder, one_at_a_time)
    assert found.mean() >= 0.99 and found.min() >= 0.97
