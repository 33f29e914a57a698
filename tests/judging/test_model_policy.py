"""JUDGE_ALLOWED_MODELS: which repository model overrides are refused, how the refusal
reads, and where in `.github/judge.yml` it is put."""

from __future__ import annotations

import json

import pytest

from bot.judging.config_file import ConfigIssue, issues_at, parse_repo_config
from bot.judging.model_policy import (
    RefusedModel,
    disallowed_models,
    is_allowed,
    refusal_message,
)
from bot.judging.repo_config import ModelsConfig, RepoConfig

# -- matching one name ------------------------------------------------------------------

MATCHES: list[tuple[list[str], str, bool]] = [
    # No list: the operator has not restricted anything.
    ([], "anything/at:all", True),
    # Exact names match the whole name only.
    (["gpt-4o"], "gpt-4o", True),
    (["gpt-4o"], "gpt-4o-mini", False),
    (["gpt-4o"], "openai/gpt-4o", False),
    (["gpt-4.1"], "gpt-4x1", False),
    # A name prefix does not let another route through.
    (["claude-*"], "claude-sonnet-4.5", True),
    (["claude-*"], "claude-", True),
    (["claude-*"], "claude", False),
    (["claude-*"], "openrouter/anthropic/claude-sonnet-4.5", False),
    (["*/claude-*"], "openrouter/anthropic/claude-sonnet-4.5", True),
    (["openrouter/anthropic/*"], "openrouter/anthropic/claude-sonnet-4.5", True),
    (["openrouter/anthropic/*"], "openrouter/openai/gpt-5", False),
    # `*` crosses `/`, `:` and `.`.
    (["openai/*"], "openai/gpt-4o", True),
    (["openai/*"], "openai/o3/high", True),
    (["openai/*"], "openaix/gpt-4o", False),
    (["openai/*"], "azure/openai/gpt-4o", False),
    (["qwen3:*"], "qwen3:32b", True),
    (["qwen3:*"], "qwen3", False),
    (["*"], "x/y:z.1", True),
    # `?` and sets.
    (["gpt-4?"], "gpt-4o", True),
    (["gpt-4?"], "gpt-4", False),
    (["[gk]*"], "kimi-k2", True),
    (["[!gk]*"], "kimi-k2", False),
    # Case matters, both ways.
    (["Claude-*"], "claude-sonnet-4.5", False),
    (["claude-*"], "Claude-sonnet-4.5", False),
    (["GPT-4o"], "GPT-4o", True),
    # Several globs: any one is enough.
    (["gpt-4o", "claude-*", "qwen3:*"], "qwen3:8b", True),
    (["gpt-4o", "claude-*", "qwen3:*"], "mistral-large", False),
]


@pytest.mark.parametrize(("allowed", "model", "expected"), MATCHES)
def test_is_allowed(allowed: list[str], model: str, expected: bool) -> None:
    assert is_allowed(model, allowed) is expected


# -- every tier of one config --------------------------------------------------------------


def config(**models: str) -> RepoConfig:
    return RepoConfig(models=ModelsConfig(**models))


TIERS: list[tuple[RepoConfig, list[str], list[RefusedModel]]] = [
    # Nothing overridden: nothing to refuse, whatever the list.
    (RepoConfig(), ["claude-*"], []),
    # No list: any override stands.
    (config(quick="a", deep="b", tiebreaker="c"), [], []),
    # One tier outside the list.
    (config(quick="gpt-5"), ["claude-*"], [RefusedModel("quick", "gpt-5")]),
    (config(deep="gpt-5"), ["claude-*"], [RefusedModel("deep", "gpt-5")]),
    (config(tiebreaker="gpt-5"), ["claude-*"], [RefusedModel("tiebreaker", "gpt-5")]),
    # Every tier inside it.
    (config(quick="claude-a", deep="qwen3:32b"), ["claude-*", "qwen3:*"], []),
    # Several tiers, some outside, in the order the tiers are declared.
    (
        config(tiebreaker="llama", quick="gpt-5", deep="claude-opus"),
        ["claude-*"],
        [RefusedModel("quick", "gpt-5"), RefusedModel("tiebreaker", "llama")],
    ),
    (
        config(quick="x", deep="y", tiebreaker="z"),
        ["w"],
        [RefusedModel("quick", "x"), RefusedModel("deep", "y"), RefusedModel("tiebreaker", "z")],
    ),
    # Case: the name as written must match.
    (config(quick="Claude-opus"), ["claude-*"], [RefusedModel("quick", "Claude-opus")]),
]


@pytest.mark.parametrize(("repo", "allowed", "expected"), TIERS)
def test_disallowed_models(
    repo: RepoConfig, allowed: list[str], expected: list[RefusedModel]
) -> None:
    assert disallowed_models(repo, allowed) == expected


def test_every_tier_of_the_file_is_checked() -> None:
    """A tier added to `models:` later is governed without touching the policy."""
    every = {tier: f"m-{tier}" for tier in ModelsConfig.model_fields}
    refused = disallowed_models(RepoConfig(models=ModelsConfig(**every)), ["none"])
    assert [r.tier for r in refused] == list(ModelsConfig.model_fields)
    assert all(r.loc == ("models", r.tier) for r in refused)


def test_parsed_overrides_are_matched_as_written() -> None:
    """The file's value, whitespace trimmed by the schema, is what the globs see."""
    repo = parse_repo_config("models:\n  quick: '  claude-opus  '\n")
    assert disallowed_models(repo, ["claude-*"]) == []


# -- the message ---------------------------------------------------------------------------


def test_refusal_names_the_model_the_globs_and_the_setting() -> None:
    message = refusal_message(RefusedModel("quick", "gpt-5"), ["claude-*", "openai/*"])
    assert message == (
        'model "gpt-5" is not allowed for repository overrides; the operator allows only '
        'models matching "claude-*", "openai/*" (JUDGE_ALLOWED_MODELS): pick a model they '
        "match, or remove this key to use the installation's model"
    )


def test_refusal_clips_a_long_model_and_a_long_list() -> None:
    """The file's author chooses the model's length and the operator the list's."""
    allowed = [f"family-{i}-*" for i in range(12)] + ["x" * 200]
    message = refusal_message(RefusedModel("deep", "m" * 5000), allowed)
    assert json.dumps("m" * 77 + "...") in message
    assert "m" * 78 not in message
    assert '"family-9-*" and 3 more' in message
    assert "family-10" not in message
    assert len(message) < 600


def test_refusal_quotes_what_it_names() -> None:
    message = refusal_message(RefusedModel("quick", 'a"b\nc'), ["x"])
    assert '"a\\"b\\nc"' in message
    assert "\n" not in message


# -- where the refusal is put in the file -------------------------------------------------

FILE = """\
mode: blocking
models:
  quick: gpt-5
  # the deep tier stays the operator's
  tiebreaker:   llama-3.3-70b
"""


def test_issues_are_on_the_line_and_column_of_each_value() -> None:
    issues = issues_at(FILE, [(("models", "quick"), "one"), (("models", "tiebreaker"), "two")])
    assert issues == [
        ConfigIssue(3, 10, "models.quick", "one"),
        ConfigIssue(5, 17, "models.tiebreaker", "two"),
    ]


def test_flow_mapping_values_share_a_line_and_differ_in_column() -> None:
    text = "models: {quick: a, deep: b}\n"
    issues = issues_at(text, [(("models", "quick"), "q"), (("models", "deep"), "d")])
    assert [(i.line, i.column, i.key) for i in issues] == [
        (1, 17, "models.quick"),
        (1, 26, "models.deep"),
    ]


def test_a_location_the_file_lacks_falls_on_its_deepest_section() -> None:
    [issue] = issues_at(FILE, [(("models", "deep"), "m")])
    assert (issue.line, issue.key) == (3, "models.deep")
    [issue] = issues_at("mode: blocking\n", [(("models", "deep"), "m")])
    assert (issue.line, issue.key) == (1, "models.deep")


def test_an_aliased_section_is_located_through_its_anchor() -> None:
    text = "x-shared: &m\n  quick: gpt-5\nmodels: *m\n"
    [issue] = issues_at(text, [(("models", "quick"), "m")])
    assert issue.line == 2


@pytest.mark.parametrize("text", ["", "# nothing\n", "models: [unclosed\n", "a: *nowhere\n"])
def test_text_without_a_mapping_puts_the_issue_on_line_one(text: str) -> None:
    """Only a text that parsed is located; should one not compose, the key still says where."""
    [issue] = issues_at(text, [(("models", "quick"), "m")])
    assert (issue.line, issue.column, issue.key, issue.message) == (1, 1, "models.quick", "m")


def test_the_sentence_names_file_line_key_and_reason() -> None:
    refused = RefusedModel("quick", "gpt-5")
    [issue] = issues_at(FILE, [(refused.loc, refusal_message(refused, ["claude-*"]))])
    assert issue.sentence().startswith(
        '.github/judge.yml line 3, key models.quick: model "gpt-5" is not allowed'
    )
