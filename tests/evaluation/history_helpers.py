"""A git clone and a verdict log that tell the same story, for `--from-history` tests.

The clone has five commits (one file each) and two reverts; the log holds the judges'
records of them and the people's overrides:

    a.md  accepted, reverted by `git revert` (its head is the reverted commit) -> reject
    b.md  improve, a person overrode to accept                                  -> accept
    c.md  accepted, a person overrode to reject                                 -> reject
    d.md  accepted at a pull request head not in the clone; the squash commit
          holding exactly that content was reverted                             -> reject
    e.md  accepted, never reverted or overridden                                -> nothing
    plus: an override of a commit not in the clone, an override whose file the clone
    holds with other content, an override of a record naming no file, an override later
    cancelled, and a record without a head sha.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.judge.engine import append_record
from bot.judge.records import Tier, Verdict, content_sha256, go_no_go_of
from bot.storage.base import Storage
from tests.support.verdict_builders import make_record

REPO = "Octo/Repo"
PR_HEAD = "f" * 40
ABSENT = "e" * 40
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def commit_file(cwd: Path, path: str, content: str) -> str:
    target = cwd / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    git(cwd, "add", path)
    git(cwd, "commit", "-q", "-m", f"add {path}")
    return git(cwd, "rev-parse", "HEAD")


def text(name: str) -> str:
    return f"# {name}\n\nThe cache warms within a minute of each deploy.\n"


@dataclass
class Story:
    clone: Path
    shas: dict[str, str]
    reverts: dict[str, str]


def make_clone(root: Path) -> Story:
    clone = root / "clone"
    clone.mkdir()
    git(clone, "init", "-q", "-b", "main")
    # The repository the records name: --from-history reads only its records by default.
    git(clone, "remote", "add", "origin", "https://github.com/Octo/Repo.git")
    shas = {name: commit_file(clone, f"docs/{name}.md", text(name)) for name in "abcde"}
    reverts = {}
    for name in ("a", "d"):
        git(clone, "revert", "--no-edit", shas[name])
        reverts[name] = git(clone, "rev-parse", "HEAD")
    return Story(clone, shas, reverts)


class Log:
    """Appends records one minute apart, so they keep their order."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.at = START

    async def add(self, **fields: Any) -> None:
        self.at += timedelta(minutes=1)
        await append_record(self.storage, make_record(timestamp=self.at, **fields))

    async def judged(self, name: str, head: str | None, verdict: Verdict, **extra: Any) -> None:
        path = f"docs/{name}.md"
        fields: dict[str, Any] = {
            "task_id": f"task-{name}",
            "repository": REPO,
            "head_sha": head,
            "files": [path],
            "content_hashes": {path: content_sha256(text(name))},
            "verdict": verdict,
            "final_decision": verdict,
            "go_no_go": go_no_go_of(verdict),
            "description": f"Write {name}",
            "judge_tier": Tier.DEEP,
        }
        fields.update(extra)
        await self.add(**fields)

    async def person(
        self, name: str, head: str | None, verdict: Verdict | None, **extra: Any
    ) -> None:
        """A person's record: an override to `verdict`, or a cancel (None)."""
        decided = verdict or Verdict.ACCEPT
        await self.judged(
            name,
            head,
            decided,
            decided_by="maintainer",
            human_override=verdict is not None,
            mode="human",
            **extra,
        )


async def tell(storage: Storage, story: Story) -> None:
    log = Log(storage)
    s = story.shas
    await log.judged("a", s["a"], Verdict.ACCEPT)
    await log.judged("b", s["b"], Verdict.REJECT)
    await log.judged("b", s["b"], Verdict.IMPROVE)  # judged again: this one is labelled
    await log.person("b", s["b"], Verdict.ACCEPT)
    await log.judged("c", s["c"], Verdict.ACCEPT, rubric="research")
    await log.person("c", s["c"], Verdict.REJECT, rubric="research")
    await log.judged("d", PR_HEAD, Verdict.ACCEPT)
    await log.judged("e", s["e"], Verdict.ACCEPT)
    # left out, each for its reason
    await log.judged("x", ABSENT, Verdict.REJECT)
    await log.person("x", ABSENT, Verdict.ACCEPT)
    await log.judged("e", s["a"], Verdict.IMPROVE, task_id="task-e-at-a")  # e.md not at a's commit
    await log.person("e", s["a"], Verdict.ACCEPT, task_id="task-e-at-a")
    await log.judged("n", s["c"], Verdict.REJECT, files=[], content_hashes={}, task_id="nofile")
    await log.person("n", s["c"], Verdict.ACCEPT, files=[], content_hashes={}, task_id="nofile")
    # taken back: no label
    await log.judged("c", s["c"], Verdict.REJECT, task_id="task-c-again")
    await log.person("c", s["c"], Verdict.ACCEPT, task_id="task-c-again")
    await log.person("c", s["c"], None, task_id="task-c-again")
    # no head sha: cannot be read from a clone
    await log.judged("a", None, Verdict.ACCEPT, task_id="task-no-head")
    await log.person("a", None, Verdict.REJECT, task_id="task-no-head")
