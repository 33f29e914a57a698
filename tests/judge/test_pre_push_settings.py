"""Issue 24, item 11: the pre-push hook and settings it cannot read. `install-hook`
keeps `.env` (where the key goes) out of commits and warns when git tracks it; a hook
that cannot read its settings says so loudly and, in blocking mode, refuses the push
with one line on how to go on; a push with nothing to judge says so. The pure decisions,
then real `git push` runs through the installed hook (the harness of test_pre_push.py)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from bot.cli.pre_push import (
    BLOCK_EXIT,
    decision_note,
    intended_mode,
    nothing_watched,
    unreadable_settings,
)
from bot.judge.settings import DEFAULT_WATCHED_PATHS
from tests.judge.test_pre_push import (
    BAD_DOC,
    DEEP,
    GOOD_DOC,
    QUICK,
    REJECT,
    Repo,
    install_hook,
    judge_env,
)
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply

# ---- pure parts ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sources", "mode"),
    [
        ([], "advisory"),
        ([{"JUDGE_MODE": "blocking"}], "blocking"),
        ([{"judge_mode": " Blocking "}], "blocking"),
        ([{"JUDGE_MODE": "block"}], "blocking"),  # meant to guard: stricter, not looser
        ([{"JUDGE_MODE": "ADVISORY"}], "advisory"),
        ([{"JUDGE_MODE": ""}, {"JUDGE_MODE": "blocking"}], "blocking"),
        ([{"JUDGE_MODE": None}, {"JUDGE_MODE": "blocking"}], "blocking"),
        ([{"JUDGE_MODE": "advisory"}, {"JUDGE_MODE": "blocking"}], "advisory"),
        ([{"PATH": "/bin"}, {"OTHER": "blocking"}], "advisory"),
    ],
)
def test_intended_mode(sources: list[dict[str, str | None]], mode: str) -> None:
    assert intended_mode(*sources) == mode


def test_unreadable_settings_block_only_in_blocking_mode() -> None:
    lines, code = unreadable_settings("JUDGE_QUICK_TIMEOUT: bad", "advisory", False)
    assert code == 0
    assert lines == [
        "[judge] WARNING: cannot read the judge's configuration; this push is NOT judged",
        "[judge] WARNING: JUDGE_QUICK_TIMEOUT: bad",
        "[judge] push not blocked (advisory mode)",
    ]
    lines, code = unreadable_settings("JUDGE_QUICK_TIMEOUT: bad", "blocking", True)
    assert code == BLOCK_EXIT
    assert any("git rm --cached .env" in line for line in lines)
    (blocked,) = [line for line in lines if "BLOCKED" in line]
    assert blocked == lines[-1]
    assert "GIT_JUDGE_SKIP=1 git push" in blocked and "fix the configuration" in blocked


def test_nothing_watched_names_what_is_watched() -> None:
    line = nothing_watched([], ["docs/**/*.md"])
    assert line == (
        "[judge] nothing to judge: no pushed commit touched a watched file "
        "(JUDGE_PATHS: docs/**/*.md)"
    )
    many = nothing_watched(["OpenClaw Agent"], [f"d{n}/*.md" for n in range(6)])
    assert "by a watched author (JUDGE_AUTHORS)" in many
    assert "d3/*.md, ... (6 in all)" in many and "d4" not in many
    assert "\n" not in nothing_watched([], list(DEFAULT_WATCHED_PATHS))


@pytest.mark.parametrize(
    ("label", "decision", "note"),
    [
        ("UNDETERMINED", "undetermined", ""),
        ("NO-GO", "escalate", " (escalate)"),
        ("NO-GO", "reject", " (reject)"),
        ("GO", "accept", " (accept)"),
    ],
)
def test_decision_note_never_repeats_the_label(label: str, decision: str, note: str) -> None:
    assert decision_note(label, decision) == note


# ---- real repositories -------------------------------------------------------------------


@pytest.fixture
async def repo(tmp_path: Path) -> Repo:
    """A work tree with a bare remote and the hook installed (as test_pre_push.py's)."""
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
    code, out, err = await install_hook(r)
    assert code == 0, err
    assert ".env kept out of git status and commits" in out
    return r


def dotenv_of(settings: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in settings.items())


async def commit_dotenv(repo: Repo, text: str) -> None:
    """A `.env` committed anyway (`git add -f`, or before the hook was installed)."""
    (repo.work / ".env").write_text(text)
    await repo.ok("add", "-f", ".env")
    await repo.ok("commit", "-q", "-m", "Add settings")


async def install_in(repo: Repo, where: Path) -> tuple[int, str, str]:
    """`judge-bot install-hook` run in a subdirectory of the work tree."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "install-hook",
        cwd=where,
        env=repo.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_install_hook_keeps_dotenv_out_of_commits(repo: Repo) -> None:
    (repo.work / ".env").write_text("JUDGE_LLM_API_KEY=sk-not-to-be-pushed\n")
    assert await repo.ok("status", "--porcelain", "--untracked-files=all") == ""
    await repo.ok("add", "-A")
    assert await repo.ok("ls-files") == ""
    code, _, err = await repo.git("add", ".env")
    assert code != 0 and "ignored" in err
    exclude = (repo.work / ".git" / "info" / "exclude").read_text()
    assert "\n/.env\n" in exclude
    code, out, _ = await install_hook(repo)  # reinstalling adds nothing twice
    assert code == 0 and ".env kept out" not in out
    assert (repo.work / ".git" / "info" / "exclude").read_text() == exclude


async def test_install_hook_warns_when_git_tracks_dotenv(repo: Repo) -> None:
    code, _, err = await install_hook(repo)
    assert code == 0 and "WARNING" not in err
    await commit_dotenv(repo, "JUDGE_MODE=advisory\n")
    (repo.work / "research").mkdir()
    code, out, err = await install_in(repo, repo.work / "research")
    assert code == 0 and "installed" in out
    (warning,) = err.splitlines()
    assert warning.startswith("judge-bot: WARNING: git tracks .env")
    assert "git rm --cached .env" in warning and "rotate" in warning


async def test_a_committed_dotenv_in_blocking_mode_refuses_the_push(
    fake_llm: FakeOpenAIServer, repo: Repo
) -> None:
    """The defect: the hook refused to read the committed .env, let the push through
    (the key with it) and blocking mode was silently off."""
    await commit_dotenv(repo, dotenv_of({**judge_env(fake_llm), "JUDGE_MODE": "blocking"}))
    sha = await repo.commit({"research/signal.md": GOOD_DOC})
    code, _, err = await repo.git("push", "-q", "origin", "main")
    assert code != 0
    assert not await repo.remote_has(sha)
    assert "[judge] WARNING: cannot read the judge's configuration" in err
    assert "git tracks this file" in err and "git rm --cached .env" in err
    (blocked,) = [line for line in err.splitlines() if "BLOCKED" in line]
    assert "GIT_JUDGE_SKIP=1 git push" in blocked
    assert "test-key" not in err
    assert fake_llm.requests == []
    code, _, err = await repo.git("push", "-q", "origin", "main", env={"GIT_JUDGE_SKIP": "1"})
    assert code == 0, err
    assert await repo.remote_has(sha)


async def test_a_committed_dotenv_in_advisory_mode_warns_loudly(repo: Repo) -> None:
    await commit_dotenv(repo, "JUDGE_MODE=advisory\nJUDGE_LLM_API_KEY=sk-in-the-repo\n")
    sha = await repo.commit({"research/signal.md": GOOD_DOC})
    code, _, err = await repo.git("push", "-q", "origin", "main")
    assert code == 0, err
    assert await repo.remote_has(sha)
    warnings = [line for line in err.splitlines() if line.startswith("[judge] WARNING:")]
    assert len(warnings) == 3
    assert "git rm --cached .env" in warnings[2]
    assert "[judge] push not blocked (advisory mode)" in err
    assert "sk-in-the-repo" not in err


async def test_blocking_mode_from_the_environment_refuses_a_bad_configuration(
    repo: Repo,
) -> None:
    sha = await repo.commit({"research/signal.md": BAD_DOC})
    env = {"JUDGE_MODE": "blocking", "JUDGE_QUICK_TIMEOUT": "soon"}
    code, _, err = await repo.git("push", "-q", "origin", "main", env=env)
    assert code != 0
    assert not await repo.remote_has(sha)
    assert "[judge] WARNING: JUDGE_QUICK_TIMEOUT: Input should be a valid number" in err
    assert sum("BLOCKED" in line for line in err.splitlines()) == 1


async def test_the_environment_decides_the_mode_over_a_refused_dotenv(repo: Repo) -> None:
    """`JUDGE_MODE=advisory` in the environment wins, as it does when .env is read."""
    await commit_dotenv(repo, "JUDGE_MODE=blocking\n")
    sha = await repo.commit({"research/signal.md": GOOD_DOC})
    code, _, err = await repo.git("push", "-q", "origin", "main", env={"JUDGE_MODE": "advisory"})
    assert code == 0, err
    assert await repo.remote_has(sha)
    assert "cannot read the judge's configuration" in err


async def test_a_push_with_nothing_watched_says_so(fake_llm: FakeOpenAIServer, repo: Repo) -> None:
    await repo.commit({"src/app.py": "print('hi')\n"})
    code, _, err = await repo.git("push", "-q", "origin", "main", env=judge_env(fake_llm))
    assert code == 0, err
    (line,) = [line for line in err.splitlines() if line.startswith("[judge]")]
    assert line.startswith("[judge] nothing to judge: no pushed commit touched a watched file")
    assert "research/**/*.md" in line
    assert fake_llm.requests == []


async def test_an_undetermined_push_names_its_label_once(
    fake_llm: FakeOpenAIServer, repo: Repo
) -> None:
    fake_llm.script(QUICK, Reply.server_error())
    await repo.commit({"research/signal.md": GOOD_DOC})
    code, _, err = await repo.git("push", "-q", "origin", "main", env=judge_env(fake_llm))
    assert code == 0, err
    assert "[judge] UNDETERMINED refs/heads/main: research/signal.md" in err
    assert "(undetermined)" not in err


async def test_a_no_go_keeps_its_decision(fake_llm: FakeOpenAIServer, repo: Repo) -> None:
    fake_llm.script(QUICK, Reply.json(REJECT))
    fake_llm.script(DEEP, Reply.json(REJECT))
    await repo.commit({"research/signal.md": BAD_DOC})
    code, _, err = await repo.git("push", "-q", "origin", "main", env=judge_env(fake_llm))
    assert code == 0, err
    assert "[judge] NO-GO refs/heads/main (reject): research/signal.md" in err
