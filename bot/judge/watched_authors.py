"""Whose changes are judged: one rule for the pre-push hook (`JUDGE_AUTHORS`) and for a
repository's `.github/judge.yml` `authors`.

An entry is a name, an email or a GitHub login; case does not matter and a leading `@`
(how people write logins) is ignored. No entries means everyone's changes are judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def normalise_author(name: str) -> str:
    return name.strip().removeprefix("@").strip()


def is_listed_author(authors: Sequence[str], people: Iterable[str]) -> bool:
    """True when `authors` is empty or names any of `people` (the authors and committers
    of a commit: names, emails, logins)."""
    if not authors:
        return True
    wanted = {normalise_author(a).casefold() for a in authors} - {""}
    return any(normalise_author(p).casefold() in wanted for p in people if p)
