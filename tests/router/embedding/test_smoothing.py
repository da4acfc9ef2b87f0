"""Activation smoothing changes no fp32 output, and only ever quietens the loud channels."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from toolmesh.router.embedding.bert_onnx import INPUT_NAMES
from toolmesh.router.embedding.model import BuiltModel
from toolmesh.router.embedding.smoothing import activation_peaks, projections, smooth, smoothing_factors


def test_only_loud_channels_get_a_factor_and_it_grows_with_their_peak() -> None:
    weights = [np.full((5, 3), 0.5, np.float32)]
    factors = smoothing_factors(np.array([0.1, 1.0, 1.0, 1.2, 20.0], np.float32), weights, alpha=0.7)
    assert factors[0] == factors[1] == factors[2] == 1.0, "quiet channels are never amplified"
    assert 1.0 < factors[3] < factors[4]
    assert factors[4] == pytest.approx(20.0**0.7, rel=1e-5)  # relative to the median channel


def _run(model: onnx.ModelProto, ids: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = dict(zip(INPUT_NAMES, (ids, np.ones_like(ids), np.zeros_like(ids)), strict=True))
    (states,) = session.run(None, feeds)
    return np.asarray(states)


def test_smoothing_the_fp32_encoder_leaves_its_outputs_unchanged(built_model: BuiltModel) -> None:
    model = onnx.load(str(built_model.fp32))
    before = model.SerializeToString()
    peaks = activation_peaks(model, built_model.tokenizer, ["book a table for two", "convert 3 km to miles"])
    assert model.SerializeToString() == before, "calibrating does not touch the model"
    assert set(peaks) == set(projections(model)) and len(peaks) == 6 * 4
    smoothed = onnx.ModelProto()
    smoothed.CopyFrom(model)
    smooth(smoothed, peaks)
    onnx.checker.check_model(smoothed)
    assert len([n for n in smoothed.graph.node if n.op_type == "Mul"]) == len(
        [n for n in model.graph.node if n.op_type == "Mul"]
    ) + len(peaks)
    ids = np.array([[101, 2054, 2003, 1996, 4633, 1999, 3000, 1029, 102]], np.int64)
    np.testing.assert_allclose(_run(smoothed, ids), _run(model, ids), atol=2e-4)
