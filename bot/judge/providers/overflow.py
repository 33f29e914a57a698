"""How a server says a prompt is longer than its model's context.

`context_overflow` reads an error answer as a refusal of an over-long prompt, in each
server's words, with the numbers it gives:

    llama-cpp-python    "Requested tokens (N) exceed context window of M" (400, or 500
                        when its handler does not reword it), or OpenAI's wording below
    llama-server        "request (N tokens) exceeds the available context size (M
                        tokens)" or "the request exceeds the available context size";
                        type `exceed_context_size_error`, `n_prompt_tokens`, `n_ctx`
    vLLM, OpenAI        "This model's maximum context length is M tokens. However, you
                        requested T tokens (N in the messages, C in the completion)";
                        newer vLLM: "... maximum context length is M tokens and your
                        request has N input tokens"; code `context_length_exceeded`
    Ollama              "input length exceeds the context length" (its OpenAI endpoint
                        usually cuts the prompt silently instead, which is why the
                        prompt is fitted before it is sent)
    Anthropic           "prompt is too long: N tokens > M maximum"
    TGI                 422 "Input validation error: `inputs` tokens + `max_new_tokens`
                        must be <= M. Given: N `inputs` tokens and C `max_new_tokens`"
    Gemini              400 "The input token count (N) exceeds the maximum number of
                        tokens allowed (M)"

The provider raises such a refusal as `ContextOverflow` (bot/judge/providers/http.py), and
the engine shrinks the prompt and asks again (bot/judge/engine/rounds.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


def positive_count(value: Any) -> int | None:
    """A count a server's JSON gave (a positive integer, not a bool), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


@dataclass(frozen=True)
class Overflow:
    """A refusal of an over-long prompt: the tokens the server counted in the prompt and
    its context, each when it said."""

    prompt_tokens: int | None
    context_tokens: int | None


_OVERFLOW_WORDS = (
    "context window",
    "context size",
    "context length",
    "maximum context",
    "context_length_exceeded",
    "prompt is too long",
    "`max_new_tokens` must be <=",
    "exceeds the maximum number of tokens",
)
_OVERFLOW_STATUSES = frozenset({400, 413, 422, 500})
_CONTEXT_PATTERNS = (
    re.compile(r"exceed context window of (\d+)"),
    re.compile(r"available context size \((\d+) tokens\)"),
    re.compile(r"maximum context length is (\d+) tokens"),
    re.compile(r"tokens > (\d+) maximum"),
    re.compile(r"`max_new_tokens` must be <= (\d+)"),
    re.compile(r"maximum number of tokens allowed \((\d+)\)"),
)
_PROMPT_PATTERNS = (
    re.compile(r"Requested tokens \((\d+)\)"),
    re.compile(r"request \((\d+) tokens\)"),
    re.compile(r"\((\d+) in the messages"),
    re.compile(r"request has (\d+) input tokens"),
    re.compile(r"prompt is too long: (\d+) tokens"),
    re.compile(r"Given: (\d+) `inputs` tokens"),
    re.compile(r"input token count \((\d+)\)"),
)


def _first_number(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match is not None:
            return int(match[1])
    return None


def context_overflow(status: int, payload: Any, message: str) -> Overflow | None:
    """Whether an error answer (`status`, its decoded JSON `payload` or None, its error's
    `message`) refuses the prompt as longer than the context, and the numbers it gives."""
    if status not in _OVERFLOW_STATUSES:
        return None
    error = payload.get("error", payload) if isinstance(payload, dict) else None
    error = error if isinstance(error, dict) else {}
    code = " ".join(str(error.get(k, "")) for k in ("type", "code"))
    lowered = f"{message} {code}".lower()
    if not any(word in lowered for word in (*_OVERFLOW_WORDS, "exceed_context_size")):
        return None
    return Overflow(
        prompt_tokens=positive_count(error.get("n_prompt_tokens"))
        or _first_number(_PROMPT_PATTERNS, message),
        context_tokens=positive_count(error.get("n_ctx"))
        or _first_number(_CONTEXT_PATTERNS, message),
    )
