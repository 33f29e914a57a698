"""The provider interface (`bot/judge/providers/__init__.py`): the factory that turns a
protocol name into a provider. Each protocol is tested in test_openai_chat.py and
test_anthropic_messages.py, the failures and the POST they share in test_provider_http.py."""

from __future__ import annotations

import httpx
import pytest

from bot.judge.providers import AnthropicMessagesProvider, OpenAIChatProvider, make_provider


async def test_make_provider(http: httpx.AsyncClient) -> None:
    assert isinstance(make_provider("openai", http, "http://x/v1", "k"), OpenAIChatProvider)
    assert isinstance(make_provider("anthropic", http, "http://x", "k"), AnthropicMessagesProvider)
    with pytest.raises(ValueError, match="unknown LLM provider"):
        make_provider("cohere", http, "http://x", "k")
