"""The ONNX model is built from the package's safetensors, without torch, and cached by source hash."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from toolmesh.config import RouterConfig
from toolmesh.router.embedding.bert_onnx import INPUT_NAMES, OPSET, OUTPUT_NAME
from toolmesh.router.embedding.embedder import Embedder, OnnxEmbedder
from toolmesh.router.embedding.model import (
    BuiltModel,
    cached_model,
    ensure_model,
    package_model_dir,
    source_hash,
)
from toolmesh.router.service import open_embedder


def test_torch_is_not_installed_in_the_runtime_environment() -> None:
    names = {dist.metadata["Name"].lower() for dist in importlib.metadata.distributions()}
    assert not names & {"torch", "sentence-transformers", "transformers"}
    assert importlib.util.find_spec("torch") is None


def test_the_built_graph_is_a_bert_encoder_in_standard_onnx(built_model: BuiltModel) -> None:
    model = onnx.load(str(built_model.fp32), load_external_data=False)
    assert model.opset_import[0].version == OPSET >= 17
    assert [i.name for i in model.graph.input] == list(INPUT_NAMES)
    assert [o.name for o in model.graph.output] == [OUTPUT_NAME]
    ops = {node.op_type for node in model.graph.node}
    assert {"LayerNormalization", "Softmax", "Erf", "MatMul"} <= ops
    quantized = onnx.load(str(built_model.int8))
    int8_ops = [node.op_type for node in quantized.graph.node]
    # All 36 projections are per-channel int8, each input smoothed by one Mul first
    # (one for the query, key and value projections, which read the same input).
    assert int8_ops.count("MatMulInteger") == 6 * 6
    assert len([n for n in quantized.graph.node if n.name.endswith("_smooth")]) == 6 * 4
    weights = {tensor.name for tensor in quantized.graph.initializer}
    assert not [n for n in quantized.graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    assert built_model.int8.stat().st_size < 0.8 * built_model.fp32.stat().st_size
    meta = json.loads((built_model.directory / "meta.json").read_text())
    assert meta["source_hash"] == built_model.directory.name == built_model.source_hash


def test_a_cached_model_is_found_not_rebuilt(router_cache: Path, built_model: BuiltModel) -> None:
    before = built_model.fp32.stat().st_mtime_ns
    steps: list[str] = []
    again = ensure_model(router_cache, progress=steps.append)
    assert again == built_model and steps == []
    assert built_model.fp32.stat().st_mtime_ns == before
    assert cached_model(router_cache) == built_model


def test_the_cache_key_follows_the_source_files(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(package_model_dir(), source)
    cache = tmp_path / "cache"
    original = source_hash(source, cache)
    assert source_hash(source, cache) == original
    config = json.loads((source / "config.json").read_text())
    (source / "config.json").write_text(json.dumps({**config, "layer_norm_eps": 1e-6}))
    assert source_hash(source, cache) != original
    assert cached_model(cache, source) is None


def test_a_cache_that_cannot_be_written_still_serves_its_model(
    built_model: BuiltModel, tmp_path: Path
) -> None:
    # The image's cache is written at build time and read-only to the pods' user; finding
    # the model must not depend on remembering the source digests there. (The suite runs
    # as root, which permissions don't stop: the memo's path is a directory instead.)
    cache = tmp_path / "cache"
    found = cache / "models" / built_model.source_hash
    found.mkdir(parents=True)
    shutil.copyfile(built_model.directory / "meta.json", found / "meta.json")
    (cache / "digests.json").mkdir()
    assert cached_model(cache) == BuiltModel(found, built_model.source_hash)
    assert sorted(p.name for p in cache.iterdir()) == ["digests.json", "models"], "no temporary file is left"


def test_building_reports_progress(router_cache: Path, router_build_log: list[str]) -> None:
    steps = router_build_log  # the session's one build
    assert steps[0] == "reading weights" and any("layer 6/6" in s for s in steps)
    assert any("int8" in s for s in steps) and steps[-1].startswith("model ready")
    assert not list((router_cache / "models").glob(".build-*")), "no half-built model is left behind"


def test_embeddings_are_unit_vectors_and_padding_does_not_change_them(
    fp32_embedder: OnnxEmbedder, int8_embedder: OnnxEmbedder
) -> None:
    assert isinstance(int8_embedder, Embedder) and int8_embedder.dimension == 384
    texts = ["hi", "a much longer sentence about the weather in Paris next week, with many tokens"]
    batch = fp32_embedder.embed(texts)
    assert batch.shape == (2, 384) and np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    alone = fp32_embedder.embed(texts[:1])
    assert float(alone[0] @ batch[0]) > 0.9999  # padded next to a long text, "hi" means the same
    # int8 quantises activations per batch, so the company a text keeps moves it a little.
    assert float(int8_embedder.embed(texts[:1])[0] @ int8_embedder.embed(texts)[0]) > 0.97
    assert int8_embedder.embed([]).shape == (0, 384)
    texts = [f"text number {i} " + "padding " * (i % 7) for i in range(70)]
    many = fp32_embedder.embed(texts)  # several batches, sorted by length: rows come back in order
    assert np.allclose(many[5], fp32_embedder.embed([texts[5]])[0], atol=1e-4)
    assert np.allclose(many[68], fp32_embedder.embed([texts[68]])[0], atol=1e-4)


def test_long_texts_are_truncated_at_256_tokens_not_128(fp32_embedder: OnnxEmbedder) -> None:
    words = " ".join(["alpha beta gamma delta"] * 40)  # 160 tokens
    changed_late = words + " entirely different ending about volcanoes"
    a, b = fp32_embedder.embed([words, changed_late])
    assert float(a @ b) < 0.9999, "text past token 128 must still count"
    longer = " ".join(["alpha beta gamma delta"] * 70)  # 280 tokens
    c, d = fp32_embedder.embed([longer, longer + " entirely different ending about volcanoes"])
    assert float(c @ d) > 0.99999, "text past token 256 is cut off"


def test_a_user_model_from_config_is_used_as_given(built_model: BuiltModel, tmp_path: Path) -> None:
    config = RouterConfig(model=built_model.fp32, tokenizer=built_model.tokenizer, cache_dir=tmp_path)
    embedder = open_embedder(config)
    assert embedder.embed(["hello"]).shape == (1, 384)
    assert not (tmp_path / "models").exists(), "a user model needs no build"
    missing = RouterConfig(model=tmp_path / "nope.onnx", tokenizer=built_model.tokenizer)
    with pytest.raises(FileNotFoundError, match=r"nope\.onnx"):
        open_embedder(missing)


def test_a_model_that_pools_itself_is_only_normalised(built_model: BuiltModel, tmp_path: Path) -> None:
    # A tiny sentence-embedding graph whose output is already [batch, dim]: mean of token vectors.
    table = np.random.default_rng(0).normal(size=(30522, 8)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["table", "input_ids"], ["tokens"]),
            helper.make_node("ReduceMean", ["tokens", "axis"], ["sentence_embedding"], keepdims=0),
        ],
        "pooled",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", 8])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(np.array([1], np.int64), "axis")],
    )
    path = tmp_path / "pooled.onnx"
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, str(path))
    embedder = OnnxEmbedder(path, built_model.tokenizer)
    vectors = embedder.embed(["one", "two words"])
    assert embedder.dimension == 8 and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
