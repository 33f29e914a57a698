"""`judge-bot pre-push`: the git pre-push hook of seed 000, phases A and B.

git runs the hook with the remote's name and URL as arguments and one stdin line per
ref being pushed: `<local ref> <local sha> <remote ref> <remote sha>`. For each ref:

1. skip deletions (local sha all zeros);
2. commits being pushed: `git log <local> ^<remote>`, or for a new branch every commit
   not yet on any remote-tracking ref;
3. keep commits by the configured authors (`JUDGE_AUTHORS`, author or committer name
   or email; all commits when unset);
4. watched files they touched (`JUDGE_PATHS` globs, default Markdown under research/,
   knowledge/, docs/, plans/) read at the local sha with `git show`;
5. one judgment per ref through the engine, in the parts its judges read whole
   (bot.cli.judged_change: windows of a long file, batches of many), records appended to
   storage (DATABASE_URL, else `judge-bot.sqlite3` at the top of the work tree, where git
   runs the hook, so `judge-bot verdicts export` run in the repository reads it; see
   bot.settings).

Exit status (seed 000): advisory mode (`JUDGE_MODE=advisory`, the default) never
blocks; blocking mode blocks when a ref got NO-GO (`judgment.go_no_go`, the rule the
App's records use too: any score of the deciding judgment below 3, even when the
protocol escalated). UNDETERMINED (no judge answered), provider errors and crashes never
block. `GIT_JUDGE_SKIP=1` bypasses everything, as does git's own `--no-verify`.

Settings the hook cannot read (a `.env` git tracks, a bad `JUDGE_*` value) are
not a crash: the push would go unjudged while the user believes blocking mode guards
it. So the hook says so loudly, and in blocking mode refuses the push with one line on
how to go on (`unreadable_settings`). Which mode is meant is read from
`JUDGE_MODE` alone (`intended_mode`), from the environment or even a `.env` the loader
refuses: that one value can only make the hook stricter, never send a key anywhere.

A push with nothing to judge says so in one line (`nothing_watched`), so a user can
tell the hook ran.

How "crashes never block" holds even for a crash the command cannot catch (an import
error, the interpreter killed): the command signals a deliberate block with its own
status, `BLOCK_EXIT` (10), and the installed hook script turns exactly that into 1 and
every other status into 0. An uncaught Python exception exits 1, which the script
does not pass on.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from bot.cli.judged_change import JudgedChange, JudgedPart
from bot.cli.terminal import Say
from bot.judge.engine import JudgeRequest
from bot.judge.engine.judgment import record_go_no_go
from bot.judge.records import JudgedFile, RubricName, TaskSpec, VerdictRecord
from bot.judge.watched_authors import is_listed_author

BLOCK_EXIT = 10
"""Status of `judge-bot pre-push` that means "block this push"; see the module doc."""
HOOK_MARKER = "judge-bot pre-push hook"
DEFAULT_ACCEPTANCE = (
    "Content is factually correct, actionable for its readers, and internally consistent "
    "and well-structured (no broken references)."
)


class GitError(RuntimeError):
    """A git command failed; the message carries git's stderr."""


@dataclass(frozen=True)
class RefUpdate:
    local_ref: str
    local_sha: str
    remote_ref: str
    remote_sha: str

    @property
    def is_deletion(self) -> bool:
        return set(self.local_sha) == {"0"}

    @property
    def is_new_branch(self) -> bool:
        return set(self.remote_sha) == {"0"}


@dataclass(frozen=True)
class Commit:
    sha: str
    author_name: str
    author_email: str
    committer_name: str
    committer_email: str
    message: str


# -- pure decisions -----------------------------------------------------------------


def parse_push_lines(text: str) -> list[RefUpdate]:
    """The ref updates git wrote to the hook's stdin; malformed lines are ignored."""
    updates: list[RefUpdate] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        local_ref, local_sha, remote_ref, remote_sha = parts
        if not all(re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", s) for s in (local_sha, remote_sha)):
            continue
        updates.append(RefUpdate(local_ref, local_sha, remote_ref, remote_sha))
    return updates


@dataclass(frozen=True)
class _Step:
    """A way out of a glob state: on `char` (or, when `negated`, on any other character)."""

    char: str
    negated: bool
    target: int


@dataclass(frozen=True)
class PathGlob:
    """A compiled path glob: a small automaton (NFA) stepped over the path one character
    at a time, keeping every state the pattern could be in. A match is linear in the
    path's length whatever the pattern (each character costs at most the square of the
    pattern's length, and never backtracks); the regex this replaces backtracked, and
    `*a*a*a*a*a*a*b` against a long run of `a` took minutes."""

    steps: tuple[tuple[_Step, ...], ...]
    closures: tuple[frozenset[int], ...]
    """Each state and the states it reaches without reading a character."""
    accept: int

    def fullmatch(self, path: str) -> bool:
        states = self.closures[0]
        for char in path:
            following: set[int] = set()
            for state in states:
                for step in self.steps[state]:
                    if (char == step.char) != step.negated:
                        following |= self.closures[step.target]
            if not following:
                return False
            states = frozenset(following)
        return self.accept in states


class _GlobBuilder:
    """Thompson's construction for the five glob tokens, one state per position."""

    def __init__(self) -> None:
        self.steps: list[list[_Step]] = [[]]
        self.empty: list[list[int]] = [[]]
        self.end = 0

    def _new(self) -> int:
        self.steps.append([])
        self.empty.append([])
        return len(self.steps) - 1

    def one(self, char: str, *, negated: bool = False) -> None:
        """One character: `char`, or (negated) any character but `char`."""
        nxt = self._new()
        self.steps[self.end].append(_Step(char, negated, nxt))
        self.end = nxt

    def repeat(self, excluded: str) -> None:
        """Any run of characters other than `excluded`, the empty run included."""
        self.steps[self.end].append(_Step(excluded, True, self.end))
        nxt = self._new()
        self.empty[self.end].append(nxt)
        self.end = nxt

    def directories(self) -> None:
        """Nothing, or a run ending in `/` that holds no newline (`(?:.*/)?`)."""
        inside, nxt = self._new(), self._new()
        self.empty[self.end] += [nxt, inside]
        self.steps[inside] += [_Step("\n", True, inside), _Step("/", False, nxt)]
        self.end = nxt

    def build(self) -> PathGlob:
        return PathGlob(
            steps=tuple(tuple(s) for s in self.steps),
            closures=tuple(self._closure(n) for n in range(len(self.steps))),
            accept=self.end,
        )

    def _closure(self, start: int) -> frozenset[int]:
        seen = {start}
        todo = [start]
        while todo:
            for nxt in self.empty[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return frozenset(seen)


@lru_cache(maxsize=256)
def path_glob(pattern: str) -> PathGlob:
    """Compile a path glob: `**/` any directories (or none), `**` anything, `*` and `?`
    within one path segment, everything else literal. As regular expressions these are
    `(?:.*/)?`, `.*`, `[^/]*` and `[^/]`: `.` stops at a newline, `[^/]` does not."""
    glob = _GlobBuilder()
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            glob.directories()
            i += 3
        elif pattern.startswith("**", i):
            glob.repeat("\n")
            i += 2
        elif pattern[i] == "*":
            glob.repeat("/")
            i += 1
        elif pattern[i] == "?":
            glob.one("/", negated=True)
            i += 1
        else:
            glob.one(pattern[i])
            i += 1
    return glob.build()


def is_watched(path: str, patterns: Iterable[str]) -> bool:
    return any(path_glob(p).fullmatch(path) for p in patterns)


def by_watched_author(commit: Commit, authors: Sequence[str]) -> bool:
    """The `authors` rule (`watched_authors`) over a commit's author and committer."""
    people = (
        commit.author_name,
        commit.author_email,
        commit.committer_name,
        commit.committer_email,
    )
    return is_listed_author(authors, people)


def hook_exit_code(mode: str, records: Sequence[VerdictRecord]) -> int:
    """Phase A never blocks; phase B blocks (`BLOCK_EXIT`) on NO-GO only, as the App's
    records label it (`record_go_no_go`, not a label a cached record carried)."""
    if mode == "blocking" and any(record_go_no_go(r) == "NO-GO" for r in records):
        return BLOCK_EXIT
    return 0


def task_id_for(update: RefUpdate) -> str:
    return f"push:{update.remote_ref}@{update.local_sha[:12]}"


def decision_note(label: str, decision: str) -> str:
    """` (escalate)` after a NO-GO label: the decision only when it adds to the label,
    so an undetermined judgment reads `UNDETERMINED`, not `UNDETERMINED (undetermined)`."""
    return "" if decision.upper() == label else f" ({decision})"


SHOWN_PATTERNS = 4


def nothing_watched(authors: Sequence[str], patterns: Sequence[str]) -> str:
    """The one line for a push the hook ran on and found nothing to judge in."""
    shown = ", ".join(patterns[:SHOWN_PATTERNS])
    if len(patterns) > SHOWN_PATTERNS:
        shown += f", ... ({len(patterns)} in all)"
    files = f"a watched file (JUDGE_PATHS: {shown or 'none'})"
    who = "by a watched author (JUDGE_AUTHORS) " if authors else ""
    return f"[judge] nothing to judge: no pushed commit {who}touched {files}"


MODE_VARIABLE = "JUDGE_MODE"


def intended_mode(*sources: Mapping[str, str | None]) -> str:
    """`JUDGE_MODE` from the first source that sets it (names compared without case, as
    the settings loader does), `advisory` when none does. Anything but `advisory` counts
    as blocking: a user who wrote `Blocking` or `block` meant the hook to guard pushes."""
    for source in sources:
        for name, value in source.items():
            if name.upper() == MODE_VARIABLE and value is not None and value.strip():
                return "advisory" if value.strip().lower() == "advisory" else "blocking"
    return "advisory"


def unreadable_settings(problem: str, mode: str, dotenv_tracked: bool) -> tuple[list[str], int]:
    """What the hook says, and its status, when it cannot read its settings (the
    environment and `.env`; the messages keep the word users know, configuration)."""
    lines = [
        "[judge] WARNING: cannot read the judge's configuration; this push is NOT judged",
        f"[judge] WARNING: {problem}",
    ]
    if dotenv_tracked:
        lines.append(
            "[judge] WARNING: git tracks .env: if it holds a key, pushing publishes it; "
            "`git rm --cached .env` and take it out of the commits not yet pushed, and "
            "rotate the key if it was pushed before"
        )
    if mode == "blocking":
        lines.append(
            f"[judge] BLOCKED: {MODE_VARIABLE} is blocking and the push cannot be judged; fix "
            "the configuration and push again, or push unjudged: GIT_JUDGE_SKIP=1 git push"
        )
        return lines, BLOCK_EXIT
    lines.append("[judge] push not blocked (advisory mode)")
    return lines, 0


# -- git I/O ----------------------------------------------------------------------------


class Git:
    """Runs git in one working directory."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd

    async def run(self, *args: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            "git",
            *args,
            cwd=self.cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        if proc.returncode != 0:
            raise GitError(f"git {args[0]} failed: {err.decode(errors='replace').strip()}")
        return out.decode("utf-8", errors="replace")

    async def commits(self, update: RefUpdate, remote: str | None) -> list[Commit]:
        fmt = "%H%x1f%an%x1f%ae%x1f%cn%x1f%ce%x1f%B%x1e"
        if update.is_new_branch:
            revs = [update.local_sha, "--not", f"--remotes={remote}" if remote else "--remotes"]
        else:
            revs = [update.local_sha, f"^{update.remote_sha}"]
        try:
            out = await self.run("log", f"--format={fmt}", *revs, "--")
        except GitError:
            # The remote sha may be unknown locally (someone else pushed): fall back to
            # everything not on a remote-tracking ref.
            out = await self.run(
                "log", f"--format={fmt}", update.local_sha, "--not", "--remotes", "--"
            )
        commits: list[Commit] = []
        for chunk in out.split("\x1e"):
            fields = chunk.strip("\n").split("\x1f")
            if len(fields) == 6:
                commits.append(Commit(*fields))
        return commits

    async def touched_paths(self, sha: str) -> list[str]:
        out = await self.run(
            "diff-tree", "--no-commit-id", "--name-only", "-r", "-m", "--root", sha
        )
        return [line for line in out.splitlines() if line]

    async def show(self, sha: str, path: str) -> str | None:
        try:
            return await self.run("show", f"{sha}:{path}")
        except GitError:
            return None  # deleted by a later commit of the push

    async def tree_paths(self, sha: str) -> frozenset[str]:
        out = await self.run("ls-tree", "-r", "--name-only", sha)
        return frozenset(line for line in out.splitlines() if line)


async def build_request(
    git: Git,
    update: RefUpdate,
    *,
    remote: str | None,
    remote_url: str | None,
    authors: Sequence[str],
    patterns: Sequence[str],
) -> JudgeRequest | None:
    """The judgment for one pushed ref, or None when there is nothing to judge."""
    if update.is_deletion:
        return None
    commits = [c for c in await git.commits(update, remote) if by_watched_author(c, authors)]
    if not commits:
        return None
    touched: list[str] = []
    for commit in commits:
        for path in await git.touched_paths(commit.sha):
            if path not in touched and is_watched(path, patterns):
                touched.append(path)
    files: list[JudgedFile] = []
    for path in sorted(touched):
        content = await git.show(update.local_sha, path)
        if content is not None:
            files.append(JudgedFile(path=path, content=content, status="modified"))
    if not files:
        return None
    subjects = [c.message.strip().splitlines()[0] for c in commits if c.message.strip()]
    repository = remote_url or remote
    return JudgeRequest(
        task=TaskSpec(
            task_id=task_id_for(update),
            description=f"Changes pushed to {update.remote_ref}: " + "; ".join(subjects[:10]),
            acceptance=DEFAULT_ACCEPTANCE,
        ),
        files=files,
        rubric=RubricName.CONTENT,
        commit_messages=[c.message for c in commits],
        repository=repository,
        head_sha=update.local_sha,
        scope=f"pre-push:{repository or git.cwd}",
        known_paths=await git.tree_paths(update.local_sha),
    )


JudgeChange = Callable[[JudgeRequest], Awaitable[JudgedChange]]
"""Judges one ref's change, in the parts its judges read whole (bot.cli.judged_change)."""


async def run_hook(
    *,
    git: Git,
    stdin_text: str,
    remote: str | None,
    remote_url: str | None,
    mode: str,
    authors: Sequence[str],
    patterns: Sequence[str],
    judge: JudgeChange,
    say: Say,
) -> int:
    """Judge every pushed ref; the exit status git should see."""
    records: list[VerdictRecord] = []
    for update in parse_push_lines(stdin_text):
        request = await build_request(
            git, update, remote=remote, remote_url=remote_url, authors=authors, patterns=patterns
        )
        if request is None:
            continue
        change = await judge(request)
        records.extend(change.records)
        label = change.go_no_go
        note = decision_note(label, change.verdict.value)
        say(
            f"[judge] {label} {update.remote_ref}{note}: "
            + ", ".join(f.path for f in request.files)
        )
        for judged in change.parts:
            _say_part(judged, len(change.parts) > 1, say)
    if not records:
        say(nothing_watched(authors, patterns))
    code = hook_exit_code(mode, records)
    if code:
        say("[judge] BLOCKED: Content did not pass quality check.")
        say("[judge] Fix the flagged issues and push again.")
        say("[judge] Emergency override: GIT_JUDGE_SKIP=1 git push")
    return code


def _say_part(judged: JudgedPart, several: bool, say: Say) -> None:
    """A part's reason and, for a NO-GO, its findings; which part, when there are several."""
    record = judged.record
    where = f" ({judged.describe()})" if several else ""
    if record.reason:
        say(f"[judge] Reason{where}: {record.reason}")
    if record_go_no_go(record) == "NO-GO":
        say(f"[judge] Findings{where}: {record.reasoning or 'no details'}")
        for item in record.improvements:
            say(f"[judge]   - {item}")


def skip_requested(environ: Mapping[str, str]) -> bool:
    return environ.get("GIT_JUDGE_SKIP", "") == "1"


def hook_script(python: str) -> str:
    """The shell script `install-hook` writes: runs this interpreter's judge CLI (git's
    stdin passes through) and blocks only on `BLOCK_EXIT`; a missing interpreter or any
    other status lets the push go."""
    quoted = "'" + python.replace("'", "'\\''") + "'"
    shown = python.replace("'", "'\\''")
    return (
        "#!/bin/sh\n"
        f"# {HOOK_MARKER} (installed by `judge-bot install-hook`; remove to disable)\n"
        f"if [ ! -x {quoted} ]; then\n"
        f"  echo '[judge] interpreter {shown} not found; skipping judge' >&2\n"
        "  exit 0\n"
        "fi\n"
        f'{quoted} -m bot.judge.console pre-push "$@"\n'
        "status=$?\n"
        f'if [ "$status" -eq {BLOCK_EXIT} ]; then\n'
        "  exit 1\n"
        "fi\n"
        'if [ "$status" -ne 0 ]; then\n'
        '  echo "[judge] the judge failed (exit status $status); push not blocked" >&2\n'
        "fi\n"
        "exit 0\n"
    )
