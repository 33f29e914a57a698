"""The answer schemas are bounded, and so is what the prompts ask (issue 27, defect 5).

Constrained decoding turns the schema into a grammar (llama.cpp's `llama-server`, Ollama,
llama-cpp-python's `json_object` with a schema): an array without `maxItems` is a loop a
small model may not leave before the output-token limit. The fake `llama_server` builds
its "grammar" from the schema as the real one does, and the small model behind it
(tests/judge/local_servers.py) loops exactly when nothing bounds its list.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import jsonschema
import pytest

from bot.judge.engine import JudgeEngine
from bot.judge.engine.seating import build_panel
from bot.judge.records import RubricName, Verdict
from bot.judge.rubrics import get_rubric
from bot.judge.rubrics.base import ITEMS_ASKED, LIST_ASK, TEXT_ASK
from bot.judge.rubrics.parsing import parse_answer
from tests.judge.local_servers import SmallModel, request_for, settings_for
from tests.support.fakes.llm_server import FakeOpenAIServer, llama_server

# Four characters a token, as the fakes count; the default output-token limit is 1024.
WORST_CASE_TOKENS = 800


def _nodes(schema: Mapping[str, Any], where: str = "$") -> Iterator[tuple[str, Mapping[str, Any]]]:
    yield where, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _nodes(sub, f"{where}.{name}")
    if isinstance(schema.get("items"), Mapping):
        yield from _nodes(schema["items"], f"{where}[]")


def _types(node: Mapping[str, Any]) -> set[str]:
    kind = node.get("type")
    return set(kind) if isinstance(kind, list) else {str(kind)}


@pytest.mark.parametrize("name", list(RubricName))
def test_no_string_or_array_is_unbounded(name: RubricName) -> None:
    schema = get_rubric(name).response_schema()
    open_ended = [
        where
        for where, node in _nodes(schema)
        if ("string" in _types(node) and "enum" not in node and "maxLength" not in node)
        or ("array" in _types(node) and "maxItems" not in node)
    ]
    assert open_ended == []


def _longest(node: Mapping[str, Any]) -> Any:
    """The largest instance the schema allows (strings and lists at their bounds)."""
    if "enum" in node:
        return max((v for v in node["enum"] if v is not None), key=lambda v: len(str(v)))
    kinds = _types(node)
    if "object" in kinds:
        return {name: _longest(sub) for name, sub in node["properties"].items()}
    if "array" in kinds:
        return [_longest(node["items"]) for _ in range(node["maxItems"])]
    if "string" in kinds:
        return "x" * node["maxLength"]
    if "integer" in kinds:
        return int(node.get("maximum", 5))
    if "number" in kinds:
        return 0.3333
    return True


@pytest.mark.parametrize("name", list(RubricName))
def test_the_longest_answer_allowed_fits_a_few_hundred_tokens(name: RubricName) -> None:
    schema = get_rubric(name).response_schema()
    longest = _longest(schema)
    jsonschema.validate(longest, schema)
    assert len(json.dumps(longest)) // 4 < WORST_CASE_TOKENS


@pytest.mark.parametrize("name", list(RubricName))
def test_the_prompt_asks_for_the_same_bounds(name: RubricName) -> None:
    text = get_rubric(name).instructions()
    assert LIST_ASK in text and TEXT_ASK in text


def test_a_longer_answer_still_parses_whole() -> None:
    """Bounds apply to what is asked; a server that does not enforce them is still read,
    and the record keeps what the judge wrote."""
    many = [f"improvement {n}" for n in range(ITEMS_ASKED * 3)]
    reply = {
        "scores": {"semantic": 3, "pragmatic": 3, "syntactic": 4},
        "reasoning": "long " * 400,
        "improvements": many,
    }
    answer = parse_answer(json.dumps(reply), get_rubric(RubricName.CONTENT))
    assert answer.improvements == many and len(answer.reasoning) > 1000


async def test_a_small_model_under_a_grammar_finishes_its_answer(http: httpx.AsyncClient) -> None:
    """llama-server with its defaults and a model that loops unless bounded: every answer
    ends by itself (`stop`) in a few hundred tokens, and the record keeps its reasoning."""
    behaviour = llama_server()
    server = FakeOpenAIServer(behaviour=behaviour)
    server.responder = SmallModel(behaviour)
    await server.start()
    try:
        settings = settings_for(server)
        engine = JudgeEngine(settings, build_panel(settings, http), None)
        record = await engine.judge(request_for("poor", 1800, 1))
    finally:
        await server.close()
    assert record.final_decision is not Verdict.UNDETERMINED
    assert [r.finish_reason for r in server.requests] == ["stop"] * len(server.requests)
    assert all(len(r.answer or "") // 4 < 300 for r in server.requests)
    assert all(round_.reasoning for round_ in record.previous_rounds)
    assert all(len(round_.improvements) <= ITEMS_ASKED for round_ in record.previous_rounds)
