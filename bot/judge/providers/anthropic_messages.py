"""The Anthropic Messages protocol (`POST {base}/v1/messages`).

Messages has no structured-output switch, so the schema always travels as instructions
in the system prompt (a tier's `output_mode` changes nothing here); and it takes the
system prompt as a field of its own, not as a turn, so system messages are folded into
it. An answer stopped at the output-token limit (`stop_reason: max_tokens`) is returned
marked `cut_off`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from bot.judge.providers.http import (
    Completion,
    HTTPProvider,
    MalformedResponse,
    OutputMode,
    completion_of,
    with_instructions,
)

ANTHROPIC_VERSION = "2023-06-01"


class AnthropicMessagesProvider(HTTPProvider):
    kind = "anthropic"

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        api_key: str,
        *,
        anthropic_version: str = ANTHROPIC_VERSION,
    ) -> None:
        super().__init__(client, base_url, api_key)
        self._version = anthropic_version

    async def complete(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, str]],
        time_limit: float,
        response_schema: Mapping[str, Any] | None = None,
        schema_name: str = "verdict",
        max_tokens: int = 1024,
        output_mode: OutputMode | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        del output_mode  # the schema always travels as instructions
        prepared = with_instructions(messages, response_schema)
        system = "\n\n".join(m["content"] for m in prepared if m.get("role") == "system")
        turns = [
            {"role": m["role"], "content": m["content"]}
            for m in prepared
            if m.get("role") != "system"
        ]
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "messages": turns,
        }
        if system:
            body["system"] = system
        headers = {
            "x-api-key": self._api_key,
            "anthropic-version": self._version,
            "content-type": "application/json",
        }
        started = time.perf_counter()
        response = await self._post(
            self.base_url + "/v1/messages",
            model=model,
            headers=headers,
            body=body,
            time_limit=time_limit,
            max_tokens=max_tokens,
        )
        self._raise_for_status(response, model)
        payload = self._json(response, model)
        latency_ms = (time.perf_counter() - started) * 1000.0
        content = payload.get("content")
        if not isinstance(content, list):
            raise MalformedResponse(
                f"anthropic answer for model {model} has no content",
                provider=self.kind,
                model=model,
            )
        text = "".join(
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        )
        return completion_of(
            self.kind,
            model,
            text,
            payload,
            latency_ms,
            ("input_tokens", "output_tokens"),
            cut_off=payload.get("stop_reason") == "max_tokens",
        )
