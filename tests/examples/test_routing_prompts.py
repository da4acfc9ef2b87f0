"""The `make up` examples routed from free text: a prompt set written for this purpose
(tests/examples/data/routing_prompts.jsonl, 48 prompts, none of them an author example).

The functions' specs, author examples included, come from a real pod over gRPC, as the
gateway gets them. Routing must pick the intended function for >= 95 % of the prompts,
and planning an execution must never produce arguments that contradict the prompt: each
value it settles on matches what the prompt says, or it asks (`follow_up` in the 422).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.examples.test_examples import MODULES
from toolmesh.config.config_defaults import DEFAULT_ROUTER_THRESHOLD
from toolmesh.errors import InvalidArguments
from toolmesh.gateway.core.free_text import spec_documents
from toolmesh.protocol.wire import spec_from_proto
from toolmesh.router.embedding.embedder import OnnxEmbedder
from toolmesh.router.embedding.model import ensure_model
from toolmesh.router.execution import PromptExecutor
from toolmesh.router.routing import Router
from toolmesh.router.search.index import FunctionIndex
from toolmesh.router.sessions import SessionStore
from toolmesh.v1 import function_pb2

if TYPE_CHECKING:
    from tests.examples.conftest import Serve

DATA = Path(__file__).parent / "data" / "routing_prompts.jsonl"
#: Two-turn conversations written for this: the second turn is a follow-up ("and in Paris?").
FOLLOW_UPS = Path(__file__).parent / "data" / "follow_ups.jsonl"
PROMPTS = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


async def _nothing(function: str, arguments: Any) -> dict[str, Any]:
    raise AssertionError("a dry run calls nothing")


@pytest.fixture
async def executor(serve: Serve, router_cache: Path, tmp_path: Path) -> AsyncIterator[PromptExecutor]:
    client = await serve(*MODULES)
    listing = await client.stub.ListFunctions(function_pb2.ListFunctionsRequest())
    specs = [spec_from_proto(s) for s in listing.functions]
    assert all(len(spec.examples) >= 3 for spec in specs), "every example function has author examples"
    model = ensure_model(router_cache)
    sessions = SessionStore(tmp_path / "sessions.sqlite3", ttl=3600, max_sessions=100, max_turns=10)
    embedder = OnnxEmbedder(model.int8, model.tokenizer)
    router = Router(FunctionIndex(embedder), DEFAULT_ROUTER_THRESHOLD, sessions)
    router.sync(spec_documents(specs))
    yield PromptExecutor(router, today=lambda: dt.date(2026, 11, 23))
    sessions.close()


async def _plan(executor: PromptExecutor, prompt: str) -> tuple[dict[str, Any], list[Any]]:
    """The arguments a dry run settles on, and what it asks for (nothing when it would run)."""
    try:
        execution = await executor.execute(prompt, _nothing, dry_run=True)
    except InvalidArguments as asking:
        details = asking.details
        assert details["follow_up"] is True
        return details["arguments"], details["needs"]
    return execution.arguments, []


def test_the_set_is_written_apart_from_the_author_examples() -> None:
    assert len(PROMPTS) >= 40
    assert len({p["prompt"] for p in PROMPTS}) == len(PROMPTS)


async def test_routing_and_execution_on_the_written_set(executor: PromptExecutor) -> None:
    examples = {
        e for key in executor.router.index.slot_keys() if key for e in executor.router.document(key).examples
    }
    assert not examples & {p["prompt"] for p in PROMPTS}, "the set must be held out from the examples"
    wrong_route: list[str] = []
    contradictions: list[str] = []
    asked = 0
    for case in PROMPTS:
        route = executor.router.route(case["prompt"])
        if route.match != case["function"]:
            wrong_route.append(f"{case['prompt']!r} -> {route.match}")
            continue
        settled, needs = await _plan(executor, case["prompt"])
        asked += bool(needs)
        for name, value in settled.items():
            if name in case["arguments"] and case["arguments"][name] != value:
                contradictions.append(
                    f"{case['prompt']!r}: {name}={value!r}, the prompt says {case['arguments'][name]!r}"
                )
    assert len(wrong_route) <= 0.05 * len(PROMPTS), wrong_route
    assert not contradictions, contradictions
    assert asked < len(PROMPTS) / 4, "asking is for what is missing, not a way out of every prompt"


async def test_a_session_routes_follow_ups_with_the_previous_prompt(executor: PromptExecutor) -> None:
    conversations = [json.loads(line)["turns"] for line in FOLLOW_UPS.read_text().splitlines() if line]
    alone = together = 0
    for number, (first, second) in enumerate(conversations):
        session = f"s{number}"
        with contextlib.suppress(InvalidArguments):  # a first turn that asks records nothing
            await executor.execute(first["prompt"], _nothing, session_id=session, dry_run=True)
        alone += executor.router.route(second["prompt"]).match == second["function"]
        routed = executor.router.route(second["prompt"], session_id=session)
        together += routed.candidates[0].key == second["function"]
    assert alone <= len(conversations) / 2 < len(conversations) - 3 <= together


async def test_a_conversion_to_a_unit_it_does_not_have_is_asked_for(executor: PromptExecutor) -> None:
    """convert_temperature converts to celsius by default: for "... to rankine" that default
    would be a confident wrong answer, so the plan asks, naming what the prompt asked for."""
    for prompt, named in (
        ("convert 100 fahrenheit to rankine", "rankine"),
        ("what is 50 F in rankine?", "rankine"),
    ):
        assert executor.router.route(prompt).match == "convert_temperature"
        settled, needs = await _plan(executor, prompt)
        assert "to_unit" not in settled and settled["from_unit"] == "fahrenheit"
        assert {
            "name": "to_unit",
            "reason": f"the prompt asks for {named!r}, which is not an option",
            "options": ["celsius", "fahrenheit", "kelvin"],
        } in needs
    settled, needs = await _plan(executor, "what is 100 F in centigrade")
    assert needs == [] and settled == {"value": 100, "from_unit": "fahrenheit", "to_unit": "celsius"}
