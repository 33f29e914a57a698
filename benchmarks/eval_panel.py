"""`judge-bot eval` on a 200-change synthetic dataset: wall time and model calls.

The dataset: 200 Markdown changes (content rubric) of one to three files of 600 to 3,000
characters, half labelled accept. The panel: two tiers (quick `gpt-5-nano`, deep
`kimi-k2.5`) served by the fake OpenAI-protocol server on loopback, answering at once
(or after `--delay` seconds, to stand in for a model's time); each judge accepts, asks to
improve or rejects by a hash of what it reads, so both tiers, escalations and swapped
orders that disagree all occur. The command runs as a real `judge-bot eval` process,
as a user would run it, with the endpoint on 127.0.0.1 (never throttled).

Printed per run (swap on and off, one and four changes at a time): the process's wall
time, the requests the server answered, the model calls and figures the report gives.

    .venv/bin/python benchmarks/eval_panel.py [--changes 200] [--delay 0]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.fakes.llm_server import FakeOpenAIServer, RecordedRequest, Reply

QUICK, DEEP = "gpt-5-nano", "kimi-k2.5"
WORDS: tuple[str, ...] = (
    "cache", "warms", "within", "a", "minute", "after", "each", "deploy", "the", "p95",
    "latency", "returns", "to", "its", "baseline", "so", "we", "keep", "shorter", "expiry",
)  # fmt: skip
ANSWERS = {
    "accept": {"semantic": 5, "pragmatic": 4, "syntactic": 5},
    "improve": {"semantic": 3, "pragmatic": 3, "syntactic": 4},
    "reject": {"semantic": 1, "pragmatic": 2, "syntactic": 3},
}


def prose(chars: int, rng: random.Random) -> str:
    rows = ["# Report", ""]
    while sum(len(r) + 1 for r in rows) < chars:
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 13))]
        rows.append(" ".join(words).capitalize() + ".")
    return "\n".join(rows)[:chars] + "\n"


def synthetic_dataset(count: int, seed: int = 27) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    examples = []
    for n in range(count):
        files = [
            {"path": f"docs/change-{n}/part-{k}.md", "content": prose(rng.randint(600, 3000), rng)}
            for k in range(rng.choice((1, 1, 2, 3)))
        ]
        examples.append(
            {
                "id": f"change-{n}",
                "task": {"description": f"Write report {n}", "acceptance": "Names a cause"},
                "files": files,
                "expected": "accept" if n % 2 == 0 else "reject",
            }
        )
    return examples


_PATH = re.compile(r"docs/change-\d+/part-\d+\.md")


def hashed_judge(delay: float) -> Any:
    """Accept 70 %, improve 20 %, reject 10 % of what each model reads, by a hash of the
    model and the files' paths in the order the prompt shows them (so another order can
    change the answer, as a judge biased by position would; the nonce is left out)."""

    def respond(recorded: RecordedRequest) -> Reply:
        paths = list(dict.fromkeys(_PATH.findall(recorded.user_text)))
        digest = hashlib.sha256(f"{recorded.model}|{paths}".encode()).digest()
        pick = digest[0] % 10
        verdict = "accept" if pick < 7 else "improve" if pick < 9 else "reject"
        answer = {"scores": ANSWERS[verdict], "reasoning": verdict, "improvements": []}
        return Reply.json(answer, delay=delay)

    return respond


async def run_eval(server: FakeOpenAIServer, dataset: Path, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    env.pop("DATABASE_URL", None)
    env.update(
        JUDGE_LLM_BASE_URL=server.base_url,
        JUDGE_LLM_API_KEY="test-key",
        JUDGE_QUICK_MODEL=QUICK,
        JUDGE_DEEP_MODEL=DEEP,
    )
    before = len(server.requests)
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "eval", str(dataset), "--json", *args,
        cwd=dataset.parent, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"judge-bot eval failed ({proc.returncode}): {err.decode()}")
    report: dict[str, Any] = json.loads(out)
    report["_wall"] = wall
    report["_requests"] = len(server.requests) - before
    return report


def line(label: str, report: dict[str, Any]) -> str:
    agreement = report["agreement"]
    per = report["per_change"]
    swap = report["swap"]
    return (
        f"{label:<28} wall {report['_wall']:6.2f} s  server requests {report['_requests']:4d}  "
        f"model calls {report['calls']:4d}  calls/change {per['calls_mean']:.2f}  "
        f"swap {swap['count']}/{swap['total']}  accuracy {agreement['accuracy']['value']:.3f}  "
        f"undetermined {agreement['undetermined']['count']}"
    )


async def main(count: int, delay: float) -> None:
    server = FakeOpenAIServer()
    await server.start()
    server.responder = hashed_judge(delay)
    try:
        with tempfile.TemporaryDirectory() as folder:
            dataset = Path(folder) / "synthetic.jsonl"
            examples = synthetic_dataset(count)
            dataset.write_text("".join(json.dumps(e) + "\n" for e in examples), "utf-8")
            multi = sum(len(e["files"]) > 1 for e in examples)
            print(f"{count} changes ({multi} of two or more files), model delay {delay:g} s")
            runs = [
                ("swap, one at a time", ()),
                ("no swap, one at a time", ("--no-swap",)),
                ("swap, four at a time", ("--concurrency", "4")),
            ]
            for label, args in runs:
                print(line(label, await run_eval(server, dataset, *args)))
    finally:
        await server.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.0)
    options = parser.parse_args()
    asyncio.run(main(options.changes, options.delay))
