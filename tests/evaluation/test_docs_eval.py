"""docs/eval.md agrees with the command: its example dataset is valid, and its worked
example is what `judge-bot eval` prints for that dataset with the scripted test panel
(timings and token counts aside: they depend on the machine and the prompt's wording)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from bot.cli import main
from bot.evaluation.dataset import read_dataset
from tests.evaluation.panel import script_panel
from tests.evaluation.test_cli import EXAMPLE, configure, here  # noqa: F401 (a fixture)
from tests.support.fakes.llm_server import FakeOpenAIServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "eval.md"
TIMED = ("median latency s", "per change:", "this evaluation:")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def worked_example() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## A worked example", 1)[1]
    block = section.split("```text\n", 1)[1].split("```", 1)[0]
    return block.splitlines()


def comparable(line: str) -> str:
    """The line without what the machine decides: numbers in the timed lines, and the
    latency and token columns of a model's row."""
    if line.startswith(TIMED):
        return _NUMBER.sub("N", line)
    cells = re.split(r"\s{2,}", line.strip())
    if len(cells) == 12 and cells[0] in ("quick", "deep", "tiebreaker"):
        cells[8:11] = ["N", "N", "N"]
        return "  ".join(cells)
    return line


def test_the_example_dataset_is_valid() -> None:
    items = read_dataset(EXAMPLE)
    assert len(items) == 8
    assert any(i.example.diff for i in items)
    assert any(i.example.scores for i in items)
    assert any(len(i.example.judged_files()) > 1 for i in items)


def test_the_docs_name_the_example_that_exists() -> None:
    assert "[`docs/eval-example.jsonl`](eval-example.jsonl)" in DOC.read_text(encoding="utf-8")


@pytest.mark.usefixtures("here")
async def test_the_worked_example_is_what_the_command_prints(
    fake_llm: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script_panel(fake_llm)
    configure(monkeypatch, fake_llm)
    monkeypatch.chdir(EXAMPLE.parent.parent)  # the report names docs/eval-example.jsonl
    assert await asyncio.to_thread(main, ["eval", "docs/eval-example.jsonl"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [comparable(line) for line in printed] == [comparable(line) for line in worked_example()]
