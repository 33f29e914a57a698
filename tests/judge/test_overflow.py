"""bot/judge/providers/overflow.py: a refusal of an over-long prompt in each server's words,
and the refusals that are not one."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from bot.judge.providers import ContextOverflow, ProviderHTTPError
from bot.judge.providers.http import HTTPProvider
from bot.judge.providers.overflow import Overflow, context_overflow

VLLM = (
    "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens "
    "(7976 in the messages, 1024 in the completion). Please reduce the length of the "
    "messages or completion."
)
VLLM_NEW = (
    "'max_tokens' or 'max_completion_tokens' is too large: 1024. This model's maximum "
    "context length is 2048 tokens and your request has 1500 input tokens (1024 > 2048 - 1500)."
)

# status, body as the server sends it -> what is read from it
CASES: list[tuple[str, int, Any, Overflow | None]] = [
    (
        # llama-cpp-python's raw ValueError (llama.py), when its handler does not reword it
        "llama-cpp-python-raw",
        500,
        {
            "error": {
                "message": "Requested tokens (2765) exceed context window of 2048",
                "type": "internal_server_error",
                "param": None,
                "code": None,
            }
        },
        Overflow(2765, 2048),
    ),
    (
        "llama-cpp-python-400",
        400,
        {"error": {"message": "Requested tokens (2765) exceed context window of 2048"}},
        Overflow(2765, 2048),
    ),
    (
        # ... and as its error handler rewords it (llama_cpp/server/errors.py)
        "llama-cpp-python-reworded",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 2048 tokens. However, you "
                "requested 3789 tokens (2765 in the messages, 1024 in the completion). Please "
                "reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
        Overflow(2765, 2048),
    ),
    (
        "llama-server",
        400,
        {
            "error": {
                "code": 400,
                "message": "request (9315 tokens) exceeds the available context size (8192 "
                "tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 9315,
                "n_ctx": 8192,
            }
        },
        Overflow(9315, 8192),
    ),
    (
        # an older llama-server: the numbers are fields only
        "llama-server-older",
        400,
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 5000,
                "n_ctx": 4096,
            }
        },
        Overflow(5000, 4096),
    ),
    (
        "vllm",
        400,
        {"object": "error", "message": VLLM, "type": "BadRequestError", "param": None, "code": 400},
        Overflow(7976, 8192),
    ),
    (
        "vllm-newer",
        400,
        {"object": "error", "message": VLLM_NEW, "type": "BadRequestError", "code": 400},
        Overflow(1500, 2048),
    ),
    (
        "ollama",
        400,
        {"error": {"message": "the input length exceeds the context length", "type": "api_error"}},
        Overflow(None, None),
    ),
    (
        "anthropic",
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 210000 tokens > 200000 maximum",
            },
        },
        Overflow(210000, 200000),
    ),
    (
        # text-generation-inference (its router's validation)
        "tgi",
        422,
        {
            "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= "
            "4096. Given: 3900 `inputs` tokens and 1024 `max_new_tokens`",
            "error_type": "validation",
        },
        Overflow(3900, 4096),
    ),
    (
        "gemini",
        400,
        {
            "error": {
                "code": 400,
                "message": "The input token count (1234567) exceeds the maximum number of "
                "tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            }
        },
        Overflow(1234567, 1048576),
    ),
    (
        "format-refusal",
        500,
        {"error": {"message": "[{'loc': ('body', 'response_format', 'type')}]"}},
        None,
    ),
    ("rate-limited", 429, {"error": {"message": "maximum context length is 8 tokens"}}, None),
    ("unauthorised", 401, {"error": {"message": "Incorrect API key provided."}}, None),
    ("not-json", 500, None, None),
]


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [(s, b, e) for _, s, b, e in CASES],
    ids=[name for name, *_ in CASES],
)
async def test_what_a_refusal_says(status: int, body: Any, expected: Overflow | None) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        if body is None:
            return httpx.Response(status, text="upstream connect error")
        return httpx.Response(status, content=json.dumps(body).encode())

    provider = HTTPProvider(httpx.AsyncClient(), "http://local/v1", "")
    provider.kind = "openai"
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        response = await client.get("http://local/v1/x")
    with pytest.raises(ProviderHTTPError) as caught:
        provider._raise_for_status(response, "m")
    if expected is None:
        assert not isinstance(caught.value, ContextOverflow)
    else:
        assert isinstance(caught.value, ContextOverflow)
        assert caught.value.overflow == expected
        assert caught.value.status == status
        assert caught.value.server_message


def test_the_words_alone_decide_only_at_the_statuses_servers_use() -> None:
    assert context_overflow(404, None, "context length") is None
    assert context_overflow(413, None, "maximum context length is 100 tokens") == Overflow(
        None, 100
    )
    # a code alone names it
    assert context_overflow(400, {"error": {"code": "context_length_exceeded"}}, "") == Overflow(
        None, None
    )
    # a number that is not a positive integer is not one
    error = {"type": "exceed_context_size_error", "n_ctx": True, "n_prompt_tokens": -1}
    assert context_overflow(400, {"error": error}, "") == Overflow(None, None)
