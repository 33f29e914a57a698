"""judge-bot against local model servers with their defaults: how many judgments end
parsed, how long the answers are, and how many calls a judgment takes (issue 27).

The servers are the fakes of tests/support/fakes/local_servers.py (llama-cpp-python's
server, llama.cpp's `llama-server`, Ollama; their docstring says which bodies are
reproduced and from what source), each with its own defaults, around the scripted small
model there; the user's settings are the docs' local-model recipe's and nothing more
(tests/support/local_trial.py): the server's address and two models. The engine runs as
`judge-bot judge` runs it.

Printed per server, for N changes (one Markdown report each, of `SIZES` characters in
turn, every third one poor, every third fair):

* parsed: judgments that ended with a verdict, not undetermined; and how many of the
  model's prompts the server cut without a word (Ollama does: such a verdict is parsed
  but scored blind);
* calls per judgment: the chat requests the server received (refusals included);
* output tokens of each complete answer, median and max, with the bounded answer schema:
  for the model as it answers (`SmallModel()`) and for one that writes every string and
  list to its bound (`SmallModel(verbose=True)`, the longest answer the schema allows);
  and how many answers stopped at the limit instead;
* seconds per judgment on a laptop CPU: the fakes read at `READ` and write at `WRITE`
  tokens a second (a 0.5-1.5B model at 4-bit), judge-bot's default timeouts; run at
  `--scale` of real time (timeouts and speeds alike) and printed in real seconds.

    .venv/bin/python benchmarks/local_servers.py [--changes N] [--scale S]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.judge.settings import JudgeSettings
from tests.support.fakes.local_servers import (
    LlamaCppPythonServer,
    LlamaServer,
    LocalServer,
    OllamaServer,
    SmallModel,
    Speed,
)
from tests.support.local_trial import Trial, trial

READ, WRITE = 150.0, 25.0
SIZES = (900, 2200, 3800, 9000, 26000, 1500, 6000, 14000)
QUALITIES = ("good", "fair", "good", "poor", "good", "good")

Make = Callable[[SmallModel, Speed], LocalServer]
SERVERS: tuple[tuple[str, Make], ...] = (
    ("llama-cpp-python", lambda m, s: LlamaCppPythonServer(model=m, speed=s)),
    ("llama-server", lambda m, s: LlamaServer(model=m, speed=s)),
    (
        "llama-server -c 0 (new builds)",
        lambda m, s: LlamaServer(model=m, speed=s, context_tokens=32768),
    ),
    ("ollama", lambda m, s: OllamaServer(model=m, speed=s)),
)


def changes(count: int) -> list[tuple[str, int]]:
    return [(QUALITIES[n % len(QUALITIES)], SIZES[n % len(SIZES)]) for n in range(count)]


def scaled_timeouts(scale: float) -> dict[str, float]:
    """judge-bot's default timeouts at `scale` of real time."""
    defaults = JudgeSettings()
    names = ("quick_timeout", "deep_timeout", "tiebreaker_timeout", "wall_clock_budget")
    return {name: float(getattr(defaults, name)) * scale for name in names}


async def run(
    make: Make, model: SmallModel, work: Sequence[tuple[str, int]], scale: float
) -> tuple[Trial, list[float], int]:
    """The trial, the seconds each judgment took in real time, and the server's context."""
    speed = (scale / READ, scale / WRITE) if scale else (0.0, 0.0)
    overrides = scaled_timeouts(scale) if scale else {}
    seconds: list[float] = []
    results: list[Trial] = []
    async with make(model, speed) as server:
        for change in work:
            started = time.perf_counter()
            results.append(await trial(server, [change], overrides=overrides))
            seconds.append((time.perf_counter() - started) / scale if scale else 0.0)
    merged = Trial(
        server=results[0].server,
        changes=tuple(c for t in results for c in t.changes),
        calls=sum(t.calls for t in results),
        answers=tuple(a for t in results for a in t.answers),
        cut=sum(t.cut for t in results),
        truncated=sum(t.truncated for t in results),
    )
    return merged, seconds, server.context_tokens


def _tokens(result: Trial) -> str:
    median, largest = result.answer_tokens()
    return f"median {median:.0f}, max {largest}"


async def main(count: int, scale: float) -> None:
    work = changes(count)
    print(f"{count} changes of {', '.join(str(s) for s in SIZES)} characters in turn")
    for name, make in SERVERS:
        plain, seconds, context = await run(make, SmallModel(), work, scale)
        verbose, _, _ = await run(make, SmallModel(verbose=True), work, 0.0)
        print(
            f"{name} (context {context}): "
            f"parsed {plain.parsed}/{len(work)} (prompts cut silently: {plain.truncated}); "
            f"calls per judgment {plain.calls / len(work):.2f} "
            f"(requests per judgment {plain.parts / len(work):.2f})"
        )
        print(
            f"    output tokens per complete answer: {_tokens(plain)}; to the schema's "
            f"bounds: {_tokens(verbose)}; answers cut at the limit: {plain.cut} and "
            f"{verbose.cut}"
        )
        if scale:
            print(
                f"    seconds per judgment at {READ:.0f}/{WRITE:.0f} tokens a second: median "
                f"{statistics.median(seconds):.0f}, max {max(seconds):.0f}"
            )
        for reason in plain.undetermined_reasons():
            print(f"    undetermined: {reason}")


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=24, help="judgments per server")
    parser.add_argument("--scale", type=float, default=0.01, help="share of real time (0: none)")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.changes, arguments.scale))
