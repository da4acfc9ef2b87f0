"""Activation smoothing before int8 quantization (the SmoothQuant idea, Xiao et al., 2023).

`quantize_dynamic` gives every MatMul activation one int8 scale per tensor, taken
from its largest value. A BERT's activations are not even across channels: a few
channels of the layer-norm outputs, and of the GELU outputs the feed-forward
down-projections read, run 10-20x larger than the rest, so one scale leaves the
ordinary channels a handful of int8 steps. Smoothing divides each such channel
by a factor ``s`` and multiplies the matching row of the weight by it, which
leaves the product unchanged in exact arithmetic and moves part of the range
into the weights, whose int8 scale is per output channel anyway.

``s = peak_activation ** ALPHA / peak_weight ** (1 - ALPHA)``, normalised to a
median of 1 and never below 1: only the loud channels are quietened. Ordinary
channels stay as they are, so a channel that happened to be quiet during
calibration is never amplified into a new outlier at run time. The division is
one `Mul` per smoothed activation, shared by the projections that read it.

Activation peaks come from running the fp32 graph on `CALIBRATION_TEXTS`: varied
requests and function descriptions written for this purpose, unrelated to any
evaluation set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

#: How much of each channel's range moves into the weights. On the reference sentences
#: (tests/router/embedding/reference) 0.7 gave the best worst-case cosine of 0.5-1.0 (bench/RESULTS.md).
ALPHA = 0.7

CALIBRATION_TEXTS = (
    "turn off the lights in the living room",
    "How many days are left until the end of the quarter?",
    "Return the current exchange rate between two currencies.",
    "get_user_profile: Fetches a user's profile by their numeric id.",
    "Schedule a dentist appointment next Tuesday at 9am",
    "Compute the standard deviation of a list of numbers.",
    "play some jazz",
    "Translate 'good morning' into Japanese and Portuguese",
    "List all open pull requests in the repository octo/widgets assigned to me",
    "Calculates the monthly payment of a loan given the principal, annual interest rate and term in years.",
    "what is 17% of 2,340",
    "Search flights from Berlin to Lisbon on 2025-03-14 for two adults, economy class.",
    "Resize the image at /tmp/photo.png to 800 by 600 pixels and save it as JPEG.",
    "Query the inventory database for items whose stock is below the reorder threshold.",
    "Who won the 1998 football world cup?",
    "Creates a new calendar event with a title, start time, end time and optional attendees.",
    "remind me to water the plants every sunday",
    "Estimate the carbon footprint of driving 120 km in a petrol car.",
    "geo.distance(lat1, lon1, lat2, lon2): great-circle distance in kilometres",
    "Kill the process listening on port 8080",
    "Find Italian restaurants open now within 2 miles that take reservations",
    "Retrieve the latest stock price and daily change for a ticker symbol such as AAPL.",
    "ok",
    "Generate a random password of 16 characters including symbols.",
    "What's the population density of Tokyo compared to New York?",
    "Parses a CSV file and returns its rows as dictionaries keyed by the header.",
    "send $25 to Maria for the concert tickets",
    "Predict the probability of rain tomorrow afternoon in Seattle, WA.",
    "Solve the quadratic equation 3x^2 - 5x + 2 = 0",
    "Update the shipping address on order #48213 to 221B Baker Street, London.",
    "Summarise this article in three bullet points.",
    "Returns the number of protein-coding genes on a given human chromosome.",
    "Book a hotel room in Kyoto for 3 nights starting December 2 with breakfast included",
    "Convert 72 degrees Fahrenheit to Celsius",
    "Look up the definition and etymology of the word 'serendipity'.",
    "Check whether the email address foo.bar@example.org is valid and deliverable.",
    "Calculate the final velocity of an object dropped from 45 meters, ignoring air resistance.",
    "Which NBA player had the most assists in the 2019 playoffs?",
    "Deletes a file from the storage bucket. Fails if the file does not exist unless force is true.",
    "Bitte buche einen Tisch für zwei Personen heute Abend um acht.",
    "Compose an email to the team announcing Friday's release and cc the product manager.",
    "Get the nutritional information (calories, protein, fat, carbohydrates) for 100 g of a food item.",
    "Run the unit tests in the backend service and report any failures.",
    "What chemical elements make up table salt?",
    "Fetch the 10 most recent tweets mentioning #climate with more than 100 likes.",
    "Compute compound interest on $5000 at 4.5% annually for 10 years.",
    "Sort the array [5, 3, 9, 1] in descending order",
    "Identify the bird species from a recorded song clip.",
)

Peaks = dict[str, NDArray[np.float32]]


def projections(model: onnx.ModelProto) -> dict[str, list[onnx.NodeProto]]:
    """MatMuls with a constant weight, grouped by the activation they read."""
    weights = {tensor.name for tensor in model.graph.initializer}
    found: dict[str, list[onnx.NodeProto]] = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input[1] in weights:
            found.setdefault(node.input[0], []).append(node)
    return found


def activation_peaks(model: onnx.ModelProto, tokenizer: Path, texts: Iterable[str]) -> Peaks:
    """The largest magnitude each projection input's channels reach over `texts`."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    names = sorted(projections(model))
    probe.graph.output.extend(helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names)
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    encoder = Tokenizer.from_file(str(tokenizer))
    encoder.no_padding()
    peaks: Peaks = {}
    for text in texts:
        ids = np.array([encoder.encode(text).ids], np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        values = session.run(names, {k: v for k, v in feeds.items() if k in inputs})
        for name, value in zip(names, values, strict=True):
            channel_peak = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
            peaks[name] = np.maximum(peaks.get(name, channel_peak), channel_peak)
    return peaks


def smoothing_factors(
    activation_peak: NDArray[np.float32], weights: Sequence[NDArray[np.float32]], alpha: float = ALPHA
) -> NDArray[np.float32]:
    """One factor (≥ 1) per input channel of the MatMuls whose ``[K, N]`` weights are given."""
    weight_peak = np.max([np.abs(w).max(axis=1) for w in weights], axis=0)
    raw = np.maximum(activation_peak, 1e-6) ** alpha / np.maximum(weight_peak, 1e-6) ** (1 - alpha)
    factors: NDArray[np.float32] = np.maximum(raw / np.median(raw), 1.0).astype(np.float32)
    return factors


def smooth(model: onnx.ModelProto, peaks: Mapping[str, NDArray[np.float32]], alpha: float = ALPHA) -> None:
    """Smooth every projection input in `peaks`, in place (see the module docstring)."""
    graph = model.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    groups = projections(model)
    scaled: dict[str, onnx.NodeProto] = {}  # activation -> the Mul that divides it
    for activation, peak in peaks.items():
        nodes = groups[activation]
        weights = [numpy_helper.to_array(initializers[n.input[1]]) for n in nodes]
        factors = smoothing_factors(peak, weights, alpha)
        for node, weight in zip(nodes, weights, strict=True):
            name = node.input[1]
            initializers[name].CopyFrom(numpy_helper.from_array(weight * factors[:, None], name))
            node.input[0] = activation + "_smoothed"
        inverse = numpy_helper.from_array((1.0 / factors).astype(np.float32), activation + "_smoothing")
        graph.initializer.append(inverse)
        scaled[activation] = helper.make_node(
            "Mul", [activation, inverse.name], [activation + "_smoothed"], name=activation + "_smooth"
        )
    # A Mul goes right after the node that makes its activation (first, for a graph input).
    ordered = [scaled[i.name] for i in graph.input if i.name in scaled]
    for node in graph.node:
        ordered.append(node)
        ordered.extend(scaled[out] for out in node.output if out in scaled)
    del graph.node[:]
    graph.node.extend(ordered)
