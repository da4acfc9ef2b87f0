"""examples.knowledge: BM25 search and extractive answers over the bundled help centre."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.conftest import ROOT

if TYPE_CHECKING:
    from tests.examples.conftest import Client, Serve

DOCS = ROOT / "examples" / "knowledge_docs"


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
async def kb(serve: Serve) -> Client:
    return await serve("examples.knowledge")


@pytest.mark.parametrize(
    ("question", "doc", "says"),
    [
        ("How long does a refund take?", "returns.md", "within 5 business days"),
        ("Can I cancel my order after it has shipped?", "orders.md", "can no longer be cancelled"),
        ("Do you accept PayPal?", "payment.md", "PayPal"),
        ("How do I reset my password?", "account.md", "reset link"),
        ("How much does shipping cost?", "shipping.md", "€4.90"),
        ("Is my tent covered by the warranty?", "warranty.md", "5-year"),
        ("What does out for delivery mean?", "orders.md", "on the van today"),
    ],
)
async def test_answers_quote_and_cite_the_right_document(
    kb: Client, question: str, doc: str, says: str
) -> None:
    answer = await kb.ok("knowledge.answer_question", question=question)

    assert answer["found"] and answer["question"] == question
    assert says in answer["answer"]
    assert answer["sources"][0]["doc"] == doc
    cited = " ".join(flat((DOCS / source["doc"]).read_text()) for source in answer["sources"])
    for sentence in answer["answer"].split(". "):
        assert sentence.rstrip(".") in cited, "an extractive answer only quotes its sources"


async def test_sources_carry_the_document_title_and_section(kb: Client) -> None:
    answer = await kb.ok("knowledge.answer_question", question="How do I delete my account?", sentences=1)
    assert answer["sources"] == [
        {"doc": "account.md", "title": "Your account", "section": "Deleting your account"}
    ]


async def test_a_long_answer_does_not_wander_into_unrelated_documents(kb: Client) -> None:
    """Shipping times and cancellations also "take" days, but a refund question is about returns."""
    answer = await kb.ok("knowledge.answer_question", question="How long does a refund take?", sentences=5)
    assert {source["doc"] for source in answer["sources"]} == {"returns.md"}


@pytest.mark.parametrize("question", ["quantum chromodynamics", "how do I"])
async def test_no_answer_is_said_plainly(kb: Client, question: str) -> None:
    answer = await kb.ok("knowledge.answer_question", question=question)
    assert answer["found"] is False
    assert answer["sources"] == []


async def test_search_ranks_paragraphs(kb: Client) -> None:
    hits = await kb.ok("knowledge.search_help_center", query="when is my refund issued", limit=4)
    assert 1 <= len(hits) <= 4
    assert hits[0]["doc"] == "returns.md" and hits[0]["section"] == "Refunds"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    for hit in hits:
        assert hit["text"] in flat((DOCS / hit["doc"]).read_text())


async def test_search_matches_other_forms_of_a_word(kb: Client) -> None:
    """ "cancelling" finds the paragraph that says "cancel" and "cancelled"."""
    hits = await kb.ok("knowledge.search_help_center", query="cancelling", limit=1)
    assert hits[0]["doc"] == "orders.md" and hits[0]["section"] == "Cancelling an order"


async def test_documents_load_from_any_working_directory(
    pod_process: Callable[..., Any],
    connect: Callable[[str], Client],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A `toolmesh runtime` started elsewhere still finds the documents next to the module."""
    monkeypatch.chdir(tmp_path)
    pod = pod_process("examples.knowledge")
    answer = await connect(pod.address).ok(
        "knowledge.answer_question", question="How do I reset my password?"
    )
    assert answer["sources"][0]["doc"] == "account.md"
    code, _ = pod.terminate()
    assert code == 0
