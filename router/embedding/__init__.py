"""The embedding model: MiniLM as ONNX built from safetensors (bert_onnx.py), smoothed int8
(smoothing.py), built and cached (model.py), run by onnxruntime (embedder.py), with cached
function embeddings (cache.py)."""
