"""`merge.batch_size` and `merge.parallel_checks` in .github/judge.yml: read, bounded, and
carried into the merge policy; both at 1 by default (the serial queue)."""

from __future__ import annotations

import pytest

from bot.judging.config_file import RepoConfigError, parse_repo_config
from bot.merging.eligibility import MergePolicy, merge_policy


def test_unset_both_are_one_the_serial_queue() -> None:
    config = parse_repo_config("merge:\n  enabled: true\n")
    policy = merge_policy(config.merge, False)
    assert (policy.batch_size, policy.parallel_checks) == (1, 1)
    assert MergePolicy(enabled=True).batch_size == 1


def test_set_they_reach_the_policy() -> None:
    config = parse_repo_config("merge:\n  batch_size: 4\n  parallel_checks: 2\n")
    policy = merge_policy(config.merge, True)
    assert (policy.batch_size, policy.parallel_checks) == (4, 2)


@pytest.mark.parametrize(
    "text",
    [
        "merge:\n  batch_size: 0\n",
        "merge:\n  batch_size: 51\n",
        "merge:\n  parallel_checks: 0\n",
        "merge:\n  parallel_checks: 11\n",
        "merge:\n  batch_size: four\n",
    ],
)
def test_out_of_range_is_a_clear_error_naming_the_line(text: str) -> None:
    with pytest.raises(RepoConfigError) as caught:
        parse_repo_config(text)
    assert "line 2" in str(caught.value)
