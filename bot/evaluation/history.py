"""A dataset from the App's own records (`judge-bot eval --from-history`): the changes
whose right answer the team has already given.

* **overridden**: a change with a person's standing decision (`/judge override accept`
  or `reject`, not cancelled; `bot.reports.facts.human_decisions`, as calibration reads
  it) is labelled with that decision. The judgment it is built from is the judges' last
  one of that change.
* **reverted**: a change the judges accepted, nobody overrode, and a later commit
  reverted (`This reverts commit <sha>` in its message, as `git revert` writes it) is
  labelled reject, when the revert landed on the default branch and undid a commit the
  branch held before (`GitClone.reverts`). A revert names the commit it undoes; that is
  the judged head, or, for a squash or merge commit, a commit that changed the judged
  files and holds exactly the content the judges read (the records keep each file's
  SHA-256).

Records keep paths and content hashes, not the files, so the files are read from a
clone (`CommitSource`, git in a directory; the records read are the repository its
origin names, unless the caller names one) at the judged commit, and an example is made
only when every file there is exactly what the judges read; the others are counted by
why they were left out. A record keeps the task's description but not its acceptance
criteria, so the examples carry the description alone.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from bot.evaluation.dataset import Example, ExampleFile, TaskText
from bot.judge.records import RubricName, Verdict, content_sha256
from bot.reports.facts import ChangeKey, RecordFact, facts_of_rows, human_decisions
from bot.storage.base import Storage, StoredVerdict

LabelKind = Literal["overridden", "reverted"]
_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{7,40})")
# A remote on a server: scheme://[user@]host[:port]/OWNER/NAME or scp-like user@host:OWNER/NAME.
_REMOTE = re.compile(
    r"^(?:[a-z][a-z0-9+.-]*://[^/]+/|[^/@:]+@[^/:]+:)"
    r"(?P<owner>[A-Za-z0-9_.-]+)/(?P<name>[A-Za-z0-9_.-]+?)(?:\.git)?/?$"
)
EMPTY_SHA256 = content_sha256("")

NOT_IN_CLONE = "its commit is not in this clone"
CONTENT_DIFFERS = "a file in the clone is not what the judges read"
NO_FILES = "the record names no file to judge"


@dataclass(frozen=True)
class Labelled:
    """A stored judgment and the label the team gave it."""

    kind: LabelKind
    expected: Verdict
    stored: StoredVerdict
    by: str | None = None
    """Who overrode (overridden), or the reverting commit (reverted)."""
    read_at: str | None = None
    """The commit to read the files at (the judged head, or the reverted commit)."""


@dataclass(frozen=True)
class Candidates:
    """The window's labelled judgments, and the accepted ones a revert may label."""

    overridden: list[Labelled]
    accepted: list[StoredVerdict]


def latest_by_change(facts: Iterable[RecordFact]) -> dict[ChangeKey, RecordFact]:
    latest: dict[ChangeKey, RecordFact] = {}
    for fact in facts:
        latest[fact.change] = fact
    return latest


def choose(facts: Sequence[RecordFact]) -> tuple[dict[int, tuple[Verdict, str]], list[int]]:
    """From a log's facts (oldest first): the judgments a person's standing decision
    labels (sequence number -> the decision and who made it), and the accepted judgments
    nobody overrode. One judgment per change, its latest; changes without a head sha cannot be
    read from a clone and are left out."""
    humans = human_decisions(facts)
    judgments = latest_by_change(f for f in facts if f.human is None and f.head_sha)
    people = latest_by_change(f for f in facts if f.human is not None and f.head_sha)
    labelled: dict[int, tuple[Verdict, str]] = {}
    for change, human in humans.items():
        judged = judgments.get(change) or people.get(change)
        verdict = human.verdict
        if judged is not None and (verdict is Verdict.ACCEPT or verdict is Verdict.REJECT):
            labelled[judged.seq] = (verdict, human.by)
    accepted = [
        fact.seq
        for change, fact in judgments.items()
        if change not in humans and fact.decision is Verdict.ACCEPT
    ]
    return labelled, sorted(accepted)


async def candidates(storage: Storage, repository: str | None) -> Candidates:
    """Read the log (of one repository, when given) for `choose`'s judgments."""
    facts, _ = facts_of_rows(await storage.list_verdict_facts(repository=repository))
    labelled, accepted = choose(facts)
    stored = {s.seq: s for s in await storage.get_verdicts([*labelled, *accepted])}
    # The log is append-only: every record whose facts were just read is there.
    overridden = [
        Labelled(
            kind="overridden",
            expected=verdict,
            stored=stored[seq],
            by=by,
            read_at=stored[seq].head_sha,
        )
        for seq, (verdict, by) in sorted(labelled.items())
    ]
    return Candidates(overridden, [stored[s] for s in accepted])


class CommitSource(Protocol):
    """What `build` reads from a clone."""

    async def reverts(self) -> list[tuple[str, str]]:
        """(reverting commit, full sha of the commit it reverts) for every revert that
        landed on the default branch, of a commit the branch held before."""

    async def has(self, commit: str) -> bool:
        """Whether the clone holds `commit`."""

    async def changed(self, commit: str) -> frozenset[str]:
        """The paths `commit` changed against its first parent."""

    async def read(self, commit: str, path: str) -> str | None:
        """The file at `commit`, None when the commit or the path is not there."""


@dataclass
class BuiltExamples:
    examples: list[Example] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)


def recorded_files(record: Mapping[str, object]) -> dict[str, str]:
    """path -> the SHA-256 the judges read, for every file the record names."""
    hashes = record.get("content_hashes")
    files = record.get("files")
    if not isinstance(hashes, dict) or not isinstance(files, list):
        return {}
    return {p: hashes[p] for p in files if isinstance(p, str) and isinstance(hashes.get(p), str)}


async def files_at(
    source: CommitSource, commit: str, wanted: Mapping[str, str]
) -> list[ExampleFile] | str:
    """The judged files as they are at `commit`, or why they cannot be had. A file the
    judges read as empty and the commit lacks was removed by the change: left out."""
    files = []
    for path, digest in wanted.items():
        content = await source.read(commit, path)
        if content is None and digest == EMPTY_SHA256:
            continue
        if content is None or content_sha256(content) != digest:
            return CONTENT_DIFFERS
        files.append(ExampleFile(path=path, content=content))
    return files or NO_FILES


async def reverted(source: CommitSource, accepted: Sequence[StoredVerdict]) -> list[Labelled]:
    """The accepted judgments a revert in the clone undid, each labelled reject."""
    found: dict[int, Labelled] = {}
    for reverting, commit in await source.reverts():
        changed = await source.changed(commit)
        for stored in accepted:
            if stored.seq in found:
                continue
            wanted = recorded_files(stored.record)
            same_head = stored.head_sha == commit
            if not same_head and not changed & set(wanted):
                continue
            if same_head or isinstance(await files_at(source, commit, wanted), list):
                found[stored.seq] = Labelled(
                    "reverted", Verdict.REJECT, stored, by=reverting, read_at=commit
                )
    return [found[seq] for seq in sorted(found)]


def example_of(labelled: Labelled, files: list[ExampleFile]) -> Example:
    stored = labelled.stored
    record = stored.record
    description = record.get("description")
    rubric = record.get("rubric")
    source: dict[str, object] = {
        "kind": labelled.kind,
        "seq": stored.seq,
        "repository": stored.repository,
        "head_sha": stored.head_sha,
        "judged": stored.verdict,
    }
    source["decided_by" if labelled.kind == "overridden" else "reverted_by"] = labelled.by
    return Example(
        id=f"{labelled.kind}-{stored.seq}",
        task=TaskText(
            id=stored.task_id,
            description=description
            if isinstance(description, str) and description.strip()
            else f"Task {stored.task_id}",
        ),
        rubric=_rubric(rubric),
        files=files,
        expected="accept" if labelled.expected is Verdict.ACCEPT else "reject",
        source=source,
    )


def _rubric(value: object) -> RubricName:
    try:
        return RubricName(str(value))
    except ValueError:
        return RubricName.CONTENT


async def build(source: CommitSource, found: Candidates) -> BuiltExamples:
    """The examples the clone can give, overridden changes first, then reverted ones."""
    built = BuiltExamples()
    for labelled in [*found.overridden, *await reverted(source, found.accepted)]:
        wanted = recorded_files(labelled.stored.record)
        if not wanted:
            built.skipped[NO_FILES] += 1
            continue
        assert labelled.read_at is not None
        files = await files_at(source, labelled.read_at, wanted)
        if isinstance(files, str):
            held = await source.has(labelled.read_at)
            built.skipped[files if held else NOT_IN_CLONE] += 1
            continue
        built.examples.append(example_of(labelled, files))
        built.kinds[labelled.kind] += 1
    return built


def repository_of_remote(url: str) -> str | None:
    """OWNER/NAME of a remote on a server (GitHub's or an Enterprise host), None for a
    path on this machine or anything else."""
    match = _REMOTE.match(url.strip())
    return f"{match['owner']}/{match['name']}" if match else None


class GitClone:
    """`CommitSource` over the git repository in `directory`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    async def _git(self, *args: str) -> str | None:
        proc = await asyncio.create_subprocess_exec(
            "git",
            *args,
            cwd=self.directory,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        out, _ = await proc.communicate()
        return out.decode("utf-8", errors="replace") if proc.returncode == 0 else None

    async def check(self) -> bool:
        """Whether the directory is in a git repository."""
        return await self._git("rev-parse", "--git-dir") is not None

    async def origin_repository(self) -> str | None:
        """The repository the clone's origin remote names, if it names one."""
        url = await self._git("remote", "get-url", "origin")
        return repository_of_remote(url) if url is not None else None

    async def default_branch(self) -> str:
        """origin's default branch where the clone knows it, else what is checked out."""
        named = await self._git("symbolic-ref", "--quiet", "refs/remotes/origin/HEAD")
        return named.strip() if named else "HEAD"

    async def reverts(self) -> list[tuple[str, str]]:
        """Reverts that landed on the default branch, of a commit it held before the
        revert landed: not one on a branch never merged, nor a pull request's revert of
        its own earlier commit (that undid nothing the branch had)."""
        branch = await self.default_branch()
        chain = (await self._git("rev-list", "--first-parent", branch) or "").split()
        log = await self._git("log", branch, "--format=%H%x1f%B%x1e") or ""
        found = []
        for chunk in log.split("\x1e"):
            commit, _, message = chunk.strip("\n").partition("\x1f")
            for named in _REVERTS.findall(message):
                full = await self._git("rev-parse", "--verify", "--quiet", f"{named}^{{commit}}")
                if full is None:
                    continue
                before = await self._held_before(commit, chain)
                if before is not None and await self._is_ancestor(full.strip(), before):
                    found.append((commit, full.strip()))
        return found

    async def _held_before(self, commit: str, chain: list[str]) -> str | None:
        """The default branch just before `commit` landed on it: the first-parent commit
        before the one that brought it in (itself, or the merge of its branch). `chain`
        is the branch's first-parent history, newest first; every commit of it after the
        landing holds `commit`, so the landing is found by halving."""
        newest, oldest = 0, len(chain) - 1
        while newest < oldest:
            middle = (newest + oldest + 1) // 2
            if await self._is_ancestor(commit, chain[middle]):
                newest = middle
            else:
                oldest = middle - 1
        landed = newest + 1
        return chain[landed] if landed < len(chain) else None

    async def _is_ancestor(self, commit: str, of: str) -> bool:
        return await self._git("merge-base", "--is-ancestor", commit, of) is not None

    async def has(self, commit: str) -> bool:
        return await self._git("cat-file", "-e", f"{commit}^{{commit}}") is not None

    async def changed(self, commit: str) -> frozenset[str]:
        out = await self._git(
            "diff-tree", "--no-commit-id", "--name-only", "-r", "-m", "--first-parent",
            "--root", commit,
        )  # fmt: skip
        return frozenset(line for line in (out or "").splitlines() if line)

    async def read(self, commit: str, path: str) -> str | None:
        return await self._git("cat-file", "blob", f"{commit}:{path}")
