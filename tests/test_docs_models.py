"""docs/models.md says what the code does: the families it recognises, settings blocks that
start (and send no key to a host it was not given for), the answers a judge may give,
what the worked cost example's changes cost through the real engine, and, in the local
model recipe, every per-tier setting for every tier, the defaults the code has, and what
each local server does with its defaults as the fakes of tests/support/fakes/
local_servers.py reproduce it.

The cost rows are rerun against the fake OpenAI-protocol server on loopback, every judge
accepting unless the row says otherwise; tokens are the fake's count (characters / 4).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from bot.judge.authorship import DEFAULT_FAMILY_PATTERNS, family_of_model
from bot.judge.engine import JudgeEngine
from bot.judge.engine.review_context import CiResult, FileDiff
from bot.judge.records import JudgedFile, RubricName
from bot.judge.rubrics import get_rubric
from bot.judge.rubrics.research_settings import ResearchRules
from bot.judge.settings import JudgeSettings
from bot.judging.judge_requests import JudgeInputs, judge_requests, window_budget
from bot.judging.repo_config import RepoConfig
from bot.judging.target import Target
from bot.settings import Settings
from tests.support.fakes.llm_server import FakeOpenAIServer, RecordedRequest, Reply
from tests.support.fakes.local_servers import (
    LlamaCppPythonServer,
    LlamaServer,
    LocalServer,
    OllamaServer,
)
from tests.support.setting_names import all_setting_names

DOC = Path(__file__).resolve().parent.parent / "docs" / "models.md"
_FENCE = re.compile(r"^ *```(\w*)\n(.*?)^ *```", re.MULTILINE | re.DOTALL)
_ASSIGNMENT = re.compile(r"^([A-Z][A-Z0-9_]*)=(.*)$")


def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def section(title: str) -> str:
    text = doc()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the Markdown tables in `text`, as stripped cells."""
    rows = [line.strip().strip("|").split(" | ") for line in text.splitlines() if line[:2] == "| "]
    return [[c.strip() for c in row] for row in rows if not set(row[0]) <= {"-", " "}]


@pytest.fixture(autouse=True)
def _no_judge_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's JUDGE_* variables must not decide these tests."""
    for name in list(os.environ):
        if name.startswith("JUDGE_"):
            monkeypatch.delenv(name)


# -- families --------------------------------------------------------------------------------


def test_the_family_table_lists_every_family_with_examples_that_belong_to_it() -> None:
    rows = [row for row in table_rows(section("Model families")) if row[0].startswith("`")]
    families = {row[0].strip("`"): re.findall(r"`([^`]+)`", row[-1]) for row in rows}
    assert set(families) == set(DEFAULT_FAMILY_PATTERNS.values())
    for family, examples in families.items():
        assert examples, f"{family}: no example"
        assert {family_of_model(e) for e in examples} == {family}, family
    assert family_of_model("granite3.3:8b") == "unknown:granite3.3:8b"


# -- settings blocks -------------------------------------------------------------------------


def settings_blocks() -> list[dict[str, str]]:
    """The `sh` blocks that only assign settings (comments aside)."""
    found: list[dict[str, str]] = []
    for info, body in _FENCE.findall(doc()):
        lines = [ln.strip() for ln in body.splitlines() if ln.strip()]
        lines = [ln for ln in lines if not ln.startswith("#")]
        pairs = {m[1]: m[2] for ln in lines if (m := _ASSIGNMENT.match(ln))}
        if info == "sh" and lines and len(pairs) == len(lines):
            found.append(pairs)
    return found


def keys_by_host(judge_settings: JudgeSettings) -> dict[str, set[str]]:
    hosts: dict[str, set[str]] = {}
    for seat in judge_settings.tiers().values():
        if seat.api_key is not None:
            hosts.setdefault(seat.api_key.get_secret_value(), set()).add(seat.host)
    return hosts


def test_every_setting_the_page_names_exists() -> None:
    named = set(re.findall(r"\bJUDGE_[A-Z0-9_<>]*[A-Z0-9]", doc()))
    expanded = {name.replace("<TIER>", "QUICK") for name in named}
    assert expanded, "the page names settings"
    assert expanded - all_setting_names() == set()


def test_there_are_settings_blocks() -> None:
    assert len(settings_blocks()) >= 5


@pytest.mark.parametrize("block", settings_blocks(), ids=lambda b: ",".join(sorted(b))[:60])
def test_settings_block_starts_and_sends_each_key_to_one_host(
    block: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    judge_names = {name for name in block if name.startswith("JUDGE_")}
    assert judge_names <= all_setting_names()
    for name, value in block.items():
        monkeypatch.setenv(name, value)
    judge_settings = JudgeSettings()
    if any(name.endswith("_MODEL") for name in block):
        assert judge_settings.tiers(), "the block configures a judge that can run"
    for key, hosts in keys_by_host(judge_settings).items():
        assert len(hosts) == 1, f"{key[:8]}... goes to {sorted(hosts)}"


def test_a_global_key_never_follows_a_tier_to_its_own_host() -> None:
    """JUDGE_LLM_API_KEY goes only to the global endpoint, never to a tier's local server."""
    judge_settings = JudgeSettings(
        llm_api_key="sk-global",
        llm_provider="anthropic",
        quick_model="qwen2.5:7b-instruct",
        quick_base_url="http://127.0.0.1:11434/v1",
        quick_provider="openai",
        deep_model="claude-sonnet-4-5",
    )
    assert keys_by_host(judge_settings) == {"sk-global": {"api.anthropic.com"}}


# -- the answers -------------------------------------------------------------------------------


def answer_examples() -> Iterator[tuple[str, dict[str, Any]]]:
    """Each `json` block of the answers section with the rubric named in bold before it."""
    text = section("The answer a judge must return")
    for match in _FENCE.finditer(text):
        if match[1] != "json":
            continue
        named = re.findall(r"^\*\*(\w+)\*\*", text[: match.start()], flags=re.MULTILINE)
        yield named[-1], json.loads(match[2])


def test_every_rubric_has_one_example_answer() -> None:
    assert sorted(name for name, _ in answer_examples()) == sorted(r.value for r in RubricName)


@pytest.mark.parametrize("rubric, answer", list(answer_examples()), ids=lambda v: str(v)[:12])
def test_example_answer_fits_its_rubric_and_no_other(rubric: str, answer: dict[str, Any]) -> None:
    fits = {
        r.value
        for r in RubricName
        if jsonschema.Draft202012Validator(get_rubric(r).response_schema()).is_valid(answer)
    }
    assert fits == {rubric}
    parsed = get_rubric(rubric).parse(answer)
    assert parsed.reasoning


# -- the worked cost example --------------------------------------------------------------

ACCEPT = {"scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5}, "reasoning": "Clear."}
REJECT = {"scores": {"semantic": 1, "pragmatic": 2, "syntactic": 3}, "reasoning": "Wrong."}
QUICK, DEEP, TIEBREAKER = "gpt-5-nano", "kimi-k2.5", "llama-3.3-70b"
_WORDS = "the cache warms within a minute after each deploy so p95 latency returns to baseline"


def prose(chars: int, seed: int) -> str:
    """Markdown of exactly `chars` characters: headings and sentences."""
    words = _WORDS.split()
    rows = ["# Cache rollout report", ""]
    n = seed
    while sum(len(r) + 1 for r in rows) < chars:
        rows += [f"## Week {len(rows)}", ""]
        for _ in range(4):
            n += 7
            rows.append(" ".join(words[(n + i) % len(words)] for i in range(11)).capitalize() + ".")
        rows.append("")
    return "\n".join(rows)[:chars]


@dataclass(frozen=True)
class Change:
    files: list[JudgedFile]
    diffs: dict[str, FileDiff]
    ci: list[CiResult]
    answer: Callable[[RecordedRequest], Reply]


def accept_all(_: RecordedRequest) -> Reply:
    return Reply.json(ACCEPT)


def quick_rejects(request: RecordedRequest) -> Reply:
    return Reply.json(REJECT if request.model == QUICK else ACCEPT)


def one_file(chars: int, answer: Callable[[RecordedRequest], Reply] = accept_all) -> Change:
    return Change(
        [JudgedFile(path="docs/a.md", content=prose(chars, 5), status="added")], {}, [], answer
    )


def typical_pull_request() -> Change:
    added = prose(1500, 3)
    diff = "@@ -80,0 +81,20 @@\n" + "\n".join("+" + line for line in added.splitlines())
    files = [
        JudgedFile(path="docs/rollback.md", content=prose(2500, 1), status="added"),
        JudgedFile(path="docs/cache.md", content=prose(3000, 2) + "\n" + added, status="modified"),
    ]
    ci = [
        CiResult(name="tests", state="success", required=True, excerpt="212 passed"),
        CiResult(name="lint", state="success", excerpt="0 problems"),
    ]
    return Change(
        files, {"docs/cache.md": FileDiff(path="docs/cache.md", diff=diff)}, ci, accept_all
    )


# The first cell of each cost row starts with one of these.
CHANGES: dict[str, Callable[[], Change]] = {
    "one new 2,000-character": lambda: one_file(2000),
    "one 2,000-character file that quick rejects": lambda: one_file(2000, quick_rejects),
    "**a typical pull request**": typical_pull_request,
    "one 30,000-character": lambda: one_file(30_000),
    "one 100,000-character": lambda: one_file(100_000),
}


def cost_rows() -> dict[str, tuple[int, int]]:
    """Row prefix -> (model calls, prompt tokens) as the page states them."""
    rows: dict[str, tuple[int, int]] = {}
    for cells in table_rows(section("What a pull request costs")):
        prefix = next((p for p in CHANGES if cells[0].startswith(p)), None)
        if prefix is not None:
            calls = re.search(r"\d+", cells[1])
            tokens = re.search(r"\d[\d,]*", cells[2])
            assert calls and tokens, cells
            rows[prefix] = int(calls[0]), int(tokens[0].replace(",", ""))
    return rows


async def measure(change: Change) -> tuple[int, int]:
    server = FakeOpenAIServer(responder=change.answer)
    await server.start()
    try:
        judge_settings = JudgeSettings(
            llm_base_url=server.base_url,
            llm_api_key="test-key",
            quick_model=QUICK,
            deep_model=DEEP,
            tiebreaker_model=TIEBREAKER,
            throttle_per_hour=1_000_000,
            daily_call_budget=None,
        )
        target = Target(
            repository="octo/docs",
            installation_id=1,
            head_sha="b" * 40,
            default_branch="main",
            task="octo/docs#7",
            trigger="pull_request",
            title="Document the cache rollback",
        )
        inputs = JudgeInputs(
            files=change.files,
            commits=(),
            directives=(),
            sensitive=frozenset(),
            diffs=change.diffs,
            ci=change.ci,
        )
        requests = judge_requests(
            target,
            RepoConfig(),
            inputs,
            ResearchRules(),
            window_chars=window_budget(judge_settings),
        )
        calls = tokens = 0
        async with httpx.AsyncClient() as client:
            engine = JudgeEngine.from_settings(judge_settings, client, None)
            for request in requests:
                record = await engine.judge(request)
                assert record.final_decision.value == "accept"
                calls += sum(call.attempts for call in record.calls)
                tokens += sum(call.prompt_tokens or 0 for call in record.calls)
        return calls, tokens
    finally:
        await server.close()


def test_the_cost_table_has_every_change() -> None:
    assert set(cost_rows()) == set(CHANGES)


@pytest.mark.parametrize("prefix", list(CHANGES))
async def test_the_cost_row_holds_for_the_real_engine(prefix: str) -> None:
    stated_calls, stated_tokens = cost_rows()[prefix]
    calls, tokens = await measure(CHANGES[prefix]())
    assert calls == stated_calls
    assert abs(tokens - stated_tokens) <= 0.1 * stated_tokens, (
        f"{prefix}: {tokens} prompt tokens now; update docs/models.md's worked example"
    )


# -- the local-model recipe ------------------------------------------------------------------


def local_section() -> str:
    return section("Local models")


def test_every_per_tier_setting_the_page_names_exists_for_every_tier() -> None:
    per_tier = set(re.findall(r"\bJUDGE_<TIER>_([A-Z0-9_]*[A-Z0-9])", doc()))
    assert {"TIMEOUT", "CONTEXT_TOKENS", "RESPONSE_FORMAT", "TEMPERATURE"} <= per_tier
    for tier in ("QUICK", "DEEP", "TIEBREAKER"):
        assert {f"JUDGE_{tier}_{name}" for name in per_tier} <= all_setting_names()


def recipe_rows() -> dict[str, list[str]]:
    """The hosted-vs-local table: first setting named in the row -> its cells."""
    rows: dict[str, list[str]] = {}
    for cells in table_rows(local_section()):
        named = re.search(r"`(JUDGE_[A-Z<>_]+)`", cells[0])
        if named and len(cells) == 3:
            rows[named[1].replace("<TIER>_", "")] = cells
    return rows


def test_the_hosted_defaults_column_is_what_the_code_defaults_to() -> None:
    judge_settings = JudgeSettings()
    hosted = {name: cells[1] for name, cells in recipe_rows().items()}
    assert hosted["JUDGE_TIMEOUT"] == (
        f"{judge_settings.quick_timeout:.0f} s quick, {judge_settings.deep_timeout:.0f} s deep, "
        f"{judge_settings.tiebreaker_timeout:.0f} s tiebreaker"
    )
    assert hosted["JUDGE_WALL_CLOCK_BUDGET"] == f"{judge_settings.wall_clock_budget:.0f} s"
    assert hosted["JUDGE_MAX_OUTPUT_TOKENS"] == str(judge_settings.max_output_tokens)
    assert (
        hosted["JUDGE_CONTEXT_TOKENS"].startswith("unset") and judge_settings.context_tokens is None
    )
    assert hosted["JUDGE_RESPONSE_FORMAT"].startswith(f"`{judge_settings.response_format}`")
    assert hosted["JUDGE_TEMPERATURE"] == f"{judge_settings.temperature:g}"
    assert hosted["JUDGE_WORKERS"] == str(Settings.model_fields["workers"].default)


def test_the_recipes_settings_block_follows_its_table() -> None:
    """The all-local block sets what the table's local column says."""
    (block,) = [
        b for b in settings_blocks() if b.get("JUDGE_LLM_BASE_URL", "").startswith("http://127.")
    ]
    local = {name: cells[2] for name, cells in recipe_rows().items()}
    assert local["JUDGE_TIMEOUT"].startswith(
        f"{block['JUDGE_QUICK_TIMEOUT']} s quick, {block['JUDGE_DEEP_TIMEOUT']} s deep"
    )
    assert block["JUDGE_TIEBREAKER_TIMEOUT"] == block["JUDGE_DEEP_TIMEOUT"]
    assert local["JUDGE_WALL_CLOCK_BUDGET"].endswith(f"{block['JUDGE_WALL_CLOCK_BUDGET']} s")
    assert local["JUDGE_WORKERS"].startswith(block["JUDGE_WORKERS"])
    assert block["JUDGE_CONTEXT_TOKENS"] in local_section().split("### 2.")[0]


SERVER_ROWS: dict[str, Callable[[], LocalServer]] = {
    "llama-cpp-python": LlamaCppPythonServer,
    "llama-server": LlamaServer,
    "Ollama": OllamaServer,
}


def server_rows() -> dict[str, list[str]]:
    rows = {cells[0]: cells for cells in table_rows(local_section()) if len(cells) == 6}
    assert set(SERVER_ROWS) <= set(rows)
    return rows


@pytest.mark.parametrize("name", list(SERVER_ROWS))
async def test_the_server_table_says_what_the_servers_do(name: str) -> None:
    """The defaults and answers the table states are the fakes' (whose docstring says
    from which source each comes)."""
    _, context, _, past, schema, _ = server_rows()[name]
    user = {"role": "user", "content": "x" * 40_000}
    async with SERVER_ROWS[name]() as server, httpx.AsyncClient() as client:
        url = server.base_url + "/chat/completions"
        body = {"model": "qwen2.5:0.5b", "messages": [user], "max_tokens": 100}
        long = await client.post(url, json=body)
        schema_format = {"type": "json_schema", "json_schema": {"schema": {"type": "object"}}}
        short = {**body, "messages": [{"role": "user", "content": "hi"}]}
        structured = await client.post(url, json=short | {"response_format": schema_format})
    assert context.startswith(str(server.context_tokens))
    if long.status_code == 200:
        assert server.calls[0].truncated and "cut without a word" in past
    else:
        assert past.startswith(f"refused, HTTP {long.status_code}")
        quoted = re.escape(past.split('"')[1]).replace("N", r"\d+")  # N: a number
        assert re.search(quoted, long.json()["error"]["message"])
    if structured.status_code == 200:
        assert schema.startswith("taken")
    else:
        assert schema.startswith(f"refused, HTTP {structured.status_code}")
