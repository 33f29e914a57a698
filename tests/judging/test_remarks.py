"""Reviews and comments by people with write access are directives; nobody else's are."""

from __future__ import annotations

import pytest

from bot.github.types import Remark
from bot.judging.remarks import MAX_REMARKS, REMARK_LIMIT, binding_remarks


def directives(*remarks: Remark, author: str | None = "agent") -> list[str]:
    return binding_remarks(remarks, pull_author=author, commit_people=["Agent Bot", "agent-2"])


@pytest.mark.parametrize(
    ("remark", "binding"),
    [
        (Remark("maint", "review", "add tests", can_push=True), True),
        (Remark("reader", "review", "add tests", can_push=False), False),
        (Remark("owner", "comment", "rename it", association="OWNER"), True),
        (Remark("member", "comment", "rename it", association="MEMBER"), False),
        (Remark("maint", "review", "  ", can_push=True), False),
        (Remark("ci", "review", "ok", can_push=True, is_bot=True), False),
        (Remark("Agent", "review", "done", can_push=True), False),
        (Remark("agent-2", "comment", "done", association="OWNER"), False),
    ],
    ids=[
        "writer-review",
        "reader-review",
        "owner-comment",
        "member-comment",
        "empty",
        "bot",
        "pull-author",
        "commit-author",
    ],
)
def test_who_may_direct_the_change(remark: Remark, binding: bool) -> None:
    assert bool(directives(remark)) is binding


def test_a_reviewer_with_push_access_makes_their_comments_binding_too() -> None:
    found = directives(
        Remark("Maint", "review", "", can_push=True),
        Remark("maint", "review comment", "name it greet", can_push=True, path="src/a.py"),
        Remark("maint", "comment", "and update the docs", association="MEMBER"),
    )
    assert found == [
        "Review comment by @maint on src/a.py: name it greet",
        "Comment by @maint: and update the docs",
    ]


def test_directives_are_capped_in_count_and_length() -> None:
    many = [Remark("maint", "review", f"note {n} " + "x" * 3000, can_push=True) for n in range(15)]
    found = directives(*many, author=None)
    assert len(found) == MAX_REMARKS
    assert found[0].startswith("Review by @maint: note 5 ")
    assert len(found[0]) == len("Review by @maint: ") + REMARK_LIMIT
