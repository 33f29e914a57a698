"""Whether a merge group needs the judges (bot/merging/merge_group.py)."""

from __future__ import annotations

import pytest

from bot.github.types import ChangedPath
from bot.judging.config_file import parse_repo_config
from bot.judging.repo_config import RepoConfig
from bot.merging.github_calls import blobs_of
from bot.merging.merge_group import (
    GroupDecision,
    GroupPlan,
    GroupPull,
    decide_group,
    judge_reason,
    merged_heads,
    pass_summary,
    pull_with_head,
    pulls_named_by_ref,
    watched_paths,
)

SHA = "0123456789abcdef0123456789abcdef01234567"
DEFAULT = RepoConfig()


def changed(*paths: str, status: str = "modified") -> tuple[ChangedPath, ...]:
    return tuple(ChangedPath(path, status) for path in paths)


def blob(path: str, version: str = "") -> str | None:
    """The blob of `path` at some head; the same path and version, the same content."""
    return f"{path}{version}"


def pull(number: int, verdict: str | None, *paths: str, **versions: str) -> GroupPull:
    """A pull request changing `paths`; `versions` gives some of them other content
    (keyed by the path with `/` and `.` as `_`)."""
    blobs = {p: blob(p, versions.get(p.replace("/", "_").replace(".", "_"), "")) for p in paths}
    return GroupPull(number, f"{number:040x}", verdict, changed(*paths), blobs)


def group(*paths: str) -> tuple[tuple[ChangedPath, ...], dict[str, str | None]]:
    """A group changing `paths`, each with the content a pull request brought unchanged."""
    return changed(*paths), {p: blob(p) for p in paths}


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
def test_pulls_named_by_ref(head_ref: str, numbers: tuple[int, ...]) -> None:
    assert pulls_named_by_ref(head_ref) == numbers


def test_watched_paths_ignore_the_file_limit_and_removed_files() -> None:
    config = parse_repo_config("limits:\n  max_files: 1\npaths:\n  exclude: ['docs/x.md']\n")
    files = (
        *changed("docs/a.md", "docs/b.md", "src/c.py", "docs/x.md"),
        ChangedPath("docs/gone.md", "removed"),
    )
    assert watched_paths(config, files) == {"docs/a.md", "docs/b.md"}


@pytest.mark.parametrize(
    ("pulls", "change", "decision"),
    [
        # Every pull request accepted, the group changes only what they did: carried over.
        ([pull(1, "accept", "docs/a.md")], group("docs/a.md"), GroupDecision(GroupPlan.PASS)),
        (
            [pull(1, "accept", "docs/a.md"), pull(2, "accept", "docs/b.md")],
            group("docs/b.md", "docs/a.md", "src/gen.py"),
            GroupDecision(GroupPlan.PASS),
        ),
        # Three pull requests in one group, each carried over.
        (
            [
                pull(1, "accept", "docs/a.md"),
                pull(2, "accept", "docs/b.md"),
                pull(3, "accept", "docs/c.md"),
            ],
            group("docs/a.md", "docs/b.md", "docs/c.md"),
            GroupDecision(GroupPlan.PASS),
        ),
        # The group needs not change all they did (the base may already have it).
        ([pull(1, "accept", "docs/a.md")], group(), GroupDecision(GroupPlan.PASS)),
        # A file removed by the pull request and by the group: nothing left to read.
        (
            [GroupPull(1, "1" * 40, "accept", changed("docs/a.md"), {"docs/a.md": None})],
            (changed("docs/a.md"), {"docs/a.md": None}),
            GroupDecision(GroupPlan.PASS),
        ),
        # A watched change no accepted pull request brought is judged.
        (
            [pull(1, "accept", "docs/a.md")],
            group("docs/a.md", "docs/z.md"),
            GroupDecision(GroupPlan.JUDGE, (), ("docs/z.md",)),
        ),
        # The same path with other content: the base or another pull request changed it too,
        # so the merged file is content no judge read.
        (
            [pull(1, "accept", "docs/a.md", docs_a_md="-theirs")],
            group("docs/a.md"),
            GroupDecision(GroupPlan.JUDGE, (), ("docs/a.md",)),
        ),
        (
            [
                pull(1, "accept", "docs/a.md", docs_a_md="-one"),
                pull(2, "accept", "docs/a.md", docs_a_md="-two"),
            ],
            group("docs/a.md"),
            GroupDecision(GroupPlan.JUDGE, (), ("docs/a.md",)),
        ),
        # A file GitHub gave no blob for matches nothing.
        (
            [pull(1, "accept", "docs/a.md")],
            (changed("docs/a.md"), {}),
            GroupDecision(GroupPlan.JUDGE, (), ("docs/a.md",)),
        ),
        # A pull request not accepted at its head: its files do not count as read.
        (
            [pull(1, "accept", "docs/a.md"), pull(2, "escalate", "docs/b.md")],
            group("docs/a.md", "docs/b.md"),
            GroupDecision(GroupPlan.JUDGE, (2,), ("docs/b.md",)),
        ),
        # One rejected at its head (judges or a person's override) fails the group: judging
        # it again could overturn the reject. Even when the group changes no watched file.
        (
            [pull(1, "accept", "docs/a.md"), pull(2, "reject", "docs/b.md")],
            group("docs/a.md", "docs/b.md"),
            GroupDecision(GroupPlan.FAIL, rejected=(2,)),
        ),
        (
            [pull(1, "reject"), pull(2, "skipped"), pull(3, "reject")],
            group("src/a.py"),
            GroupDecision(GroupPlan.FAIL, rejected=(1, 3)),
        ),
        (
            [pull(1, None, "docs/a.md")],
            group("docs/a.md"),
            GroupDecision(GroupPlan.JUDGE, (1,), ("docs/a.md",)),
        ),
        (
            [pull(1, "escalate"), pull(2, "skipped")],
            group("src/a.py"),
            GroupDecision(GroupPlan.NOTHING, (1, 2)),
        ),
        # No pull request known (a ref GitHub named otherwise): the change decides.
        ([], group("docs/a.md"), GroupDecision(GroupPlan.JUDGE, (), ("docs/a.md",))),
        ([], group("src/a.py"), GroupDecision(GroupPlan.NOTHING)),
        ([], group(), GroupDecision(GroupPlan.NOTHING)),
    ],
)
def test_decide_group(
    pulls: list[GroupPull],
    change: tuple[tuple[ChangedPath, ...], dict[str, str | None]],
    decision: GroupDecision,
) -> None:
    files, blobs = change
    assert decide_group(DEFAULT, pulls, files, blobs) == decision


A, B, C, BASE, G1, G2, G3 = ("a" * 40, "b" * 40, "c" * 40, "0" * 40, "1" * 40, "2" * 40, "3" * 40)
# The group GitHub builds for three pull requests: base + A, + B, + C, one merge each; the
# pull requests' own commits (A0 before A) are in the compare too.
CHAIN = {G1: (BASE, A), G2: (G1, B), G3: (G2, C), A: ("e" * 40,), "e" * 40: (BASE,), B: (BASE,)}


@pytest.mark.parametrize(
    ("parents", "base", "head", "heads"),
    [
        (CHAIN, BASE, G3, [A, B, C]),
        # GitHub's base for a later group is the group before it: only the newest is new.
        (CHAIN, G2, G3, [C]),
        # A squash or rebase queue: single-parent commits name no pull request head.
        ({G1: (BASE,), G2: (G1,)}, BASE, G2, []),
        # A head the compare did not list, a loop, an empty answer: the walk stops.
        ({}, BASE, G3, []),
        ({G1: (G2, A), G2: (G1, B)}, BASE, G1, [B, A]),
    ],
)
def test_merged_heads_walk_the_first_parent_line(
    parents: dict[str, tuple[str, ...]], base: str, head: str, heads: list[str]
) -> None:
    assert merged_heads(parents, base, head) == heads


def _listed(
    number: object, head: str, base: str = "main", state: str = "open"
) -> dict[str, object]:
    return {"number": number, "state": state, "head": {"sha": head}, "base": {"ref": base}}


@pytest.mark.parametrize(
    ("candidates", "number"),
    [
        ([_listed(7, A)], 7),
        ([_listed(6, B), _listed(7, A)], 7),
        ([_listed(7, A, state="closed")], None),
        ([_listed(7, A, base="release")], None),
        ([_listed("7", A)], None),
        ([{"number": 7}], None),
        ([], None),
    ],
)
def test_pull_with_head_is_the_open_pull_request_into_the_base(
    candidates: list[dict[str, object]], number: int | None
) -> None:
    assert pull_with_head(candidates, A, "main") == number


def test_judge_reason_names_what_was_not_accepted() -> None:
    decision = GroupDecision(GroupPlan.JUDGE, (2, 3), ("docs/b.md",))
    reason = judge_reason(decision)
    assert "not accepted at their head: #2, #3" in reason and "docs/b.md" in reason
    assert judge_reason(GroupDecision(GroupPlan.JUDGE)) == "no pull request of the group was found"


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


def test_blobs_of_diff_entries() -> None:
    entries = [
        {"filename": "a.md", "status": "modified", "sha": "1" * 40},
        {"filename": "b.md", "status": "removed", "sha": "2" * 40},
        {"filename": "c.md", "status": "added"},
    ]
    assert blobs_of(entries) == {"a.md": "1" * 40, "b.md": None}


def test_a_reject_fails_the_group_even_when_github_cut_its_lists() -> None:
    files, blobs = group("docs/a.md")
    decided = decide_group(DEFAULT, [pull(1, "reject", "docs/a.md")], files, blobs, complete=False)
    assert decided == GroupDecision(GroupPlan.FAIL, rejected=(1,))
