"""What the router reads about a function, and the lexical half of the ranking."""

from __future__ import annotations

import numpy as np

from toolmesh.router.search.bm25 import BM25
from toolmesh.router.search.text import Document, split_identifier, terms


def test_identifiers_split_into_words() -> None:
    assert split_identifier("getWeatherForecast") == "get weather forecast"
    assert split_identifier("math.factorial") == "math factorial"
    assert split_identifier("send_HTTPRequest-v2") == "send http request v2"


def test_terms_drop_stopwords_and_fold_word_forms() -> None:
    assert terms("What are the forecasts for the cities?") == ["forecast", "city"]
    assert terms("getStockPrices") == terms("stock price")
    assert terms("booking flights") == terms("book a flight")
    assert terms("calculation") == terms("calculate")


def test_function_text_covers_name_namespace_description_parameters_and_enums() -> None:
    doc = Document(
        key="weather.get_forecast",
        name="get_forecast",
        namespace="weather",
        description="Daily highs.",
        parameters={
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name."},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            },
        },
    )
    text = doc.dense_text()
    assert text.startswith("weather get forecast: Daily highs.")
    assert "city (City name)" in text and "unit [celsius, fahrenheit]" in text and "days" in text
    lexical = doc.lexical_terms()
    assert lexical.count("forecast") == 2, "the name counts twice"
    assert set(terms("fahrenheit city weather")) <= set(lexical)
    changed = Document(doc.key, doc.name, "Daily lows.", doc.namespace, doc.parameters)
    assert changed.text_hash() != doc.text_hash() and len(doc.text_hash()) == 32


def test_bm25_prefers_rare_shared_terms_and_forgets_removed_documents() -> None:
    index = BM25()
    index.add(0, terms("convert currency amount from one currency to another"))
    index.add(1, terms("get the weather for a city"))
    index.add(2, terms("get the stock price for a company"))
    scores = index.scores(terms("what's the weather in Oslo"), 3)
    assert scores.argmax() == 1 and scores[0] == 0
    index.remove(1)
    assert index.scores(terms("weather"), 3).max() == 0
    index.add(1, terms("weather radar images"))  # a slot is reused
    assert index.scores(terms("radar"), 3).argmax() == 1 and len(index) == 3


def test_bm25_scores_follow_every_change_to_the_corpus() -> None:
    """Per-term weights are cached; a change anywhere (count, lengths) must refresh them all."""
    documents = {
        0: "convert currency amount",
        1: "get the weather for a city",
        2: "weather alerts and weather warnings for a region",
    }
    index = BM25()
    for slot, text in documents.items():
        index.add(slot, terms(text))
    query = terms("weather warnings")
    index.scores(query, 4)  # fills the cache
    index.add(3, terms("a very long description of a weather station network and its sensors"))
    index.remove(0)
    fresh = BM25()
    for slot, text in [(1, documents[1]), (2, documents[2])]:
        fresh.add(slot, terms(text))
    fresh.add(3, terms("a very long description of a weather station network and its sensors"))
    np.testing.assert_allclose(index.scores(query, 4), fresh.scores(query, 4), rtol=1e-6)
