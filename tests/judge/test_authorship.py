"""Authorship trailers and model ids map to one family vocabulary (four-eyes)."""

from __future__ import annotations

import pytest

from bot.judge.authorship import detect_authoring_families, family_of_model


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("opencode/gpt-5-nano", "openai"),
        ("opencode/gpt-5.1-codex-mini", "openai"),
        ("gpt-4o", "openai"),
        ("o3-mini", "openai"),
        ("o1", "openai"),
        ("gpt-oss-120b", "openai"),
        ("opencode/kimi-k2.5-free", "moonshot"),
        ("moonshotai/Kimi-K2-Instruct", "moonshot"),
        ("claude-opus-4-5-20250514", "anthropic"),
        ("github-copilot/claude-sonnet-4", "anthropic"),
        ("bedrock/anthropic.claude-3-haiku", "anthropic"),
        ("cerebras/llama-3.3-70b", "meta"),
        ("meta-llama/Llama-3.1-8B-Instruct", "meta"),
        ("google/gemini-2.5-flash", "google"),
        ("gemma-2-9b", "google"),
        ("mistral-large-latest", "mistral"),
        ("codestral-2501", "mistral"),
        ("qwen/qwen3-coder", "alibaba"),
        ("deepseek-r1-distill-llama-70b", "deepseek"),
        ("zai-glm-4.6", "zhipu"),
        ("x-ai/grok-4", "xai"),
        ("command-r-plus", "cohere"),
        ("phi-4", "microsoft"),
        ("  GPT-4O  ", "openai"),
    ],
)
def test_family_of_model(model: str, family: str) -> None:
    assert family_of_model(model) == family


def test_unknown_model_keeps_its_name() -> None:
    """Two unknown models are never assumed to share a family."""
    assert family_of_model("fastest") == "unknown:fastest"
    assert family_of_model("proxy/Mystery-7B") == "unknown:mystery-7b"


def test_custom_patterns_come_first() -> None:
    assert family_of_model("fastest", {"^fastest$": "meta"}) == "meta"
    assert family_of_model("gpt-4o", {"gpt": "azure-openai"}) == "azure-openai"


def msg(*trailers: str, body: str = "Fix the parser\n\nDetails here.") -> str:
    return body + "\n\n" + "\n".join(trailers)


@pytest.mark.parametrize(
    ("message", "families"),
    [
        (msg("Co-authored-by: Claude <noreply@anthropic.com>"), ["anthropic"]),
        (msg("Co-Authored-By: Claude <noreply@anthropic.com>"), ["anthropic"]),
        (msg("Generated-by: gpt-4o"), ["openai"]),
        (msg("Agent-Model: kimi-k2"), ["moonshot"]),
        (msg("Model: gemini-2.5-pro"), ["google"]),
        (msg("Assisted-by: Llama 3.3 70B"), ["meta"]),
        (msg("Co-authored-by: aider (gpt-4o) <noreply@aider.chat>"), ["openai"]),
        (msg("Signed-off-by: Codex <codex@openai.com>"), ["openai"]),
        (
            msg("🤖 Generated with [Claude Code](https://claude.com/claude-code)"),
            ["anthropic"],
        ),
        (
            msg("Co-authored-by: Claude <noreply@anthropic.com>", "Agent-Model: o3-mini"),
            ["anthropic", "openai"],
        ),
        (msg("Co-authored-by: Jane Doe <jane@example.com>"), []),
        (msg("Reviewed-by: Claude <noreply@anthropic.com>"), []),
        (msg(body="Switch the gpt parser to claude-style prompts"), []),
        ("", []),
    ],
)
def test_detect_authoring_families(message: str, families: list[str]) -> None:
    assert detect_authoring_families([message]) == families


def test_trailers_anywhere_in_message_and_across_commits() -> None:
    """Agents place trailers loosely; every commit of the change counts."""
    commits = [
        "Agent-Model: deepseek-v3\n\nfirst commit body",
        "second\n\nGenerated-with: Qwen3-Coder",
        "third, human only",
    ]
    assert detect_authoring_families(commits) == ["alibaba", "deepseek"]


def test_custom_patterns_for_trailers() -> None:
    assert detect_authoring_families(["x\n\nAgent: house-bot-v2"], {"house-bot": "inhouse"}) == [
        "inhouse"
    ]
