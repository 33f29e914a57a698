"""`judge-bot judge` and the pre-push hook judge a file longer than their judges' context
in windows, each read whole, every one of which must accept (issue 27, defect 3), against
the fake LLM server standing in for llama.cpp's `llama-server` (refuses a prompt past its
context) and llama-cpp-python's server (says its context only when it refuses one).

Before: the CLI sent the change as one request, which no judge could read whole at these
contexts: undetermined (`partial-view`), exit 3. The commands run in this process (in a
worker thread, as `judge-bot` runs them: their own event loop), and once as a subprocess.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli.judge import EXIT_CODES, main
from bot.cli.judged_change import JudgedChange, JudgedPart, combine, plan_line, requests_at_once
from bot.cli.pre_push import BLOCK_EXIT
from bot.judge.engine import JudgeRequest
from bot.judge.records import JudgedFile, TaskSpec, Tier, Verdict, VerdictRecord
from bot.judge.settings import JudgeSettings
from bot.judging.flow import REQUESTS_AT_ONCE
from bot.judging.judge_requests import fitted_window_budget, plan_request
from bot.judging.windows import Part
from tests.support.fakes.llm_server import (
    FakeOpenAIServer,
    RecordedRequest,
    Reply,
    llama_cpp_python,
    llama_server,
)
from tests.support.verdict_builders import make_record

KEY = "sk-local-SECRET-77"
QUICK, DEEP = "qwen2.5:0.5b", "llama3.2:1b"
ACCEPT = {
    "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5},
    "reasoning": "Names the cause and the action.",
    "improvements": [],
}
REJECT = {
    "scores": {"semantic": 1, "pragmatic": 2, "syntactic": 3},
    "reasoning": "Blames cosmic rays.",
    "improvements": ["name the real cause"],
}
WRONG = "The outage was caused by cosmic rays, so no action is needed."
LINE = "Queue latency rose after the cache change; the rollback fixed p95 within a day.\n"


def report(chars: int, *, wrong_line: int | None = None) -> str:
    """A Markdown report of about `chars` characters in lines of prose; `wrong_line`: the
    line (1-based) that says something a judge rejects."""
    lines = ["# Weekly signal report\n", "\n"]
    while sum(map(len, lines)) < chars:
        lines.append(LINE)
    if wrong_line is not None:
        lines[wrong_line - 1] = WRONG + "\n"
    return "".join(lines)


def answer(recorded: RecordedRequest) -> Reply:
    """The model: rejects what holds the wrong line, accepts anything else."""
    return Reply.json(REJECT if WRONG in recorded.user_text else ACCEPT)


@pytest.fixture
async def llama() -> Any:
    """llama-server with a 4,096-token context (the context set for judge-bot too)."""
    server = FakeOpenAIServer(api_key=KEY, behaviour=llama_server(4096), responder=answer)
    await server.start()
    yield server
    await server.close()


@pytest.fixture
async def llama_cpp() -> Any:
    """llama-cpp-python's server (2,048 tokens), which says so only when it refuses."""
    server = FakeOpenAIServer(api_key=KEY, behaviour=llama_cpp_python(2048), responder=answer)
    await server.start()
    yield server
    await server.close()


def settings(server: FakeOpenAIServer, **extra: str) -> dict[str, str]:
    return {
        "JUDGE_LLM_BASE_URL": server.base_url,
        "JUDGE_LLM_API_KEY": KEY,
        "JUDGE_QUICK_MODEL": QUICK,
        "JUDGE_DEEP_MODEL": DEEP,
        **extra,
    }


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in list(os.environ):
        if name.startswith(("JUDGE_", "GIT_")) or name == "DATABASE_URL":
            monkeypatch.delenv(name)
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def use(monkeypatch: pytest.MonkeyPatch, values: dict[str, str]) -> None:
    for name, value in values.items():
        monkeypatch.setenv(name, value)


JUDGE = (
    "judge",
    "--task-id",
    "issue-27",
    "--description",
    "Write the weekly signal report",
    "--acceptance",
    "Names the cause and an action",
    "--database-url",
    "sqlite:///judge.sqlite3",
)


async def judge_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`judge-bot judge` in this process, on its own event loop as the command runs."""
    code = await asyncio.to_thread(main, [*JUDGE, *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def refused(server: FakeOpenAIServer) -> list[RecordedRequest]:
    """Chat requests the server refused (past its context, or a format it lacks)."""
    return [r for r in server.requests if r.path.endswith("/chat/completions") and not r.answer]


async def test_a_long_file_is_judged_in_windows_read_whole_and_accepted(
    llama: FakeOpenAIServer,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use(monkeypatch, settings(llama, JUDGE_CONTEXT_TOKENS="4096"))
    (workdir / "docs" / "long.md").write_text(report(26000))
    code, out, err = await judge_cli(capsys, "--json", "docs/long.md")
    assert code == 0, err
    shown = json.loads(out)
    parts = shown["parts"]
    assert shown["final_decision"] == "accept" and shown["go_no_go"] == "GO"
    assert shown["judged_in_parts"] == len(parts) > 2 and shown["cause"] is None
    assert shown["replanned"] is None and shown["task_id"] == "issue-27"
    assert [p["window"]["number"] for p in parts] == list(range(1, len(parts) + 1))
    # The windows cover the file, line after line, and the deep judge read each whole.
    assert parts[0]["window"]["first_line"] == 1
    for before, after in itertools.pairwise(parts):
        assert after["window"]["first_line"] == before["window"]["last_line"] + 1
    for part in parts:
        record = VerdictRecord.model_validate(part["record"])
        assert record.final_decision is Verdict.ACCEPT, record.reason
        (piece,) = [p for p in record.context if p.kind == "file"]
        assert piece.chars in piece.sent.values()
    assert refused(llama) == []
    assert f"judge-bot: judged in {len(parts)} parts, each of which must accept" in err
    assert "docs/long.md (26,0" in err and "context of 4,096 tokens" in err
    assert "not judged" not in err and KEY not in out + err


async def test_one_window_rejected_rejects_the_change(
    llama: FakeOpenAIServer,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use(monkeypatch, settings(llama, JUDGE_CONTEXT_TOKENS="4096"))
    (workdir / "docs" / "long.md").write_text(report(26000, wrong_line=200))
    code, out, err = await judge_cli(capsys, "docs/long.md")
    assert code == EXIT_CODES[Verdict.REJECT] == 1, err
    assert "verdict of the change: REJECT (" in out and "every part must accept" in out
    assert "accept " in out and "reject 1" in out
    # The part that rejected is the window holding line 200, named with its lines.
    rejected = [block for block in out.split("part ")[1:] if "verdict: REJECT" in block]
    (block,) = rejected
    first, last = block.split(" lines ")[1].split(" ")[0].split("-")
    assert int(first) <= 200 <= int(last)
    assert "records appended to" in out


async def test_a_context_stated_only_in_a_refusal_is_judged_again_in_windows(
    llama_cpp: FakeOpenAIServer,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """llama-cpp-python says nothing of its 2,048 tokens beforehand: the first attempt
    learns it from the refusal and ends `partial-view`; the change is planned again."""
    use(monkeypatch, settings(llama_cpp))
    (workdir / "docs" / "report.md").write_text(report(3800))
    code, out, err = await judge_cli(capsys, "--json", "docs/report.md")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["final_decision"] == "accept" and shown["judged_in_parts"] > 1
    assert "stated that context (quick 2,048 tokens, deep 2,048 tokens)" in shown["replanned"]
    assert "judged again in the parts that fit" in err
    assert refused(llama_cpp), "the first attempt was refused as too long"
    # The first attempt's record is stored too: it is what the judges saw then.
    code = await asyncio.to_thread(
        main, ["verdicts", "export", "--database-url", "sqlite:///judge.sqlite3"]
    )
    stored = [VerdictRecord.from_jsonl(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0 and len(stored) == shown["judged_in_parts"] + 1
    assert stored[0].mode == "partial-view"


async def test_a_file_no_window_may_cut_stays_partial_and_is_not_judged_again(
    llama: FakeOpenAIServer,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """JSON must be read whole to be checked; at a known context nothing changes between
    attempts, so the change is judged once and says why it is undetermined."""
    use(monkeypatch, settings(llama, JUDGE_CONTEXT_TOKENS="4096"))
    rows = ",\n".join(f'  {{"week": {n}, "p95_ms": {200 + n}}}' for n in range(900))
    (workdir / "docs" / "weeks.json").write_text("[\n" + rows + "\n]\n")
    code, out, err = await judge_cli(capsys, "--json", "docs/weeks.json")
    assert code == EXIT_CODES[Verdict.UNDETERMINED]
    record = VerdictRecord.from_jsonl(out)  # one part: the record as it always was
    assert record.mode == "partial-view"
    assert "judge-bot: not judged: partial view" in err
    assert "judged in" not in err and "judged again" not in err


async def test_a_change_that_fits_is_one_request_and_one_record(
    llama: FakeOpenAIServer,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use(monkeypatch, settings(llama, JUDGE_CONTEXT_TOKENS="4096"))
    (workdir / "docs" / "short.md").write_text(report(900))
    code, out, err = await judge_cli(capsys, "docs/short.md")
    assert code == 0, err
    assert "verdict: ACCEPT" in out and "part 1" not in out
    assert "record appended to" in out and "judged in" not in err


async def test_judge_bot_judge_in_windows_as_a_subprocess(
    llama: FakeOpenAIServer, tmp_path: Path
) -> None:
    (tmp_path / "long.md").write_text(report(12000, wrong_line=100))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JUDGE_", "GIT_")) and k != "DATABASE_URL"
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *JUDGE,
        "--json",
        "long.md",
        cwd=tmp_path,
        env=env | settings(llama, JUDGE_CONTEXT_TOKENS="4096"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 1, err.decode()
    shown = json.loads(out)
    verdicts = [p["record"]["final_decision"] for p in shown["parts"]]
    assert shown["final_decision"] == "reject" and "reject" in verdicts and "accept" in verdicts
    assert shown["go_no_go"] == "NO-GO"
    assert b"judge-bot: judged in " in err


# -- the pre-push hook ---------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


def pushed(repo: Path, text: str) -> str:
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "agent@example.com")
    git(repo, "config", "user.name", "agent")
    (repo / "docs" / "long.md").write_text(text)
    git(repo, "add", "docs/long.md")
    git(repo, "commit", "-q", "-m", "Weekly report")
    sha = git(repo, "rev-parse", "HEAD")
    return f"refs/heads/main {sha} refs/heads/main {'0' * 40}\n"


async def pre_push(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stdin: str
) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = await asyncio.to_thread(main, ["pre-push", "origin", "git@example.com:o/notes.git"])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("wrong", "code", "label"), [(None, 0, "GO"), (150, BLOCK_EXIT, "NO-GO")])
async def test_the_hook_judges_a_long_file_in_windows(
    llama: FakeOpenAIServer,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    wrong: int | None,
    code: int,
    label: str,
) -> None:
    use(monkeypatch, settings(llama, JUDGE_CONTEXT_TOKENS="4096", JUDGE_MODE="blocking"))
    status, said = await pre_push(
        monkeypatch, capsys, pushed(workdir, report(20000, wrong_line=wrong))
    )
    assert status == code, said
    assert f"[judge] {label} refs/heads/main" in said
    assert "[judge] judged in " in said and "each of which must accept" in said
    if wrong is not None:
        findings = [line for line in said.splitlines() if line.startswith("[judge] Findings (")]
        (line,) = findings
        assert "docs/long.md lines " in line and "Blames cosmic rays." in line
        assert "[judge]   - name the real cause" in said
        assert "BLOCKED" in said


# -- pure parts ---------------------------------------------------------------------------


def request_of(*files: JudgedFile) -> JudgeRequest:
    return JudgeRequest(
        task=TaskSpec(task_id="t-1", description="Weekly report", acceptance="Names a cause"),
        files=list(files),
        scope="local",
    )


def test_many_files_are_judged_in_batches_and_the_plan_says_so() -> None:
    """No context known: the deep judge's characters bound a request, and 50 files."""
    judge_settings = JudgeSettings(
        llm_base_url="http://127.0.0.1:9/v1", quick_model=QUICK, deep_model=DEEP
    )
    files = [JudgedFile(path=f"docs/n{n:03}.md", content=LINE) for n in range(120)]
    request = request_of(*files)
    budget = fitted_window_budget(judge_settings, {Tier.QUICK: None, Tier.DEEP: None})
    planned = plan_request(request, budget)
    line = plan_line(request, planned, budget, {})
    assert len(planned) == 3
    assert line.startswith("judged in 3 parts, each of which must accept: 120 files in 3 ")
    assert "(at most 50 files each)" in line
    assert "the deep judge reads at most 32,000 characters at once (JUDGE_DEEP_MAX_CHARS)" in line
    assert (
        plan_line(request_of(files[0]), plan_request(request_of(files[0]), budget), budget, {})
        == ""
    )


def judged(verdict: Verdict) -> JudgedPart:
    """A part's record: a deep round that answered, or none for an undetermined one."""
    rounds: dict[str, Any] = {} if verdict is not Verdict.UNDETERMINED else {"previous_rounds": []}
    record = make_record(final_decision=verdict, **rounds)
    return JudgedPart(Part((JudgedFile(path="docs/a.md", content="x"),), ()), record)


@pytest.mark.parametrize(
    ("verdicts", "verdict", "label"),
    [
        ([Verdict.ACCEPT, Verdict.ACCEPT], Verdict.ACCEPT, "GO"),
        ([Verdict.ACCEPT, Verdict.UNDETERMINED], Verdict.UNDETERMINED, "UNDETERMINED"),
        ([Verdict.UNDETERMINED, Verdict.REJECT], Verdict.REJECT, "NO-GO"),
        # Escalated with passing scores: a maintainer decides, the hook does not block.
        ([Verdict.ESCALATE, Verdict.ACCEPT], Verdict.ESCALATE, "GO"),
    ],
)
def test_the_change_is_the_worst_of_its_parts(
    verdicts: list[Verdict], verdict: Verdict, label: str
) -> None:
    change: JudgedChange = combine([judged(v) for v in verdicts], "judged in 2 parts")
    assert change.verdict is verdict and change.go_no_go == label
    assert change.parts[0].describe() == "docs/a.md"
    shown = json.loads(change.to_json())
    assert shown["final_decision"] == verdict.value and shown["go_no_go"] == label
    assert shown["judged_in_parts"] == 2 and shown["plan"] == "judged in 2 parts"
    assert shown["parts"][0]["window"] is None and shown["parts"][0]["files"] == ["docs/a.md"]
    assert (shown["cause"] is None) is (verdict is not Verdict.UNDETERMINED)


def test_parts_are_judged_one_at_a_time_on_this_machine() -> None:
    """A local server computes one request at a time while each one's timeout runs."""
    assert requests_at_once(True) == 1
    assert requests_at_once(False) == REQUESTS_AT_ONCE > 1
