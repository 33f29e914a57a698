"""A local trial: judge-bot's engine, as `judge-bot judge` runs it, judging a set of
changes against one of the local servers of tests/support/fakes/local_servers.py.

The user of the trial sets what the docs' local-model recipe sets and nothing more: the
server's address (`JUDGE_LLM_BASE_URL`) and two models of two families on it
(`JUDGE_QUICK_MODEL`, `JUDGE_DEEP_MODEL`), judge-bot's defaults for everything else, the
CLI's own limits (`bot.cli.judge.cli_limits`: no throttle or budget on this machine).
The changes (`CHANGES`) are one Markdown report each, of sizes that meet each server's
context: under the quick tier's 4,000 characters, over 3,500 (a 2,048-token context's
limit for the quick prompt), and over 25,000 (an 8,192-token context's for the deep one).

Used by tests/judge/test_local_servers_defaults.py and benchmarks/local_servers.py.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from bot.cli.judge import cli_limits, local_only
from bot.cli.judged_change import JudgedChange, judge_change, requests_at_once
from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.records import JudgedFile, TaskSpec, Verdict, VerdictRecord
from bot.judge.settings import JudgeSettings
from tests.support.fakes.local_servers import LocalServer

QUICK_MODEL = "qwen2.5:0.5b"
DEEP_MODEL = "llama3.2:1b"
"""Two families (alibaba, meta), as Ollama names them; llama.cpp's servers answer any
name with the one model they loaded."""

CHANGES: tuple[tuple[str, int], ...] = (
    ("good", 900),
    ("fair", 2200),
    ("good", 3800),
    ("poor", 9000),
    ("good", 26000),
)
"""Five changes of one file each: (quality mark, characters)."""

_PARAGRAPH = (
    "Queue latency rose after the cache change; the rollback to a 60 s TTL brought p95 back "
    "within a day, and the dashboard shows the same on both regions. The next step is a "
    "load test at twice the peak before the TTL goes up again. "
)


def document(quality: str, chars: int) -> str:
    """A Markdown report of whole paragraphs, `chars` characters or a few more, each of
    whose lines carries its quality mark, so that every window of it reads as the whole."""
    text = "# Weekly signal report\n\n"
    line = f"{_PARAGRAPH}<!-- quality: {quality} -->\n\n"
    while len(text) < chars:
        text += line
    return text


def settings(server: LocalServer) -> dict[str, str]:
    """The environment of the trial (the recipe's settings for this server)."""
    return {
        "JUDGE_LLM_BASE_URL": server.base_url,
        "JUDGE_QUICK_MODEL": QUICK_MODEL,
        "JUDGE_DEEP_MODEL": DEEP_MODEL,
    }


def settings_for(server: LocalServer, **overrides: Any) -> JudgeSettings:
    """`settings(server)` as the CLI reads them (its limits included), plus `overrides`."""
    values: dict[str, Any] = {
        "llm_base_url": server.base_url,
        "quick_model": QUICK_MODEL,
        "deep_model": DEEP_MODEL,
        **overrides,
    }
    return cli_limits(JudgeSettings(**values))


def request_for(quality: str, chars: int, number: int) -> JudgeRequest:
    """What `judge-bot judge --task-id trial-N ... docs/report-N.md` asks the engine."""
    return JudgeRequest(
        task=TaskSpec(
            task_id=f"trial-{number}",
            description="Write the weekly signal report",
            acceptance="Names the cause and an action",
        ),
        files=[JudgedFile(path=f"docs/report-{number}.md", content=document(quality, chars))],
        scope="cli:/trial",
    )


@dataclass(frozen=True)
class Trial:
    """What judging a set of changes against one server came to."""

    server: str
    changes: tuple[JudgedChange, ...]
    """Each change as `judge-bot judge` judged it: in one part or several."""
    calls: int
    """Chat requests the server received (refusals included)."""
    answers: tuple[int, ...]
    """Tokens of every answer the model ended by itself."""
    cut: int
    """Answers stopped at the output-token limit or the end of the context."""
    truncated: int
    """Prompts the server cut to fit without an error."""

    @property
    def verdicts(self) -> list[Verdict]:
        return [change.verdict for change in self.changes]

    @property
    def records(self) -> list[VerdictRecord]:
        """Every part's record, in order."""
        return [record for change in self.changes for record in change.records]

    @property
    def parsed(self) -> int:
        """Changes that ended with a verdict, not undetermined."""
        return sum(v is not Verdict.UNDETERMINED for v in self.verdicts)

    @property
    def parts(self) -> int:
        """Requests the changes were judged in (a long file's windows each count)."""
        return sum(len(change.parts) for change in self.changes)

    def undetermined_reasons(self) -> tuple[str, ...]:
        """Why parts ended undetermined, each reason once."""
        return tuple(
            dict.fromkeys(
                r.reason or "(no reason)"
                for r in self.records
                if r.final_decision is Verdict.UNDETERMINED
            )
        )

    def summary(self) -> str:
        """One line per change: its file, verdict, parts and each call's error."""
        return "\n".join(
            f"{', '.join(change.records[0].files)}: {change.verdict.value} in "
            f"{len(change.parts)} part(s); "
            + "; ".join(
                f"{c.tier.value}: {c.error}" for r in change.records for c in r.calls if c.error
            )
            for change in self.changes
        )

    def answer_tokens(self) -> tuple[float, int]:
        """Median and largest output tokens of a complete answer (0 without one)."""
        if not self.answers:
            return 0.0, 0
        return statistics.median(self.answers), max(self.answers)


async def trial(
    server: LocalServer,
    changes: Sequence[tuple[str, int]] = CHANGES,
    *,
    overrides: Mapping[str, Any] | None = None,
) -> Trial:
    """Judge `changes` one after another against `server` (started already), each as
    `judge-bot judge` does (`bot.cli.judged_change.judge_change`)."""
    judge_settings = settings_for(server, **(overrides or {}))
    first = len(server.calls)
    said: list[str] = []
    async with httpx.AsyncClient() as client:
        engine = JudgeEngine.from_settings(judge_settings, client, None)
        judged = [
            await judge_change(
                engine,
                request_for(quality, chars, n),
                at_once=requests_at_once(local_only(judge_settings)),
                say=said.append,
            )
            for n, (quality, chars) in enumerate(changes, 1)
        ]
    calls = server.calls[first:]
    written = [c.written for c in calls if c.written is not None]
    return Trial(
        server=server.name,
        changes=tuple(judged),
        calls=len(calls),
        answers=tuple(w.tokens for w in written if w.finish_reason == "stop"),
        cut=sum(w.finish_reason == "length" for w in written),
        truncated=sum(c.truncated for c in calls),
    )
