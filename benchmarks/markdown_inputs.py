"""How long the Markdown link checks take on the line shapes that once made them
backtrack: an author's file is read on the App's event loop, so a slow line stalls
every installation.

    python benchmarks/markdown_inputs.py [--sizes 20000,200000] [--runs 5]

Prints, for each hostile shape and size (characters on one line), the median time of
`anchors()` and `links()` from `bot/judge/checks/markdown.py` and of `read_research()` from
`bot/judge/checks/research_claims.py`, which reuses its code-span and heading parsing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.judge.checks.markdown import Link, anchors, links  # noqa: E402
from bot.judge.checks.research_claims import read_research  # noqa: E402


def _repeat(unit: str, size: int) -> str:
    return unit * (size // len(unit))


def _atx_spaces(size: int) -> str:
    half = size // 2
    return "# a" + " " * half + "#" + " " * half + "x"


SHAPES: dict[str, Callable[[int], str]] = {
    "heading, space runs around a #": _atx_spaces,
    "unclosed <a tags": lambda size: _repeat("<a ", size),
    "unclosed <b tags": lambda size: _repeat("<b", size),
    "heading of backticks": lambda size: "# " + "`" * size,
    "line of backticks": lambda size: "x " + "`" * size,
    "backtick runs of growing length": lambda size: _growing_runs(size),
    "heading of [": lambda size: "# " + "[" * size,
    "heading of [](": lambda size: "# " + _repeat("[](", size),
    "heading of <": lambda size: "# " + "<" * size,
    "links to unclosed <": lambda size: _repeat("[a](<", size),
    "link target then spaces": lambda size: "[a](" + " " * size + "x",
    "links with unclosed (title": lambda size: _repeat("[a](x (", size),
}


def _growing_runs(size: int) -> str:
    """`a``a```a...: no run closes, and each is a different length."""
    parts: list[str] = []
    length, total = 1, 0
    while total < size:
        parts.append("`" * length + "a")
        total += length + 1
        length += 1
    return "".join(parts)


def _all_links(text: str) -> list[Link]:
    return list(links(text))


def _median_seconds(call: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="20000,200000")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'shape':34} {'size':>8} {'anchors':>10} {'links':>10} {'research':>10}")
    for name, shape in SHAPES.items():
        for size in sizes:
            text = shape(size)
            timings = [
                _median_seconds(partial(anchors, text), args.runs),
                _median_seconds(partial(_all_links, text), args.runs),
                _median_seconds(partial(read_research, "## Claim 1\n" + text), args.runs),
            ]
            cells = " ".join(f"{seconds * 1000:8.1f}ms" for seconds in timings)
            print(f"{name:34} {size:>8} {cells}", flush=True)


if __name__ == "__main__":
    main()
