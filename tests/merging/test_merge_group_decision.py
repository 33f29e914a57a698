"""Whether a merge group needs the judges (bot/merging/merge_group.py)."""

from __future__ import annotations

import pytest

from bot.github.types import ChangedPath
from bot.judging.config_file import parse_repo_config
from bot.judging.repo_config import RepoConfig
from bot.merging.merge_group import (
    GroupDecision,
    GroupPlan,
    GroupPull,
    decide_group,
    pass_summary,
    queued_pulls,
    watched_paths,
)

SHA = "0123456789abcdef0123456789abcdef01234567"
DEFAULT = RepoConfig()


def changed(*paths: str, status: str = "modified") -> tuple[ChangedPath, ...]:
    return tuple(ChangedPath(path, status) for path in paths)


def pull(number: int, verdict: str | None, *paths: str) -> GroupPull:
    return GroupPull(number, f"{number:040x}", verdict, changed(*paths))


@pytest.mark.parametrize(
    ("head_ref", "numbers"),
    [
        (f"refs/heads/gh-readonly-queue/main/pr-104-{SHA}", (104,)),
        (f"refs/heads/gh-readonly-queue/release/v2/pr-7-{SHA}", (7,)),
        (f"refs/heads/gh-readonly-queue/pr-3-branch/pr-12-{SHA}", (12,)),
        ("refs/heads/main", ()),
        ("refs/heads/gh-readonly-queue/main/pr-x-abc1234", ()),
        ("", ()),
    ],
)
def test_queued_pulls(head_ref: str, numbers: tuple[int, ...]) -> None:
    assert queued_pulls(head_ref) == numbers


def test_watched_paths_ignore_the_file_limit_and_removed_files() -> None:
    config = parse_repo_config("limits:\n  max_files: 1\npaths:\n  exclude: ['docs/x.md']\n")
    files = (
        *changed("docs/a.md", "docs/b.md", "src/c.py", "docs/x.md"),
        ChangedPath("docs/gone.md", "removed"),
    )
    assert watched_paths(config, files) == {"docs/a.md", "docs/b.md"}


@pytest.mark.parametrize(
    ("pulls", "group", "decision"),
    [
        # Every pull request accepted, the group changes only what they did: carried over.
        ([pull(1, "accept", "docs/a.md")], changed("docs/a.md"), GroupDecision(GroupPlan.PASS)),
        (
            [pull(1, "accept", "docs/a.md"), pull(2, "accept", "docs/b.md")],
            changed("docs/b.md", "docs/a.md", "src/gen.py"),
            GroupDecision(GroupPlan.PASS),
        ),
        # The group needs not change all they did (the base may already have it).
        ([pull(1, "accept", "docs/a.md")], (), GroupDecision(GroupPlan.PASS)),
        # A watched change no accepted pull request brought is judged.
        (
            [pull(1, "accept", "docs/a.md")],
            changed("docs/a.md", "docs/z.md"),
            GroupDecision(GroupPlan.JUDGE, (), ("docs/z.md",)),
        ),
        # A pull request not accepted at its head: its files do not count as read.
        (
            [pull(1, "accept", "docs/a.md"), pull(2, "reject", "docs/b.md")],
            changed("docs/a.md", "docs/b.md"),
            GroupDecision(GroupPlan.JUDGE, (2,), ("docs/b.md",)),
        ),
        (
            [pull(1, None, "docs/a.md")],
            changed("docs/a.md"),
            GroupDecision(GroupPlan.JUDGE, (1,), ("docs/a.md",)),
        ),
        (
            [pull(1, "escalate"), pull(2, "skipped")],
            changed("src/a.py"),
            GroupDecision(GroupPlan.NOTHING, (1, 2)),
        ),
        # No pull request known (a ref GitHub named otherwise): the change decides.
        ([], changed("docs/a.md"), GroupDecision(GroupPlan.JUDGE, (), ("docs/a.md",))),
        ([], changed("src/a.py"), GroupDecision(GroupPlan.NOTHING)),
        ([], (), GroupDecision(GroupPlan.NOTHING)),
    ],
)
def test_decide_group(
    pulls: list[GroupPull], group: tuple[ChangedPath, ...], decision: GroupDecision
) -> None:
    assert decide_group(DEFAULT, pulls, group) == decision


def test_pull_request_accepted_means_its_final_verdict_is_accept() -> None:
    assert pull(1, "accept").accepted
    assert not any(pull(1, v).accepted for v in ("reject", "improve", "skipped", None))


@pytest.mark.parametrize(("count", "title"), [(1, "1 pull request"), (2, "2 pull requests")])
def test_pass_summary_lists_each_pull_request(count: int, title: str) -> None:
    pulls = [pull(n, "accept") for n in range(1, count + 1)]
    got_title, summary = pass_summary(pulls, SHA)
    assert got_title == f"accept · {title} accepted"
    assert "no model was asked again" in summary
    assert summary.count("**accept** at `") == count
    assert f"`{SHA[:7]}`" in summary
