"""The pre-push hook: pure decisions, then real `git push` runs into a bare repository
with the hook installed by `judge-bot install-hook` and the fake LLM as the judge."""

from __future__ import annotations

import asyncio
import os
import random
import re
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.cli.pre_push import (
    BLOCK_EXIT,
    HOOK_MARKER,
    Commit,
    RefUpdate,
    by_watched_author,
    hook_exit_code,
    hook_script,
    is_watched,
    parse_push_lines,
    path_glob,
    skip_requested,
)
from bot.judge.records import RoundRecord, RubricName, Tier, Verdict, VerdictRecord
from bot.storage.sqlite import SqliteStorage
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply

QUICK, DEEP, TIE, ALT = "gpt-5-nano", "kimi-k2.5", "llama-3.3-70b", "gemini-2.5-flash"
ACCEPT = {"scores": {"semantic": 4, "pragmatic": 5, "syntactic": 4}, "reasoning": "solid"}
REJECT = {
    "scores": {"semantic": 1, "pragmatic": 2, "syntactic": 3},
    "reasoning": "claims contradict the data",
    "improvements": ["fix the latency figures"],
}
A, B = "a" * 40, "b" * 40
ZERO = "0" * 40

# ---- pure parts ----------------------------------------------------------------------


def test_parse_push_lines() -> None:
    text = (
        f"refs/heads/main {A} refs/heads/main {B}\n"
        "\n"
        "garbage line\n"
        f"refs/heads/new {A} refs/heads/new {ZERO}\n"
        f"(delete) {ZERO} refs/heads/old {B}\n"
        f"refs/heads/x nothex refs/heads/x {B}\n"
    )
    updates = parse_push_lines(text)
    assert [u.remote_ref for u in updates] == [
        "refs/heads/main",
        "refs/heads/new",
        "refs/heads/old",
    ]
    main, new, old = updates
    assert not main.is_deletion and not main.is_new_branch
    assert new.is_new_branch and not new.is_deletion
    assert old.is_deletion


@pytest.mark.parametrize(
    ("path", "watched"),
    [
        ("research/a.md", True),
        ("research/deep/nested/a.md", True),
        ("knowledge/x.md", True),
        ("docs/guide.md", True),
        ("plans/q1.md", True),
        ("research/a.txt", False),
        ("src/research/a.md", False),
        ("README.md", False),
        ("researchers/a.md", False),
    ],
)
def test_default_watched_paths(path: str, watched: bool) -> None:
    from bot.judge.settings import DEFAULT_WATCHED_PATHS

    assert is_watched(path, DEFAULT_WATCHED_PATHS) is watched


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.md", "a.md", True),
        ("*.md", "dir/a.md", False),
        ("**/*.md", "dir/a.md", True),
        ("**/*.md", "a.md", True),
        ("docs/**", "docs/a/b/c.txt", True),
        ("docs/?.md", "docs/a.md", True),
        ("docs/?.md", "docs/ab.md", False),
        ("a+b/[x].md", "a+b/[x].md", True),
        ("nimbalyst-local/plans/*.md", "nimbalyst-local/plans/p.md", True),
    ],
)
def test_glob_semantics(pattern: str, path: str, expected: bool) -> None:
    assert is_watched(path, [pattern]) is expected


def _backtracking_regex(pattern: str) -> re.Pattern[str]:
    """The translation `path_glob` replaced, kept as the reference for its semantics."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def test_glob_agrees_with_the_regex_translation_on_random_inputs() -> None:
    """Short random patterns and paths over the characters that matter (`/`, a newline,
    regex metacharacters), where the old regex is still quick: the same answer."""
    rng = random.Random(20260215)
    pattern_parts = ["a", "b", "/", ".", "\n", "[", "\\", "*", "**", "**/", "?"]
    path_chars = "ab/.\n["
    for _ in range(20000):
        pattern = "".join(rng.choice(pattern_parts) for _ in range(rng.randint(0, 7)))
        path = "".join(rng.choice(path_chars) for _ in range(rng.randint(0, 10)))
        expected = _backtracking_regex(pattern).fullmatch(path) is not None
        assert path_glob(pattern).fullmatch(path) is expected, (pattern, path)


class _TooSlow(Exception):
    pass


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Fail instead of hanging: SIGALRM interrupts even a regex stuck backtracking."""

    def expire(signum: int, frame: object) -> None:
        raise _TooSlow(f"took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*a" * 30 + "b", "a" * 5000, False),
        ("*a" * 30, "a" * 5000, True),
        ("*?" * 30 + "b", "a" * 5000, False),
        ("**" * 30 + "b", "a/" * 2500, False),
        ("**/" * 30 + "x", "a/" * 3000 + "y", False),
        ("research/**/" + "*a" * 20 + ".md", "research/" + "a/" * 500 + "a" * 3000, False),
    ],
)
def test_hostile_glob_is_linear(pattern: str, path: str, expected: bool) -> None:
    """Patterns whose regex translation backtracks for minutes on these paths."""
    started = time.perf_counter()
    with _time_limit(10):
        assert is_watched(path, [pattern]) is expected
    assert time.perf_counter() - started < 5


def _commit(
    author: str = "Human", email: str = "h@example.com", committer: str = "Human"
) -> Commit:
    return Commit("c" * 40, author, email, committer, "c@example.com", "msg")


def test_by_watched_author() -> None:
    assert by_watched_author(_commit(), [])
    assert by_watched_author(_commit(committer="OpenClaw Agent"), ["openclaw agent"])
    assert by_watched_author(_commit(email="bot@agents.dev"), ["bot@agents.dev"])
    assert not by_watched_author(_commit(), ["OpenClaw Agent"])
    assert not by_watched_author(_commit(author="OpenClaw"), ["OpenClaw Agent"])


def _record(go: str) -> VerdictRecord:
    from datetime import UTC, datetime

    verdict = {"GO": Verdict.ACCEPT, "NO-GO": Verdict.REJECT, "UNDETERMINED": Verdict.ESCALATE}[go]
    return VerdictRecord(
        task_id="t",
        model="",
        mode="quick",
        verdict=verdict,
        timestamp=datetime(2026, 2, 15, tzinfo=UTC),
        round=0,
        rubric=RubricName.CONTENT,
        prompt_version="p",
        final_decision=verdict,
        go_no_go=go,
    )


@pytest.mark.parametrize(
    ("mode", "labels", "code"),
    [
        ("advisory", ["NO-GO"], 0),
        ("advisory", ["GO", "NO-GO", "UNDETERMINED"], 0),
        ("blocking", ["NO-GO"], BLOCK_EXIT),
        ("blocking", ["GO", "NO-GO"], BLOCK_EXIT),
        ("blocking", ["GO", "UNDETERMINED"], 0),
        ("blocking", ["UNDETERMINED"], 0),
        ("blocking", [], 0),
    ],
)
def test_hook_exit_code(mode: str, labels: list[str], code: int) -> None:
    assert hook_exit_code(mode, [_record(label) for label in labels]) == code


def test_hook_blocks_on_the_deciding_scores_not_on_a_stored_label() -> None:
    """Both judges scored below 3 and escalated: NO-GO blocks, whatever label the record
    carried (a cached record may hold one written under an older rule)."""
    low = {"semantic": 2, "pragmatic": 2, "syntactic": 2}
    rounds = [
        RoundRecord(
            round=n, judge_tier=t, model="m", family=t.value, verdict=Verdict.IMPROVE, scores=low
        )
        for n, t in ((1, Tier.QUICK), (2, Tier.DEEP))
    ]
    escalated = _record("UNDETERMINED").model_copy(
        update={"previous_rounds": rounds, "final_decision": Verdict.ESCALATE}
    )
    assert hook_exit_code("blocking", [escalated]) == BLOCK_EXIT
    assert hook_exit_code("advisory", [escalated]) == 0


def test_skip_requested() -> None:
    assert skip_requested({"GIT_JUDGE_SKIP": "1"})
    assert not skip_requested({"GIT_JUDGE_SKIP": "0"})
    assert not skip_requested({})


def test_hook_script_quotes_the_interpreter() -> None:
    script = hook_script("/opt/it's python/bin/python3")
    assert script.startswith("#!/bin/sh\n")
    assert HOOK_MARKER in script
    assert "'/opt/it'\\''s python/bin/python3' -m bot.judge.console pre-push \"$@\"" in script
    # not exec'd: the script must see the status to decide whether to block
    assert "exec " not in script
    assert script.rstrip().endswith("exit 0")


@pytest.mark.parametrize(
    ("status", "blocks"), [(0, False), (BLOCK_EXIT, True), (1, False), (2, False), (137, False)]
)
async def test_hook_script_blocks_only_on_the_block_status(
    tmp_path: Path, status: int, blocks: bool
) -> None:
    """Any other status, such as an uncaught exception's 1, lets the push go."""
    fake_python = tmp_path / "python"
    fake_python.write_text(f'#!/bin/sh\necho "args: $*"\nexit {status}\n')
    fake_python.chmod(0o755)
    hook = tmp_path / "pre-push"
    hook.write_text(hook_script(str(fake_python)))
    hook.chmod(0o755)
    proc = await asyncio.create_subprocess_exec(
        str(hook),
        "origin",
        "url",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == (1 if blocks else 0)
    assert out.decode() == "args: -m bot.judge.console pre-push origin url\n"
    if status not in (0, BLOCK_EXIT):
        assert f"exit status {status}" in err.decode()


async def test_hook_script_without_its_interpreter_lets_the_push_go(tmp_path: Path) -> None:
    hook = tmp_path / "pre-push"
    hook.write_text(hook_script(str(tmp_path / "gone" / "python")))
    hook.chmod(0o755)
    proc = await asyncio.create_subprocess_exec(
        str(hook), stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL
    )
    _, err = await proc.communicate()
    assert proc.returncode == 0
    assert "not found; skipping judge" in err.decode()


# ---- real repositories -------------------------------------------------------------------


@dataclass
class Repo:
    work: Path
    remote: Path
    env: dict[str, str] = field(default_factory=dict)

    async def git(self, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            "git",
            *args,
            cwd=self.work,
            env={**self.env, **(env or {})},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()

    async def ok(self, *args: str, env: dict[str, str] | None = None) -> str:
        code, out, err = await self.git(*args, env=env)
        assert code == 0, f"git {args}: {err}"
        return out

    async def commit(
        self,
        files: dict[str, str],
        message: str = "Add notes",
        author: str = "OpenClaw Agent",
    ) -> str:
        for path, content in files.items():
            target = self.work / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            await self.ok("add", path)
        who = {
            "GIT_AUTHOR_NAME": author,
            "GIT_COMMITTER_NAME": author,
            "GIT_AUTHOR_EMAIL": "agent@example.com",
            "GIT_COMMITTER_EMAIL": "agent@example.com",
        }
        await self.ok("commit", "-q", "-m", message, env=who)
        return (await self.ok("rev-parse", "HEAD")).strip()

    async def remote_has(self, sha: str) -> bool:
        proc = await asyncio.create_subprocess_exec(
            "git",
            "cat-file",
            "-e",
            f"{sha}^{{commit}}",
            cwd=self.remote,
            env=self.env,
            stderr=asyncio.subprocess.DEVNULL,
        )
        return await proc.wait() == 0

    async def stored(self) -> list[VerdictRecord]:
        """Records the hook appended to its default store, at the top of the work tree."""
        db = self.work / "judge-bot.sqlite3"
        if not db.exists():
            return []
        store = SqliteStorage(str(db))
        await store.open()
        try:
            rows = await store.list_verdicts()
        finally:
            await store.close()
        return [VerdictRecord.model_validate(r.record) for r in rows]


async def install_hook(repo: Repo, *extra: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.judge.console",
        "install-hook",
        *extra,
        cwd=repo.work,
        env=repo.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.fixture
async def repo(tmp_path: Path) -> Repo:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JUDGE_", "GIT_")) and k != "DATABASE_URL"
    }
    env.update(HOME=str(tmp_path), GIT_CONFIG_NOSYSTEM="1")
    remote = tmp_path / "remote.git"
    work = tmp_path / "work"
    work.mkdir()
    r = Repo(work=work, remote=remote, env=env)
    proc = await asyncio.create_subprocess_exec("git", "init", "-q", "--bare", str(remote), env=env)
    assert await proc.wait() == 0
    await r.ok("init", "-q", "-b", "main")
    await r.ok("config", "user.name", "Human")
    await r.ok("config", "user.email", "human@example.com")
    await r.ok("remote", "add", "origin", str(remote))
    code, _, err = await install_hook(r)
    assert code == 0, err
    return r


def judge_env(fake: FakeOpenAIServer, **extra: str) -> dict[str, str]:
    return {
        "JUDGE_LLM_BASE_URL": fake.base_url,
        "JUDGE_LLM_API_KEY": "test-key",
        "JUDGE_QUICK_MODEL": QUICK,
        "JUDGE_DEEP_MODEL": DEEP,
        "JUDGE_TIEBREAKER_MODEL": TIE,
        "JUDGE_ALTERNATE_MODELS": ALT,
        **extra,
    }


BAD_DOC = "# Signal\n\nLatency fell 300% so nothing to do.\n"
GOOD_DOC = "# Signal\n\nLatency rose 20% after the cache change; roll back the TTL.\n"


async def test_install_hook_writes_executable_hook(repo: Repo) -> None:
    hook = repo.work / ".git" / "hooks" / "pre-push"
    assert os.access(hook, os.X_OK)
    assert HOOK_MARKER in hook.read_text()
    code, out, _ = await install_hook(repo)  # reinstalling over our own hook is fine
    assert code == 0 and "installed" in out


async def test_install_hook_keeps_a_foreign_hook(repo: Repo) -> None:
    hook = repo.work / ".git" / "hooks" / "pre-push"
    hook.write_text("#!/bin/sh\necho mine\n")
    code, _, err = await install_hook(repo)
    assert code == 1 and "--force" in err
    assert hook.read_text() == "#!/bin/sh\necho mine\n"
    code, _, _ = await install_hook(repo, "--force")
    assert code == 0 and HOOK_MARKER in hook.read_text()


async def test_advisory_mode_never_blocks(fake_llm: FakeOpenAIServer, repo: Repo) -> None:
    fake_llm.script(QUICK, Reply.json(REJECT))
    fake_llm.script(DEEP, Reply.json(REJECT))
    sha = await repo.commit({"research/signal.md": BAD_DOC})
    code, _, err = await repo.git("push", "-q", "origin", "main", env=judge_env(fake_llm))
    assert code == 0, err
    assert "[judge] NO-GO refs/heads/main" in err
    assert "fix the latency figures" in err
    assert await repo.remote_has(sha)
    (record,) = await repo.stored()
    assert record.head_sha == sha
    assert record.files == ["research/signal.md"]
    assert record.final_decision is Verdict.REJECT
    assert "research/signal.md" in fake_llm.requests[0].user_text


async def test_blocking_mode_blocks_on_no_go(fake_llm: FakeOpenAIServer, repo: Repo) -> None:
    fake_llm.script(QUICK, Reply.json(REJECT))
    fake_llm.script(DEEP, Reply.json(REJECT))
    sha = await repo.commit({"research/signal.md": BAD_DOC})
    env = judge_env(fake_llm, JUDGE_MODE="blocking")
    code, _, err = await repo.git("push", "-q", "origin", "main", env=env)
    assert code != 0
    assert "[judge] BLOCKED" in err and "GIT_JUDGE_SKIP=1" in err
    assert not await repo.remote_has(sha)


async def test_blocking_mode_passes_go(fake_llm: FakeOpenAIServer, repo: Repo) -> None:
    fake_llm.script(QUICK, Reply.json(ACCEPT))
    sha = await repo.commit({"docs/guide.md": GOOD_DOC})
    env = judge_env(fake_llm, JUDGE_MODE="blocking")
    code, _, err = await repo.git("push", "-q", "origin", "main", env=env)
    assert code == 0, err
    assert "[judge] GO refs/heads/main" in err
    assert await repo.remote_has(sha)


async def test_blocking_mode_blocks_an_escalate_scored_below_3(
    fake_llm: FakeOpenAIServer, repo: Repo
) -> None:
    """Seed 000: any score below 3 is NO-GO. Both judges ask for improvements with every
    score at 2, the protocol escalates to a human, and the push is still blocked."""
    low = {"scores": {"semantic": 2, "pragmatic": 2, "syntactic": 2}, "reasoning": "thin"}
    fake_llm.script(QUICK, Reply.json(low))
    fake_llm.script(DEEP, Reply.json(low))
    sha = await repo.commit({"research/signal.md": BAD_DOC})
    env = judge_env(fake_llm, JUDGE_MODE="blocking")
    code, _, err = await repo.git("push", "-q", "origin", "main", env=env)
    assert code != 0
    assert "[judge] NO-GO refs/heads/main (escalate)" in err and "[judge] BLOCKED" in err
    assert not await repo.remote_has(sha)
    (record,) = await repo.stored()
    assert record.final_decision is Verdict.ESCALATE and record.go_no_go == "NO-GO"


async def test_skip_bypasses_the_judge(fake_llm: FakeOpenAIServer, repo: Repo) -> None:
    sha = await repo.commit({"research/signal.md": BAD_DOC})
    env = judge_env(fake_llm, JUDGE_MODE="blocking", GIT_JUDGE_SKIP="1")
    code, _, err = await repo.git("push", "-q", "origin", "main", env=env)
    assert code == 0, err
    assert "bypassing" in err
    assert fake_llm.requests == []
    assert await repo.remote_has(sha)


@pytest.mark.parametrize(
    "replies",
    [[Reply.server_error()], [Reply.garbage(), Reply.garbage()], [Reply.rate_limited()]],
    ids=["500", "garbage", "429"],
)
async def test_provider_errors_never_block(
    fake_llm: FakeOpenAIServer, repo: Repo, replies: list[Reply]
) -> None:
    fake_llm.script(QUICK, *replies)
    sha = await repo.commit({"research/signal.md": BAD_DOC})
    env = judge_env(fake_llm, JUDGE_MODE="blocking")
    code, _, err = await repo.git("push", "-q", "origin", "main", env=env)
    assert code == 0, err
    assert "[judge] UNDETERMINED" in err
    assert await repo.remote_has(sha)


async def test_unreachable_llm_never_blocks(repo: Repo) -> None:
    sha = await repo.commit({"research/signal.md": BAD_DOC})
    env = {
        "JUDGE_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "JUDGE_QUICK_MODEL": QUICK,
        "JUDGE_MODE": "blocking",
    }
    code, _, err = await repo.git("push", "-q", "origin", "main", env=env)
    assert code == 0, err
    assert await repo.remote_has(sha)


async def test_bad_config_never_blocks_in_advisory_mode(repo: Repo) -> None:
    """Blocking mode refuses instead: tests/judge/test_pre_push_settings.py."""
    sha = await repo.commit({"research/signal.md": BAD_DOC})
    env = {
        "JUDGE_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "JUDGE_QUICK_MODEL": "gpt-5",
        "JUDGE_DEEP_MODEL": "gpt-4o",
        "JUDGE_MODE": "advisory",
    }
    code, _, err = await repo.git("push", "-q", "origin", "main", env=env)
    assert code == 0, err
    assert "cannot read the judge's configuration" in err and "share the model family" in err
    assert await repo.remote_has(sha)


@pytest.mark.parametrize("mode", ["advisory", "blocking"])
async def test_a_crashing_judge_never_blocks(repo: Repo, tmp_path: Path, mode: str) -> None:
    """The CLI dies where it cannot catch anything: `bot` itself fails to import (a
    broken install shadowing the real package). Python exits 1; the push still goes."""
    shadow = tmp_path / "shadow"
    (shadow / "bot").mkdir(parents=True)
    (shadow / "bot" / "__init__.py").write_text("raise RuntimeError('broken install')\n")
    sha = await repo.commit({"research/signal.md": BAD_DOC})
    env = {"PYTHONPATH": str(shadow), "JUDGE_MODE": mode}
    code, _, err = await repo.git("push", "-q", "origin", "main", env=env)
    assert code == 0, err
    assert "RuntimeError: broken install" in err
    assert "[judge] the judge failed (exit status 1); push not blocked" in err
    assert await repo.remote_has(sha)


async def test_only_watched_paths_and_authors(fake_llm: FakeOpenAIServer, repo: Repo) -> None:
    await repo.commit({"src/app.py": "print('hi')\n"}, author="OpenClaw Agent")
    await repo.commit({"research/human.md": GOOD_DOC}, author="Human")
    env = judge_env(fake_llm, JUDGE_AUTHORS="OpenClaw Agent")
    code, _, err = await repo.git("push", "-q", "origin", "main", env=env)
    assert code == 0, err
    assert fake_llm.requests == []
    assert (await repo.stored()) == []


async def test_second_push_judges_only_new_commits(fake_llm: FakeOpenAIServer, repo: Repo) -> None:
    fake_llm.default = Reply.json(ACCEPT)
    await repo.commit({"research/a.md": GOOD_DOC})
    code, _, err = await repo.git("push", "-q", "origin", "main", env=judge_env(fake_llm))
    assert code == 0, err
    await repo.commit({"knowledge/b.md": GOOD_DOC.replace("20%", "25%")}, message="Add b")
    code, _, err = await repo.git("push", "-q", "origin", "main", env=judge_env(fake_llm))
    assert code == 0, err
    first, second = await repo.stored()
    assert first.files == ["research/a.md"]
    assert second.files == ["knowledge/b.md"]
    assert "Add b" in second.description


async def test_new_branch_and_deletion(fake_llm: FakeOpenAIServer, repo: Repo) -> None:
    fake_llm.default = Reply.json(ACCEPT)
    await repo.commit({"README.md": "hello\n"}, author="Human")
    await repo.ok("push", "-q", "origin", "main", env={"GIT_JUDGE_SKIP": "1"})
    await repo.ok("checkout", "-q", "-b", "feature")
    await repo.commit({"plans/q1.md": GOOD_DOC})
    code, _, err = await repo.git("push", "-q", "origin", "feature", env=judge_env(fake_llm))
    assert code == 0, err
    (record,) = await repo.stored()
    assert record.files == ["plans/q1.md"]  # README.md is on origin/main already
    requests_before = len(fake_llm.requests)
    code, _, err = await repo.git(
        "push", "-q", "origin", ":feature", env=judge_env(fake_llm, JUDGE_MODE="blocking")
    )
    assert code == 0, err
    assert len(fake_llm.requests) == requests_before
    assert len(await repo.stored()) == 1


async def test_file_deleted_later_in_the_push_is_skipped(
    fake_llm: FakeOpenAIServer, repo: Repo
) -> None:
    fake_llm.default = Reply.json(ACCEPT)
    await repo.commit({"research/tmp.md": BAD_DOC, "research/keep.md": GOOD_DOC})
    await repo.ok("rm", "-q", "research/tmp.md")
    await repo.commit({}, message="drop tmp")
    code, _, err = await repo.git("push", "-q", "origin", "main", env=judge_env(fake_llm))
    assert code == 0, err
    (record,) = await repo.stored()
    assert record.files == ["research/keep.md"]


async def test_authoring_model_never_judges_its_push(
    fake_llm: FakeOpenAIServer, repo: Repo
) -> None:
    fake_llm.script(ALT, Reply.json(ACCEPT))
    await repo.commit(
        {"research/signal.md": GOOD_DOC}, message="Add signal\n\nGenerated-by: gpt-5-codex"
    )
    code, _, err = await repo.git("push", "-q", "origin", "main", env=judge_env(fake_llm))
    assert code == 0, err
    assert [r.model for r in fake_llm.requests] == [ALT]
    (record,) = await repo.stored()
    assert record.authoring_families == ["openai"]
    assert record.previous_rounds[0].substituted_for == "openai"


async def test_no_llm_configured_runs_mechanical_checks(repo: Repo) -> None:
    conflict = "# Notes\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> other\n"
    sha = await repo.commit({"docs/notes.md": conflict})
    code, _, err = await repo.git("push", "-q", "origin", "main", env={"JUDGE_MODE": "blocking"})
    assert code != 0
    assert "mechanical checks only" in err
    assert "NO-GO" in err
    assert not await repo.remote_has(sha)


def test_ref_update_properties() -> None:
    update = RefUpdate("refs/heads/x", A, "refs/heads/x", ZERO)
    assert update.is_new_branch and not update.is_deletion


# ---- one database, one settings file ---------------------------------------------------------


async def export_in(repo: Repo, where: Path) -> list[str]:
    """`judge-bot verdicts export` run by hand in `where`, inside the repository."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "verdicts",
        "export",
        cwd=where,
        env=repo.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return [VerdictRecord.from_jsonl(line).task_id for line in out.decode().splitlines()]


async def test_export_in_the_repository_reads_what_the_hook_wrote(
    fake_llm: FakeOpenAIServer, repo: Repo
) -> None:
    """The defect: the hook wrote .git/judge-bot.sqlite3, export read ./judge-bot.sqlite3."""
    fake_llm.default = Reply.json(ACCEPT)
    sha = await repo.commit({"research/signal.md": GOOD_DOC})
    code, _, err = await repo.git("push", "-q", "origin", "main", env=judge_env(fake_llm))
    assert code == 0, err
    expected = [f"push:refs/heads/main@{sha[:12]}"]
    assert await export_in(repo, repo.work) == expected
    assert await export_in(repo, repo.work / "research") == expected


async def test_the_hooks_database_stays_out_of_git_status(
    fake_llm: FakeOpenAIServer, repo: Repo
) -> None:
    fake_llm.default = Reply.json(ACCEPT)
    await repo.commit({"research/signal.md": GOOD_DOC})
    code, _, err = await repo.git("push", "-q", "origin", "main", env=judge_env(fake_llm))
    assert code == 0, err
    assert (repo.work / "judge-bot.sqlite3").exists()
    assert await repo.ok("status", "--porcelain", "--untracked-files=all") == ""
    exclude = (repo.work / ".git" / "info" / "exclude").read_text()
    code, _, _ = await install_hook(repo)  # reinstalling adds nothing twice
    assert code == 0
    assert (repo.work / ".git" / "info" / "exclude").read_text() == exclude


async def test_the_hook_reads_judge_settings_from_dotenv(
    fake_llm: FakeOpenAIServer, repo: Repo
) -> None:
    """git runs the hook at the top of the work tree: a .env there counts, as for `serve`."""
    fake_llm.script(QUICK, Reply.json(REJECT))
    fake_llm.script(DEEP, Reply.json(REJECT))
    settings = {**judge_env(fake_llm), "JUDGE_MODE": "blocking"}
    (repo.work / ".env").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    sha = await repo.commit({"research/signal.md": BAD_DOC})
    code, _, err = await repo.git("push", "-q", "origin", "main")
    assert code != 0, err
    assert "[judge] NO-GO refs/heads/main" in err
    assert not await repo.remote_has(sha)
