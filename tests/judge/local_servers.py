"""A small local model behind the fakes of three local servers, and the measure of how
many judgments end parsed against them (issue 27).

The servers are tests/support/fakes/llm_server.py's `ServerBehaviour`s, which reproduce
what llama-cpp-python's server, llama.cpp's `llama-server` and Ollama send (the bodies
and where they come from are in their factories' docstrings); each runs with its
defaults. The model behind them (`SmallModel`) stands for the small instruct model of
the issue's trial, as far as judging needs, and is an assumption, not a recording:

* it scores the document by the `<!-- quality: good|fair|poor -->` mark the test
  documents carry (good 4/4/5, fair 3/3/4, poor 2/3/3), with a reasoning of about 250
  characters and as many improvements as it sees (good 0, fair 4, poor 6);
* it writes an improvements list whose length nothing bounds until the output stops:
  the issue's "constrained decoding looped inside improvements until the 1,024-token
  limit". A bound stops it: `maxItems` in a grammar built from the schema (servers that
  constrain by `json_schema`), or "at most N items" asked in the prompt, which a model
  that follows instructions keeps to; a `maxLength` in the grammar cuts a string there;
* held to a schema or to JSON (`json_object`) it writes the JSON object only; asked in
  the prompt alone it wraps it in a ```json fence after a line of prose, as small chat
  models do;
* it reads at `PROMPT_TOKENS_PER_SECOND` and writes at `OUTPUT_TOKENS_PER_SECOND`, a
  1-2B model on a laptop CPU (the issue saw 1,024 tokens take 25-45 s).

`python -m tests.judge.local_servers` prints, for each server, the share of judgments of
`DOCUMENTS` that end parsed (not undetermined), and output tokens per answer (estimated
as the fakes count them: four characters a token). It runs the engine with judge-bot's
default limits at `TIME_SCALE` of real time (timeouts and the model's speed scaled
alike), so a loop that would take 45 s times out as it would; figures, not a test.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.engine.seating import build_panel
from bot.judge.records import JudgedFile, TaskSpec, Verdict
from bot.judge.settings import JudgeSettings
from tests.support.fakes.llm_server import (
    FakeOpenAIServer,
    RecordedRequest,
    Reply,
    ServerBehaviour,
    llama_cpp_python,
    llama_server,
    ollama,
)

PROMPT_TOKENS_PER_SECOND = 150.0
OUTPUT_TOKENS_PER_SECOND = 25.0
TIME_SCALE = 0.01
QUICK, DEEP = "small-quick", "small-deep"

_QUALITY = re.compile(r"<!-- quality: (good|fair|poor) -->")
_ASKED_BOUND = re.compile(r"at most (\d+|three) (?:items|improvements)")
_SCORES = {"good": (4, 4, 5), "fair": (3, 3, 4), "poor": (2, 3, 3)}
_IDEAS = {"good": 0, "fair": 4, "poor": 6}
_LOOP = 400  # items a looping model would write if nothing stopped it
_REASONING = (
    "The report names the cause and an action, and its figures agree with each other; "
    "the method section is thin and one claim about the cache rests on a single "
    "measurement, so the pragmatic score stays below the top of the scale for now."
)


@dataclass(frozen=True)
class SmallModel:
    """The model behind a server (module docstring): what it writes for a request."""

    server: ServerBehaviour

    def __call__(self, request: RecordedRequest) -> Reply:
        mark = _QUALITY.search(request.user_text)
        quality = mark.group(1) if mark else "fair"
        held = self.server.understands(request)
        schema = _schema_of(request) if held == "json_schema" else None
        ideas = _IDEAS[quality]
        bound = _items_bound(schema, request)
        count = min(ideas, bound) if bound is not None else (_LOOP if ideas else 0)
        scores = dict(zip(("semantic", "pragmatic", "syntactic"), _SCORES[quality], strict=True))
        answer = {
            "scores": scores,
            "average": round(sum(scores.values()) / 3, 2),
            "verdict": "accept" if quality == "good" else "improve",
            "reasoning": _cut(_REASONING, _max_length(schema, "reasoning")),
            "improvements": [
                _cut(f"Add a measured example to section {n % 7 + 1}.", None) for n in range(count)
            ],
        }
        text = json.dumps(answer, indent=1)
        if held is None:
            text = "Here is my evaluation:\n\n```json\n" + text + "\n```"
        return Reply.text(text)


def _schema_of(request: RecordedRequest) -> Mapping[str, Any] | None:
    fmt = request.response_format or {}
    wrapper = fmt.get("json_schema")
    schema = wrapper.get("schema") if isinstance(wrapper, dict) else None
    return schema if isinstance(schema, dict) else None


def _property(schema: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    properties = (schema or {}).get("properties", {})
    value = properties.get(name, {}) if isinstance(properties, dict) else {}
    return value if isinstance(value, dict) else {}


def _max_length(schema: Mapping[str, Any] | None, name: str) -> int | None:
    value = _property(schema, name).get("maxLength")
    return value if isinstance(value, int) else None


def _items_bound(schema: Mapping[str, Any] | None, request: RecordedRequest) -> int | None:
    """The most improvements the grammar or the prompt lets the model write."""
    bounds: list[int] = []
    grammar = _property(schema, "improvements").get("maxItems")
    if isinstance(grammar, int):
        bounds.append(grammar)
    text = request.system + "\n" + request.user_text
    for asked in _ASKED_BOUND.findall(text):
        bounds.append(3 if asked == "three" else int(asked))
    return min(bounds) if bounds else None


def _cut(text: str, limit: int | None) -> str:
    return text if limit is None else text[:limit]


# -- the documents judged -----------------------------------------------------------------

_SENTENCE = (
    "Queue latency rose after the cache change; the rollback to a 60 s TTL brought p95 back "
    "within a day, and the dashboard shows the same on both regions. "
)


def document(quality: str, chars: int) -> str:
    """A Markdown report of about `chars` characters carrying its quality mark."""
    head = f"# Weekly signal report\n\n<!-- quality: {quality} -->\n\n"
    body = (_SENTENCE * (chars // len(_SENTENCE) + 1))[: max(0, chars - len(head))]
    return head + body + "\n"


DOCUMENTS: tuple[tuple[str, int], ...] = (
    ("good", 800),
    ("fair", 1800),
    ("good", 2600),
    ("fair", 3400),
    ("good", 6000),
)
"""Five changes of one file each: (quality, characters); the quick tier reads 4,000."""


def settings_for(server: FakeOpenAIServer, **overrides: Any) -> JudgeSettings:
    """Two tiers on one local server, two model names under two declared families (a
    local setup), judge-bot's default limits unless overridden."""
    values: dict[str, Any] = {
        "llm_base_url": server.base_url,
        "llm_api_key": "test-key",
        "quick_model": QUICK,
        "deep_model": DEEP,
        "quick_family": "alpha",
        "deep_family": "beta",
    }
    values.update(overrides)
    return JudgeSettings(**values)


def request_for(quality: str, chars: int, number: int) -> JudgeRequest:
    return JudgeRequest(
        task=TaskSpec(task_id=f"trial-{number}", description="Write the weekly signal report"),
        files=[JudgedFile(path=f"docs/report-{number}.md", content=document(quality, chars))],
        scope="local-trial",
    )


@dataclass(frozen=True)
class Trial:
    """What judging `DOCUMENTS` against one server came to."""

    server: str
    parsed: int
    judged: int
    answers: tuple[int, ...]
    """Estimated output tokens of every answer that ended by itself (`stop`)."""
    cut: int
    """Answers stopped at the output-token limit."""
    calls: int
    errors: tuple[str, ...]


async def trial(
    behaviour: ServerBehaviour,
    *,
    scale: float = 0.0,
    documents: Sequence[tuple[str, int]] = DOCUMENTS,
) -> Trial:
    """Judge `documents` against `behaviour` (with `SmallModel` behind it); `scale` > 0
    runs at that share of real time, timeouts and model speed alike (0: no delays and
    judge-bot's real timeouts)."""
    server = FakeOpenAIServer(behaviour=behaviour)
    server.responder = SmallModel(behaviour)
    overrides: dict[str, Any] = {}
    if scale:
        defaults = JudgeSettings()
        overrides = {
            "quick_timeout": defaults.quick_timeout * scale,
            "deep_timeout": defaults.deep_timeout * scale,
            "tiebreaker_timeout": defaults.tiebreaker_timeout * scale,
            "wall_clock_budget": defaults.wall_clock_budget * scale,
        }
    await server.start()
    try:
        async with httpx.AsyncClient() as client:
            settings = settings_for(server, **overrides)
            engine = JudgeEngine(settings, build_panel(settings, client), None)
            records = [
                await engine.judge(request_for(quality, chars, n))
                for n, (quality, chars) in enumerate(documents, 1)
            ]
    finally:
        await server.close()
    answered = [r for r in server.requests if r.answer is not None]
    return Trial(
        server=behaviour.name,
        parsed=sum(r.final_decision is not Verdict.UNDETERMINED for r in records),
        judged=len(records),
        answers=tuple(len(r.answer or "") // 4 for r in answered if r.finish_reason == "stop"),
        cut=sum(r.finish_reason == "length" for r in answered),
        calls=len(server.requests),
        errors=tuple(
            dict.fromkeys(
                round_.error for r in records for round_ in r.previous_rounds if round_.error
            )
        ),
    )


def at_speed(scale: float) -> tuple[float, float]:
    """Seconds per prompt token and per output token at `scale` of real time."""
    return (scale / PROMPT_TOKENS_PER_SECOND, scale / OUTPUT_TOKENS_PER_SECOND)


def servers(scale: float) -> list[ServerBehaviour]:
    speed = at_speed(scale)
    return [llama_cpp_python(speed=speed), llama_server(speed=speed), ollama(speed=speed)]


async def _main() -> None:
    for behaviour in servers(TIME_SCALE):
        result = await trial(behaviour, scale=TIME_SCALE)
        answers = sorted(result.answers)
        typical = answers[len(answers) // 2] if answers else 0
        print(
            f"{result.server}: {result.parsed}/{result.judged} judgments parsed; "
            f"{result.calls} calls; {result.cut} answers cut at the limit; output tokens "
            f"per complete answer: median {typical}, max {max(answers, default=0)}"
        )
        for error in result.errors:
            print(f"    round error: {error}")


if __name__ == "__main__":
    asyncio.run(_main())
