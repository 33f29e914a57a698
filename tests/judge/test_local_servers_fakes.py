"""The fakes of the three local servers answer as their sources say (the bodies are in
tests/support/fakes/local_servers.py's docstring, with where each comes from), and the
small model behind them loops exactly when nothing bounds its list.

These pin the fakes the issue-27 measures run against: a fake that drifted from its
server would make those measures say nothing.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.fakes.local_servers import (
    FREE,
    LOOP_ITEMS,
    Grammar,
    LlamaCppPythonServer,
    LlamaServer,
    OllamaServer,
    SmallModel,
    count_tokens,
    render_chatml,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "scores": {
            "type": "object",
            "properties": {
                "semantic": {"type": "integer", "minimum": 1, "maximum": 5},
                "pragmatic": {"type": "integer", "minimum": 1, "maximum": 5},
                "syntactic": {"type": "integer", "minimum": 1, "maximum": 5},
            },
        },
        "verdict": {"type": "string", "enum": ["accept", "improve", "reject"]},
        "reasoning": {"type": "string", "maxLength": 600},
        "improvements": {
            "type": "array",
            "items": {"type": "string", "maxLength": 160},
            "maxItems": 5,
        },
    },
}
UNBOUNDED = SCHEMA | {
    "properties": SCHEMA["properties"]
    | {"improvements": {"type": "array", "items": {"type": "string"}}}
}
FAIR = "# Report\n\n<!-- quality: fair -->\n\nLatency rose after the cache change.\n"


ASKING = "You judge reports. List at most 5 improvements."


def chat(
    text: str = FAIR, *, fmt: dict[str, Any] | None = None, system: str = ASKING, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "qwen2.5:0.5b",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": text},
        ],
        "temperature": 0,
        **extra,
    }
    if fmt is not None:
        body["response_format"] = fmt
    return body


def schema_format(schema: dict[str, Any] = SCHEMA) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema}}


# -- the model ------------------------------------------------------------------------------


def test_held_to_a_bounded_schema_the_model_ends_by_itself() -> None:
    written = SmallModel().write(
        FAIR, instructed=True, grammar=Grammar("schema", SCHEMA), limit=1024
    )
    answer = json.loads(written.text)
    assert written.finish_reason == "stop"
    assert answer["scores"] == {"semantic": 3, "pragmatic": 3, "syntactic": 4}
    assert answer["verdict"] == "improve" and len(answer["improvements"]) == 4


def test_an_unbounded_list_loops_to_the_limit() -> None:
    written = SmallModel().write(
        FAIR, instructed=True, grammar=Grammar("schema", UNBOUNDED), limit=1024
    )
    assert written.finish_reason == "length" and written.tokens == 1024
    unlimited = SmallModel().write(
        FAIR, instructed=True, grammar=Grammar("schema", UNBOUNDED), limit=None
    )
    assert len(json.loads(unlimited.text)["improvements"]) == LOOP_ITEMS


def test_the_prompts_ask_bounds_a_list_the_grammar_does_not() -> None:
    asked = FAIR + "\nList at most 2 items."
    written = SmallModel().write(asked, instructed=True, grammar=Grammar("json"), limit=1024)
    assert written.finish_reason == "stop"
    assert len(json.loads(written.text)["improvements"]) == 2


def test_without_a_grammar_the_answer_comes_fenced_after_prose() -> None:
    written = SmallModel().write(FAIR, instructed=True, grammar=FREE, limit=None)
    assert written.text.startswith("Here is my evaluation:\n\n```json\n")


def test_verbose_writes_to_the_bounds() -> None:
    written = SmallModel(verbose=True).write(
        FAIR, instructed=True, grammar=Grammar("schema", SCHEMA), limit=None
    )
    answer = json.loads(written.text)
    assert len(answer["reasoning"]) == 600 and len(answer["improvements"]) == 5
    assert {len(i) for i in answer["improvements"]} == {160}


def test_instructions_cut_off_leave_a_blind_or_unreadable_answer() -> None:
    blind = SmallModel().write(
        "...", instructed=False, grammar=Grammar("schema", SCHEMA), limit=None
    )
    assert json.loads(blind.text)["scores"] == {"semantic": 3, "pragmatic": 3, "syntactic": 4}
    assert "scores" not in json.loads(
        SmallModel().write("...", instructed=False, grammar=Grammar("json"), limit=None).text
    )
    assert (
        not SmallModel()
        .write("...", instructed=False, grammar=FREE, limit=None)
        .text.startswith("{")
    )


def test_tokens_are_counted_over_the_chat_template() -> None:
    prompt = render_chatml([{"role": "user", "content": "x" * 40}])
    assert prompt == "<|im_start|>user\n" + "x" * 40 + "<|im_end|>\n<|im_start|>assistant\n"
    assert count_tokens(prompt) == 23  # 90 characters


# -- llama-cpp-python ------------------------------------------------------------------------


async def test_llama_cpp_python_refuses_json_schema_with_500_naming_the_format() -> None:
    async with LlamaCppPythonServer() as server, httpx.AsyncClient() as client:
        url = server.base_url + "/chat/completions"
        refused = await client.post(url, json=chat(fmt=schema_format()))
        taken = await client.post(url, json=chat(fmt={"type": "json_object"}, max_tokens=300))
        models = (await client.get(server.base_url + "/models")).json()
        props = await client.get(server.origin + "/props")
    assert refused.status_code == 500
    error = refused.json()["error"]
    assert error["type"] == "internal_server_error" and error["param"] is None
    assert "'response_format', 'type'" in error["message"]
    assert taken.status_code == 200
    body = taken.json()
    assert body["choices"][0]["finish_reason"] == "stop"
    assert json.loads(body["choices"][0]["message"]["content"])["scores"]["semantic"] == 3
    assert set(body["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert models["data"][0]["owned_by"] == "me" and "meta" not in models["data"][0]
    assert props.status_code == 404


async def test_llama_cpp_python_overflow_and_its_output_room() -> None:
    async with LlamaCppPythonServer(context_tokens=300) as server, httpx.AsyncClient() as client:
        url = server.base_url + "/chat/completions"
        long = await client.post(url, json=chat("x" * 1200, max_tokens=100))
        unasked = await client.post(url, json=chat("y" * 1200))
        room = await client.post(url, json=chat("z" * 900, fmt={"type": "json_object"}))
    error = long.json()["error"]
    assert long.status_code == 400 and error["code"] == "context_length_exceeded"
    assert error["message"].startswith("This model's maximum context length is 300 tokens.")
    assert "(332 in the messages, 100 in the completion)" in error["message"]
    assert "None in the completion" in unasked.json()["error"]["message"]
    # no max_tokens: it may write what is left of the context, and stops there
    assert room.json()["choices"][0]["finish_reason"] == "length"
    assert room.json()["usage"]["completion_tokens"] == 300 - server.calls[-1].prompt_tokens


# -- llama-server ---------------------------------------------------------------------------


async def test_llama_server_takes_both_formats_and_refuses_others() -> None:
    async with LlamaServer() as server, httpx.AsyncClient() as client:
        url = server.base_url + "/chat/completions"
        schema = await client.post(url, json=chat(fmt=schema_format(), max_tokens=400))
        plain = await client.post(url, json=chat(fmt={"type": "json_object"}, max_tokens=400))
        other = await client.post(url, json=chat(fmt={"type": "yaml"}))
    assert schema.status_code == plain.status_code == 200
    assert "timings" in schema.json()
    assert schema.json()["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}
    assert other.status_code == 400
    assert other.json() == {
        "error": {
            "code": 400,
            "message": 'response_format type must be one of "text" or "json_object", but got: yaml',
            "type": "invalid_request_error",
        }
    }


async def test_llama_server_says_its_context_and_refuses_past_it() -> None:
    async with LlamaServer() as server, httpx.AsyncClient() as client:
        props = (await client.get(server.origin + "/props")).json()
        models = (await client.get(server.base_url + "/models")).json()
        health = (await client.get(server.origin + "/health")).json()
        long = await client.post(server.base_url + "/chat/completions", json=chat("x" * 17000))
    assert props["default_generation_settings"]["n_ctx"] == 4096
    assert models["data"][0]["meta"]["n_ctx_train"] == 32768  # trained for, not served
    assert health == {"status": "ok"}
    assert long.status_code == 400
    error = long.json()["error"]
    assert error["type"] == "exceed_context_size_error" and error["n_ctx"] == 4096
    assert error["message"] == (
        f"request ({error['n_prompt_tokens']} tokens) exceeds the available context size "
        "(4096 tokens), try increasing it"
    )
    assert server.lookups == ["GET /props", "GET /v1/models", "GET /health"]


async def test_llama_server_without_max_tokens_stops_at_the_end_of_the_context() -> None:
    async with LlamaServer(context_tokens=400) as server, httpx.AsyncClient() as client:
        answer = await client.post(
            server.base_url + "/chat/completions",
            json=chat(fmt=schema_format(UNBOUNDED), system="You judge reports."),
        )
    assert answer.json()["choices"][0]["finish_reason"] == "length"


# -- Ollama ---------------------------------------------------------------------------------


async def test_ollama_ignores_a_format_it_does_not_know_and_knows_its_models() -> None:
    async with OllamaServer() as server, httpx.AsyncClient() as client:
        url = server.base_url + "/chat/completions"
        other = await client.post(url, json=chat(fmt={"type": "yaml"}, max_tokens=400))
        missing = await client.post(url, json=chat() | {"model": "mistral:7b"})
        root = await client.get(server.origin + "/")
    assert other.status_code == 200 and server.calls[0].grammar == FREE
    assert other.json()["system_fingerprint"] == "fp_ollama"
    assert missing.status_code == 404
    assert missing.json() == {
        "error": {
            "message": "model 'mistral:7b' not found",
            "type": "not_found_error",
            "param": None,
            "code": None,
        }
    }
    assert root.text == "Ollama is running"


async def test_ollama_cuts_a_long_prompt_without_a_word() -> None:
    async with OllamaServer() as server, httpx.AsyncClient() as client:
        answer = await client.post(
            server.base_url + "/chat/completions",
            json=chat("<!-- quality: good -->" + "x" * 20000, fmt=schema_format(), max_tokens=400),
        )
    assert answer.status_code == 200
    (call,) = server.calls
    assert call.truncated and call.evaluated_tokens == 4096 - (4096 - 5) // 2
    assert answer.json()["usage"]["prompt_tokens"] == call.evaluated_tokens
    # the system prompt and the quality mark were cut: scored blind
    scores = json.loads(answer.json()["choices"][0]["message"]["content"])["scores"]
    assert scores == {"semantic": 3, "pragmatic": 3, "syntactic": 4}


async def test_ollama_says_its_context_where_it_says_it() -> None:
    async with OllamaServer(modelfile_num_ctx=8192) as server, httpx.AsyncClient() as client:
        show = (
            await client.post(server.origin + "/api/show", json={"model": "qwen2.5:0.5b"})
        ).json()
        unknown = await client.post(server.origin + "/api/show", json={"model": "nope"})
        before = (await client.get(server.origin + "/api/ps")).json()
        await client.post(server.base_url + "/chat/completions", json=chat(max_tokens=400))
        after = (await client.get(server.origin + "/api/ps")).json()
        listed = (await client.get(server.base_url + "/models")).json()
    assert show["model_info"]["qwen2.context_length"] == 32768
    assert show["parameters"].startswith("num_ctx 8192\n")
    assert unknown.status_code == 404 and unknown.json() == {"error": "model 'nope' not found"}
    assert before == {"models": []}
    assert [m["context_length"] for m in after["models"]] == [8192]
    assert [m["id"] for m in listed["data"]] == ["qwen2.5:0.5b", "llama3.2:1b"]


@pytest.mark.parametrize("server", [LlamaCppPythonServer, LlamaServer, OllamaServer])
async def test_a_body_that_is_not_json_is_refused(server: type[LlamaServer]) -> None:
    async with server() as fake, httpx.AsyncClient() as client:
        answer = await client.post(fake.base_url + "/chat/completions", content=b"x{")
    assert answer.status_code in (400, 422, 500)
    assert fake.calls[0].written is None
