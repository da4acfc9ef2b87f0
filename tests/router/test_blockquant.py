"""8-bit block-wise MatMulNBits reproduces the fp32 MatMul (+ bias) it replaces, in onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

from toolmesh.router.blockquant import BLOCK, dequantize_blocks, quantize_blocks, to_matmul_nbits


def linear_model(weight: NDArray[np.float32], bias: NDArray[np.float32] | None) -> onnx.ModelProto:
    k, n = weight.shape
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y" if bias is None else "product"], name="linear")]
    initializers = [numpy_helper.from_array(weight, "w")]
    if bias is not None:
        nodes.append(helper.make_node("Add", ["product", "b"], ["y"], name="bias"))
        initializers.append(numpy_helper.from_array(bias, "b"))
    graph = helper.make_graph(
        nodes,
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", n])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def run(model: onnx.ModelProto, x: NDArray[np.float32]) -> NDArray[np.float32]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": x})
    return np.asarray(y, np.float32)


@pytest.mark.parametrize("k", [2 * BLOCK, BLOCK + 72], ids=["whole-blocks", "padded"])
def test_block_codes_round_trip_within_half_a_step(k: int) -> None:
    weight = np.random.default_rng(1).normal(size=(k, 48)).astype(np.float32)
    weight[:BLOCK, 3] = 0.0  # an all-zero block
    codes, scales = quantize_blocks(weight)
    blocks = -(-k // BLOCK)
    assert codes.shape == (48, blocks, BLOCK) and scales.shape == (48 * blocks,)
    restored = dequantize_blocks(codes, scales, k)
    step = np.repeat(scales.reshape(48, blocks), BLOCK, axis=1)[:, :k].T
    assert np.all(np.abs(restored - weight) <= step / 2 + 1e-7)
    assert np.all(restored[:BLOCK, 3] == 0.0)


@pytest.mark.parametrize("with_bias", [True, False], ids=["bias-folded", "no-bias"])
def test_matmul_nbits_matches_the_fp32_linear(with_bias: bool) -> None:
    rng = np.random.default_rng(2)
    weight = rng.normal(size=(3 * BLOCK, 96)).astype(np.float32)
    bias = rng.normal(size=96).astype(np.float32) if with_bias else None
    model = linear_model(weight, bias)
    x = rng.normal(size=(1, 9, 3 * BLOCK)).astype(np.float32)
    expected = run(model, x)
    to_matmul_nbits(model, ["linear"])
    onnx.checker.check_model(model)
    assert [node.op_type for node in model.graph.node] == ["MatMulNBits"]
    assert "w" not in {tensor.name for tensor in model.graph.initializer}
    got = run(model, x)
    # int8 weights and int8 activations per block: ~1 % of the output's range, not more.
    assert np.abs(got - expected).max() < 0.02 * np.abs(expected).max()
    cosines = (got * expected).sum(-1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(expected, axis=-1)
    assert cosines.min() > 0.9995


def test_only_constant_weight_matmuls_are_replaced() -> None:
    model = linear_model(np.ones((BLOCK, 4), np.float32), None)
    model.graph.node[0].op_type = "Gemm"
    with pytest.raises(ValueError, match="not a MatMul with a constant weight"):
        to_matmul_nbits(model, ["linear"])
