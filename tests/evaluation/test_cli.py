"""`judge-bot eval`, as a real process against the fake LLM server and in this process
(where coverage is measured), and `--from-history` against a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.judge.records import Verdict
from bot.storage.sqlite import SqliteStorage
from tests.evaluation.history_helpers import Log, git, make_clone, tell
from tests.evaluation.panel import DEEP, QUICK, script_panel
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "eval-example.jsonl"
KEY = "sk-test-EVAL-SECRET-99"


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("JUDGE_") and k not in ("DATABASE_URL", "ENV_FILE")
    }
    env.update(extra)
    return env


def llm_env(fake: FakeOpenAIServer, **extra: str) -> dict[str, str]:
    return clean_env(
        JUDGE_LLM_BASE_URL=fake.base_url,
        JUDGE_LLM_API_KEY=KEY,
        JUDGE_QUICK_MODEL=QUICK,
        JUDGE_DEEP_MODEL=DEEP,
        **extra,
    )


async def run_eval(cwd: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "eval",
        *args,
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


# -- as a real process ----------------------------------------------------------------------


async def test_the_example_dataset_as_a_process(fake_llm: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_llm.api_key = KEY
    script_panel(fake_llm)
    code, out, err = await run_eval(tmp_path, llm_env(fake_llm), str(EXAMPLE), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["changes"] == 8
    assert report["agreement"]["accuracy"] == {"count": 6, "total": 8, "value": 0.75}
    assert report["agreement"]["false_positives"]["count"] == 1
    assert report["agreement"]["false_negatives"]["count"] == 1
    assert report["swap"] == {"count": 1, "total": 2, "value": 0.5}
    assert report["calls"] == len(fake_llm.requests) == 14
    (pair,) = report["tiers"]
    assert (pair["first"], pair["second"], pair["kappa"]) == ("quick", "deep", pytest.approx(0.4))
    assert [s["model"] for s in report["seats"]] == [QUICK, DEEP]
    assert {c["kpi"]: c["ok"] for c in report["limits"]} == {
        "false_positive_rate": False,
        "false_negative_rate": False,
        "undetermined_rate": True,
        "median_latency_seconds": True,
    }
    assert KEY not in out + err
    # Nothing stored: no database appeared.
    assert not any(tmp_path.iterdir())  # noqa: ASYNC240


async def test_a_text_report_as_a_process(fake_llm: FakeOpenAIServer, tmp_path: Path) -> None:
    script_panel(fake_llm)
    args = (str(EXAMPLE), "--no-swap", "--limit", "3")
    code, out, err = await run_eval(tmp_path, llm_env(fake_llm), *args)
    assert code == 0, err
    assert out.startswith(f"judge-bot eval: 3 changes from {EXAMPLE} (labelled accept 2, reject 1)")
    assert "swap: 0 changes judged again with their files in another order, 3 not" in out
    calls = len(fake_llm.requests)
    assert f"this evaluation: {calls} model calls ({calls} requests)" in out


async def test_a_bad_dataset_judges_nothing(fake_llm: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_llm.default = Reply.json({"scores": {"semantic": 5}})
    dataset = tmp_path / "set.jsonl"
    good = EXAMPLE.read_text(encoding="utf-8").splitlines()[0]
    bad = good.replace('"id": "cache-rollout"', '"id": "x"').replace('d": "accept"', 'd": "maybe"')
    dataset.write_text(f"{good}\n{{oops\n{good}\n{bad}\n", encoding="utf-8")
    code, out, err = await run_eval(tmp_path, llm_env(fake_llm), str(dataset))
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"judge-bot: {dataset}: line 2: not JSON (Expecting property name enclosed in double "
        "quotes at column 2)",
        f"judge-bot: {dataset}: line 3: id 'cache-rollout' is also line 1's",
        f"judge-bot: {dataset}: line 4: expected: Input should be 'accept' or 'reject'",
    ]
    assert fake_llm.requests == []


async def test_from_history_then_eval_as_processes(
    fake_llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    story = make_clone(tmp_path)
    database = tmp_path / "judge.db"
    storage = SqliteStorage(str(database))
    await storage.open()
    await tell(storage, story)
    await storage.close()
    url = f"sqlite:///{database}"
    args = ("--from-history", "--out", "set.jsonl", "--database-url", url)
    code, out, err = await run_eval(story.clone, clean_env(), *args)
    assert code == 0, err
    assert out == (
        "wrote 4 examples to set.jsonl (overridden 2, reverted 2); left out: a file in the "
        "clone is not what the judges read: 1; its commit is not in this clone: 1; the "
        "record names no file to judge: 1\n"
    )
    written = (story.clone / "set.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["expected"] for line in written] == ["accept", "reject"] + [
        "reject"
    ] * 2

    code, _, err = await run_eval(story.clone, clean_env(), *args)
    assert (code, err) == (
        2,
        "judge-bot: set.jsonl exists; choose another --out or remove it first\n",
    )

    fake_llm.default = Reply.json({"scores": {"semantic": 5, "pragmatic": 5, "syntactic": 5}})
    code, out, err = await run_eval(story.clone, llm_env(fake_llm), "set.jsonl", "--json")
    assert code == 0, err
    assert json.loads(out)["changes"] == 4


# -- in this process ----------------------------------------------------------------------------


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith("JUDGE_") or name in ("DATABASE_URL", "ENV_FILE"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def configure(monkeypatch: pytest.MonkeyPatch, fake: FakeOpenAIServer, **extra: str) -> None:
    fake.api_key = KEY
    for name, value in llm_env(fake, **extra).items():
        if name.startswith("JUDGE_"):
            monkeypatch.setenv(name, value)


async def eval_here(*args: str) -> int:
    return await asyncio.to_thread(main, ["eval", *args])


async def test_the_example_in_process(
    fake_llm: FakeOpenAIServer,
    here: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script_panel(fake_llm)
    configure(monkeypatch, fake_llm, JUDGE_CALIBRATION_PRICE_PER_1K_TOKENS=f"{QUICK}=0.5")
    assert await eval_here(str(EXAMPLE), "--width", "200", "--concurrency", "4") == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[1] == "decisions: accept 5, escalate 1, improve 1, reject 1"
    assert "false positives   33.3% 1/3  < 10%                  over" in lines
    assert "undetermined       0.0% 0/8  < 15%                  ok" in lines
    assert "quick / deep              3  66.7% 2/3   0.40" in lines
    assert "Scores against the labelled ones (deciding round):" in lines
    assert "semantic          3            0.67          +0.67" in lines
    assert "per change:" in out and "cost 0." in out  # the quick model is priced


async def test_a_piped_report_is_not_cut(
    fake_llm: FakeOpenAIServer,
    here: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script_panel(fake_llm)
    configure(monkeypatch, fake_llm)
    assert await eval_here(str(EXAMPLE), "--no-swap") == 0
    out = capsys.readouterr().out
    assert f"quick  {QUICK}       8" in out  # the model's name whole, however wide


async def test_the_json_report_in_process(
    fake_llm: FakeOpenAIServer,
    here: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script_panel(fake_llm)
    configure(monkeypatch, fake_llm)
    assert await eval_here(str(EXAMPLE), "--json", "--sensitive", "--no-swap", "--limit", "8") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source"] == str(EXAMPLE)
    assert report["swap"]["total"] == 0 and report["swap_skipped"] == 8
    # every change reached the deep tier
    assert report["tiers"][0]["both_answered"] == 8


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {}, "judge-bot: eval needs a DATASET (or --from-history --out FILE)"),
        (["--from-history"], {}, "judge-bot: eval --from-history takes no DATASET and needs --out"),
        (["x.jsonl", "--from-history", "--out", "o"], {}, "takes no DATASET and needs --out FILE"),
        (["x.jsonl"], {}, "judge-bot: no LLM judge is configured"),
        (["x.jsonl"], {"JUDGE_QUICK_TIMEOUT": "soon"}, "judge-bot: configuration error: "),
        (["x.jsonl"], {"JUDGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "JUDGE_QUICK_MODEL": "m"},
         "judge-bot: x.jsonl: cannot read it (No such file or directory)"),
    ],
)  # fmt: skip
async def test_refusals_in_process(
    here: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert await eval_here(*args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err


def test_bad_arguments_are_argparse_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for args, message in [
        (["--limit", "0"], "must be between 1 and"),
        (["--concurrency", "many"], "'many' is not a whole number"),
        (["--repo", "nope"], "'nope' is not OWNER/NAME"),
    ]:
        with pytest.raises(SystemExit) as exited:
            main(["eval", "x.jsonl", *args])
        assert exited.value.code == 2
        assert message in capsys.readouterr().err


async def history(tmp_path: Path) -> tuple[Path, str]:
    story = make_clone(tmp_path)
    database = tmp_path / "judge.db"
    storage = SqliteStorage(str(database))
    await storage.open()
    await tell(storage, story)
    await storage.close()
    return story.clone, f"sqlite:///{database}"


async def test_from_history_in_process(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clone, url = await history(here)
    args = ["--from-history", "--out", "set.jsonl", "--clone", str(clone), "--database-url", url]
    assert await eval_here(*args, "--repo", "octo/repo") == 0
    assert capsys.readouterr().out.startswith("wrote 4 examples to set.jsonl")
    assert len((here / "set.jsonl").read_text(encoding="utf-8").splitlines()) == 4


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--repo", "other/repo"], 1, "judge-bot: no overridden or reverted change to label\n"),
        (["--clone", "/"], 2, "judge-bot: / is not in a git repository (--clone)"),
        (["--out", "missing/set.jsonl"], 2, "judge-bot: cannot write missing/set.jsonl: No such"),
        (["--database-url", "sqlite:////proc/no/x.db"], 2, "judge-bot: cannot read the database"),
    ],
)
async def test_from_history_refusals_in_process(
    here: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    message: str,
) -> None:
    clone, url = await history(here)
    base: dict[str, Any] = {"--out": "set.jsonl", "--clone": str(clone), "--database-url": url}
    for name, value in zip(args[::2], args[1::2], strict=True):
        base[name] = value
    flat = [part for pair in base.items() for part in pair]
    assert await eval_here("--from-history", *flat) == code
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err


async def test_from_history_says_what_it_left_out_when_nothing_is_left(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Records whose commits this clone lacks: nothing written, and why."""
    _, url = await history(here)
    other = here / "other"
    other.mkdir()
    await asyncio.to_thread(os.system, f"git -C {other} init -q")
    args = ["--from-history", "--out", "set.jsonl", "--clone", str(other), "--database-url", url]
    assert await eval_here(*args, "--repo", "Octo/Repo") == 1
    err = capsys.readouterr().err
    assert err.startswith("judge-bot: no overridden or reverted change to label; left out: ")
    assert "its commit is not in this clone: 4; the record names no file to judge: 1" in err
    assert not (here / "set.jsonl").exists()


async def test_from_history_never_writes_over_a_file(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "set.jsonl").write_text("mine\n", encoding="utf-8")
    assert await eval_here("--from-history", "--out", "set.jsonl") == 2
    assert capsys.readouterr().err == (
        "judge-bot: set.jsonl exists; choose another --out or remove it first\n"
    )
    assert (here / "set.jsonl").read_text(encoding="utf-8") == "mine\n"


async def test_from_history_reads_only_the_records_of_the_clones_repository(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another repository's records cannot be matched against this clone: without
    --repo, the clone's origin names the repository."""
    clone, url = await history(here)
    storage = SqliteStorage(url.removeprefix("sqlite:///"))
    await storage.open()
    log = Log(storage)
    log.at += timedelta(days=1)
    head = git(clone, "rev-parse", "HEAD")
    await log.judged("b", head, Verdict.REJECT, repository="other/elsewhere", task_id="o")
    await log.person("b", head, Verdict.ACCEPT, repository="other/elsewhere", task_id="o")
    await storage.close()
    args = ["--from-history", "--out", "set.jsonl", "--clone", str(clone), "--database-url", url]
    assert await eval_here(*args) == 0
    assert capsys.readouterr().out.startswith("wrote 4 examples to set.jsonl")
    assert await eval_here(*args[:2], "all.jsonl", *args[3:], "--repo", "other/elsewhere") == 0
    assert capsys.readouterr().out.startswith("wrote 1 examples to all.jsonl")


async def test_from_history_without_origin_or_repo_asks_for_repo(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clone, url = await history(here)
    git(clone, "remote", "remove", "origin")
    args = ["--from-history", "--out", "set.jsonl", "--clone", str(clone), "--database-url", url]
    assert await eval_here(*args) == 2
    assert capsys.readouterr().err == (
        f"judge-bot: the clone in {clone} has no origin remote naming its repository: "
        "pass --repo OWNER/NAME\n"
    )
    assert not (here / "set.jsonl").exists()
