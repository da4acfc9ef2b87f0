"""Sentence embeddings: the `Embedder` seam and its ONNX Runtime implementation.

`OnnxEmbedder` runs any ONNX sentence-embedding model with a `tokenizer.json`:
a graph that returns token states (``[batch, seq, hidden]``) is mean-pooled over
the attention mask, one that returns sentence vectors (``[batch, hidden]``) is
used as it is; either way the result is L2-normalised, so a dot product is the
cosine similarity.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

#: Longest input in tokens; the bundled tokenizer.json says 128, the model was trained on 256.
DEFAULT_MAX_TOKENS = 256
#: Texts embedded in one run; they are sorted by length first so batches pad little.
BATCH_SIZE = 32
#: onnxruntime graph rewrites left out. Its SkipLayerNormalization kernel (what the
#: residual Add + LayerNormalization of every BERT block becomes) measured 4-6x slower
#: than the two ops it replaces (50 vs 12 us for 20 tokens, onnxruntime 1.31, one thread):
#: twelve of them were ~15 % of a prompt's embedding.
UNFUSED = ["SkipLayerNormFusion"]

Vectors = NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors. The router depends only on this."""

    @property
    def model_id(self) -> str:
        """Identifies the model (and its settings): cached embeddings are keyed by it."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised row per text, shape ``(len(texts), dimension)``."""
        ...


def normalise(vectors: NDArray[np.floating]) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: Vectors = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit


class OnnxEmbedder:
    """An ONNX Runtime session plus a Hugging Face `tokenizers` tokenizer."""

    def __init__(
        self,
        model: Path,
        tokenizer: Path,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        threads: int = 1,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        padding = self._tokenizer.padding or {}
        # Pad to the longest text of each batch instead of a fixed length.
        self._tokenizer.enable_padding(
            pad_id=int(padding.get("pad_id", 0)), pad_token=str(padding.get("pad_token", "[PAD]"))
        )
        self._tokenizer.enable_truncation(max_tokens)
        options = ort.SessionOptions()
        # One prompt is a small job: more than two threads cost more in hand-offs than they save.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Workers spin between the graph's many small nodes (waking a sleeping thread per node
        # would cost more than the node), but stop as soon as a run returns: between prompts
        # they would only burn the cores the gateway's event loop and the pods need.
        options.add_session_config_entry("session.force_spinning_stop", "1")
        # On x86 CPUs without VNNI, onnxruntime's u8s8 int8 kernels saturate each pair of products
        # at int16, which the smoothed model's full-range weights hit (batched cosine 0.958 instead
        # of 0.997). This makes it use exact kernels there; on VNNI CPUs it changes nothing.
        options.add_session_config_entry("session.x64quantprecision", "1")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Inputs change shape with every text: a memory arena would only grow.
        options.enable_cpu_mem_arena = False
        self._session = ort.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"], disabled_optimizers=UNFUSED
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        if "input_ids" not in self._inputs:
            raise ValueError(f"{model}: the model has no 'input_ids' input ({sorted(self._inputs)})")
        output = self._session.get_outputs()[0]
        self._output = output.name
        self._pooled = len(output.shape) == 2
        dimension = output.shape[-1]
        if not isinstance(dimension, int):
            dimension = self._run(["probe"]).shape[1]
        self._dimension = int(dimension)
        stat = model.stat()
        identity = f"{model.resolve()}:{stat.st_size}:{stat.st_mtime_ns}:{max_tokens}"
        self._model_id = hashlib.sha256(identity.encode()).hexdigest()[:16]

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def _run(self, texts: Sequence[str]) -> Vectors:
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feeds["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        (states,) = self._session.run([self._output], feeds)
        if self._pooled:
            return normalise(states)
        weights = mask[:, :, None].astype(np.float32)
        summed = (states * weights).sum(axis=1)
        return normalise(summed / np.maximum(weights.sum(axis=1), 1e-9))

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dimension), np.float32)
        if len(texts) <= BATCH_SIZE:
            return self._run(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        result = np.empty((len(texts), self._dimension), np.float32)
        for start in range(0, len(order), BATCH_SIZE):
            chunk = order[start : start + BATCH_SIZE]
            result[chunk] = self._run([texts[i] for i in chunk])
        return result
