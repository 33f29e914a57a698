"""`judge-bot action` on a pull_request event: wall time and GitHub calls.

Runs the command as a workflow step does (a process of its own, the runner's environment,
the event file) against the fake GitHub and the fake LLM, both real HTTP servers on
loopback (tests/support/fakes). Each pull request changes one watched file and is opened
with a cold verdict cache (a fresh runner directory): the quick judge accepts. Then the
same content is judged again on a new pull request with the cache the first run left,
as the Actions cache restores it. Prints, per run:

  * wall time from the process start to the `judge` check run's completion (the PATCH
    that completed it, as the fake GitHub saw it), and to the process's exit;
  * the GitHub calls the event caused, by operation, and the model calls.

The App makes 4 GitHub calls per pull request event with a warm installation token and
repository config (benchmarks/github_calls.py); a workflow run starts cold every time, and
takes no repository config from a restored cache (docs/action.md). The fake GitHub's
address is not api.github.com, so the run reads the commit's check runs once for the
`github-actions` App's id (`checks/list-for-ref`), as on a GitHub Enterprise Server; on
github.com that call is not made.

    python benchmarks/action_run.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.fakes.github_fixtures import new_key_pair  # noqa: E402
from tests.support.fakes.github_server import FakeGitHub  # noqa: E402
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply  # noqa: E402
from tests.support.flow_helpers import (  # noqa: E402
    DEEP,
    QUICK,
    REPO,
    TIEBREAKER,
    pull_request_payload,
)

ACCEPT = Reply.json(
    {
        "semantic": 4,
        "pragmatic": 4,
        "syntactic": 5,
        "reasoning": "clear and sourced",
        "improvements": [],
        "verdict": "accept",
    }
)


def step_environment(
    fake: FakeGitHub, llm: FakeOpenAIServer, token: str, event: Path, home: Path
) -> dict[str, str]:
    inherited = {
        k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "GITHUB_", "RUNNER_"))
    }
    return {
        **inherited,
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": fake.base_url,
        "GITHUB_GRAPHQL_URL": fake.graphql_url,
        "GITHUB_TOKEN": token,
        "GITHUB_RUN_ID": "1",
        "GITHUB_STEP_SUMMARY": str(home / "summary.md"),
        "GITHUB_OUTPUT": str(home / "output.txt"),
        "RUNNER_TEMP": str(home),
        "JUDGE_LLM_BASE_URL": llm.base_url,
        "JUDGE_LLM_API_KEY": llm.api_key,
        "JUDGE_LLM_PROVIDER": "openai",
        "JUDGE_QUICK_MODEL": QUICK,
        "JUDGE_DEEP_MODEL": DEEP,
        "JUDGE_TIEBREAKER_MODEL": TIEBREAKER,
    }


async def one_run(
    fake: FakeGitHub, llm: FakeOpenAIServer, token: str, home: Path, index: int, content: str
) -> tuple[float, float, Counter[str], int]:
    sha = fake.add_commit(REPO, {"docs/notes.md": content}, branch=f"topic-{index}")
    number = fake.add_pull(
        REPO, None, sha, head_ref=f"topic-{index}", author="agent", title="Research notes"
    )
    payload = pull_request_payload(fake, "opened", number)
    payload.pop("installation")
    for side in ("base", "head"):
        payload["pull_request"][side]["repo"]["full_name"] = REPO
    event = home / f"event-{index}.json"
    event.write_text(json.dumps(payload))
    calls_before, asked = len(fake.calls), len(llm.requests)
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "action",
        env=step_environment(fake, llm, token, event, home),
        cwd=home,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await process.communicate()
    ended = time.monotonic()
    if process.returncode != 0:
        raise SystemExit(f"judge-bot action exited {process.returncode}: {stderr.decode()}")
    calls = fake.calls[calls_before:]
    completed = max(c.time for c in calls if c.operation_id == "checks/update")
    return (
        completed - started,
        ended - started,
        Counter(c.operation_id for c in calls),
        len(llm.requests) - asked,
    )


async def main(runs: int) -> None:
    key = new_key_pair()
    fake = FakeGitHub(app_id=12345, public_key=key.public_key)
    fake.add_installation(1, "octo")
    fake.add_repo(REPO, default_branch="main", installation_id=1)
    llm = FakeOpenAIServer(default=ACCEPT)
    await fake.start()
    await llm.start()
    token = fake.issue_token(1)
    try:
        cold: list[tuple[float, float]] = []
        counts: Counter[str] = Counter()
        with tempfile.TemporaryDirectory() as scratch:
            for index in range(runs):
                home = Path(scratch) / f"cold-{index}"
                home.mkdir()
                content = f"# Notes {index}\n\nA clear, sourced explanation.\n"
                to_check, to_exit, calls, asked = await one_run(
                    fake, llm, token, home, index, content
                )
                cold.append((to_check, to_exit))
                counts = calls
                print(
                    f"cold run {index + 1}: check run completed after {to_check:.2f} s, "
                    f"process done after {to_exit:.2f} s; {sum(calls.values())} GitHub "
                    f"calls, {asked} model call(s)"
                )
            warm_home = Path(scratch) / "cold-0"
            to_check, to_exit, warm_calls, asked = await one_run(
                fake, llm, token, warm_home, runs, "# Notes 0\n\nA clear, sourced explanation.\n"
            )
        print()
        print(
            f"cold cache, median of {runs}: {statistics.median(c[0] for c in cold):.2f} s to "
            f"the completed check run, {statistics.median(c[1] for c in cold):.2f} s to exit"
        )
        print(f"GitHub calls per pull_request event: {sum(counts.values())} (the App: 4)")
        for operation, count in sorted(counts.items()):
            print(f"  {count} x {operation}")
        print(
            f"warm cache, the same content again: {to_check:.2f} s to the completed check "
            f"run, {sum(warm_calls.values())} GitHub calls, {asked} model call(s)"
        )
    finally:
        await llm.close()
        await fake.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="cold runs (default 5)")
    asyncio.run(main(parser.parse_args().runs))
