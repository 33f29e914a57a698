"""What people with write access wrote on a pull request, as directives. Pure.

Seed 003: feedback given while the work goes on is binding. A review (its body and its
inline comments) counts when GitHub says its author can push to the repository
(`authorCanPushToRepository`). A conversation comment carries no such word, so it counts
when its author showed push access by a review on the same pull request, or owns the
repository. The pull request's author and the commits' authors never direct their own
change (four eyes), bots never do, and nobody else's words are directives: a reader
without write access cannot make the judges demand anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bot.github.types import Remark

MAX_REMARKS = 10
REMARK_LIMIT = 2000


def binding_remarks(
    remarks: Sequence[Remark], *, pull_author: str | None, commit_people: Iterable[str]
) -> list[str]:
    """The directives: reviews, then the conversation; the last MAX_REMARKS of them."""
    authors = {name.lower() for name in commit_people}
    if pull_author:
        authors.add(pull_author.lower())
    pushers = {r.author.lower() for r in remarks if r.can_push and not r.is_bot}
    found: list[str] = []
    for remark in remarks:
        login = remark.author.lower()
        if remark.is_bot or login in authors or not remark.body.strip():
            continue
        if not (remark.can_push or login in pushers or remark.association == "OWNER"):
            continue
        where = f" on {remark.path}" if remark.path else ""
        body = remark.body.strip()[:REMARK_LIMIT]
        found.append(f"{remark.kind.capitalize()} by @{remark.author}{where}: {body}")
    return found[-MAX_REMARKS:]
