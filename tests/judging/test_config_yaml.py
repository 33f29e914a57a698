"""YAML read within limits (bot.judging.config_yaml); the hostile files themselves are
tested through `parse_repo_config` in test_config_file.py."""

from __future__ import annotations

import pytest

from bot.judging.config_yaml import (
    MAX_CONFIG_BYTES,
    MAX_NESTING,
    MAX_VALUES,
    LimitExceeded,
    load_within_limits,
)


def test_within_the_limits_the_data_is_what_yaml_says() -> None:
    root, data = load_within_limits("a: &x [1, 2]\nb: *x\nc: {<<: {d: 1}}\n")
    assert root is not None
    assert data == {"a": [1, 2], "b": [1, 2], "c": {"d": 1}}
    assert load_within_limits("# nothing\n") == (None, None)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("x: '" + "a" * MAX_CONFIG_BYTES + "'\n", 1, "over the limit of 64 KiB"),
        ("x: " + "[" * (MAX_NESTING + 5) + "]" * (MAX_NESTING + 5) + "\n", 1, "nested more"),
        ("x: [" + ", ".join(["1"] * (MAX_VALUES + 1)) + "]\n", 1, "more than 10,000 values"),
    ],
    ids=["size", "nesting", "values"],
)
def test_each_limit_is_refused_with_where_and_why(text: str, line: int, words: str) -> None:
    with pytest.raises(LimitExceeded) as refused:
        load_within_limits(text)
    assert refused.value.line == line
    assert words in refused.value.message


def test_aliases_count_in_full() -> None:
    bomb = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    bomb += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 5)]
    with pytest.raises(LimitExceeded, match="counting each use of an alias"):
        load_within_limits("\n".join(bomb) + "\n")


def test_a_recursive_alias_is_named() -> None:
    with pytest.raises(LimitExceeded, match=r"\*a"):
        load_within_limits("paths: &a {include: *a}\n")
