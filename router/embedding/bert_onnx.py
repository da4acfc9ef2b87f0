"""A BERT encoder as an ONNX graph, written with `onnx.helper` from safetensors weights.

No torch: the weights are read with safetensors' numpy API and every layer is
spelled out in standard ONNX operators (opset 17). The graph takes
``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64, ``[batch,
seq]``) and returns ``last_hidden_state`` (float32, ``[batch, seq, hidden]``);
pooling and normalisation happen in `toolmesh.router.embedding.embedder`, the same way
for this graph and for any model a user brings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "last_hidden_state"

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class BertShape:
    """The few numbers of a BERT `config.json` the graph needs."""

    hidden: int
    heads: int
    layers: int
    layer_norm_eps: float

    @classmethod
    def from_config(cls, path: Path) -> BertShape:
        config = json.loads(path.read_text())
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"{path}: only hidden_act 'gelu' is supported, got {config['hidden_act']!r}")
        return cls(
            hidden=int(config["hidden_size"]),
            heads=int(config["num_attention_heads"]),
            layers=int(config["num_hidden_layers"]),
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
        )


class _Graph:
    """Accumulates nodes and initializers, naming intermediate values uniquely."""

    def __init__(self, weights: Mapping[str, NDArray[np.float32]]) -> None:
        self.weights = weights
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def const(self, name: str, value: NDArray[np.generic]) -> str:
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def weight(self, key: str, transpose: bool = False) -> str:
        value = self.weights[key]
        if transpose:
            # torch Linear stores [out, in]; MatMul wants [in, out].
            value = np.ascontiguousarray(value.T)
        return self.const(key, value.astype(np.float32))

    def linear(self, x: str, prefix: str) -> str:
        product = self.op("MatMul", x, self.weight(f"{prefix}.weight", transpose=True))
        return self.op("Add", product, self.weight(f"{prefix}.bias"))

    def layer_norm(self, x: str, prefix: str, eps: float) -> str:
        scale, bias = self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=eps)


def _strip_prefix(weights: Mapping[str, NDArray[np.float32]]) -> dict[str, NDArray[np.float32]]:
    # Checkpoints saved from BertForX prefix every key with "bert."; BertModel's don't.
    return {key.removeprefix("bert."): value for key, value in weights.items()}


def build_bert_graph(
    weights: Mapping[str, NDArray[np.float32]], shape: BertShape, progress: Progress | None = None
) -> onnx.ModelProto:
    """The encoder for `weights` (a BertModel state dict as numpy arrays)."""
    say = progress or (lambda _: None)
    g = _Graph(_strip_prefix(weights))
    head_dim = shape.hidden // shape.heads
    eps = shape.layer_norm_eps

    ids, mask, types = INPUT_NAMES
    say("embeddings")
    seq_len = g.op(
        "Slice",
        g.op("Shape", ids),
        g.const("one_i64", np.array([1], np.int64)),
        g.const("two_i64", np.array([2], np.int64)),
    )
    positions = g.op(
        "Range",
        g.const("zero_scalar", np.array(0, np.int64)),
        g.op("Squeeze", seq_len, g.const("axis0", np.array([0], np.int64))),
        g.const("one_scalar", np.array(1, np.int64)),
    )
    embedded = g.op(
        "Add",
        g.op(
            "Add",
            g.op("Gather", g.weight("embeddings.word_embeddings.weight"), ids),
            g.op("Gather", g.weight("embeddings.position_embeddings.weight"), positions),
        ),
        g.op("Gather", g.weight("embeddings.token_type_embeddings.weight"), types),
    )
    x = g.layer_norm(embedded, "embeddings.LayerNorm", eps)

    # Padding gets a large negative bias before the softmax: [batch, 1, 1, seq].
    mask_f = g.op("Cast", mask, to=TensorProto.FLOAT)
    inverted = g.op("Sub", g.const("one_f", np.array(1.0, np.float32)), mask_f)
    bias = g.op(
        "Unsqueeze",
        g.op("Mul", inverted, g.const("neg_large", np.array(-1e9, np.float32))),
        g.const("axes12", np.array([1, 2], np.int64)),
    )
    split_heads = g.const("split_heads", np.array([0, 0, shape.heads, head_dim], np.int64))
    merge_heads = g.const("merge_heads", np.array([0, 0, shape.hidden], np.int64))
    scale = g.const("attn_scale", np.array(1.0 / np.sqrt(head_dim), np.float32))
    sqrt2 = g.const("sqrt2", np.array(np.sqrt(2.0), np.float32))
    half = g.const("half", np.array(0.5, np.float32))
    one = "one_f"

    for i in range(shape.layers):
        say(f"layer {i + 1}/{shape.layers}")
        p = f"encoder.layer.{i}"

        def heads(name: str, perm: list[int], x: str = x, p: str = p) -> str:
            projected = g.linear(x, f"{p}.attention.self.{name}")
            return g.op("Transpose", g.op("Reshape", projected, split_heads), perm=perm)

        q = heads("query", [0, 2, 1, 3])
        k = heads("key", [0, 2, 3, 1])
        v = heads("value", [0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge_heads)
        attended = g.linear(context, f"{p}.attention.output.dense")
        x = g.layer_norm(g.op("Add", attended, x), f"{p}.attention.output.LayerNorm", eps)

        inner = g.linear(x, f"{p}.intermediate.dense")
        # Exact GELU, as BERT's "gelu": 0.5 * x * (1 + erf(x / sqrt(2))).
        erf = g.op("Erf", g.op("Div", inner, sqrt2))
        gelu = g.op("Mul", g.op("Mul", inner, half), g.op("Add", erf, one))
        out = g.linear(gelu, f"{p}.output.dense")
        x = g.layer_norm(g.op("Add", out, x), f"{p}.output.LayerNorm", eps)

    g.nodes.append(helper.make_node("Identity", [x], [OUTPUT_NAME]))
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"]) for n in INPUT_NAMES]
    output = helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", "seq", shape.hidden])
    graph = helper.make_graph(g.nodes, "bert_encoder", inputs, [output], g.initializers)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="toolmesh.router"
    )
    model.ir_version = 8  # what every onnxruntime since 1.10 reads
    onnx.checker.check_model(model, full_check=True)
    return model
