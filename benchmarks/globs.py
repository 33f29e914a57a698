"""Glob matching time, before and after the linear matcher (`bot/globs.py`).

"Before" is the old translation of each glob into one backtracking regex, kept in
tests/test_globs.py as the reference the new matcher is checked against. Prints the
median time of:

  * hostile cases: a glob and a path built to make a backtracking matcher explode. The old
    matcher runs in a child process cut off after --timeout seconds, since a regex cannot be
    interrupted from inside;
  * a realistic config: 10 globs against 1,000 repository paths (every pair, as
    `match_any` does when nothing matches early).

    python benchmarks/globs.py [--repeat 5] [--timeout 20]
"""

from __future__ import annotations

import argparse
import functools
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.globs import glob_match  # noqa: E402
from tests.test_globs import legacy_match  # noqa: E402

Matcher = Callable[[str, str], bool]

HOSTILE: list[tuple[str, str, str]] = [
    ("*a*a*a*a*a*a*a*a*a*a*b vs 60 a's", "*a*a*a*a*a*a*a*a*a*a*b", "a" * 60),
    ("**/ x10 then x vs 40 names", "**/" * 10 + "x", "a/" * 39 + "b"),
    ("**/a/ x10 then b vs 41 names", "**/a/" * 10 + "b", "a/" * 40 + "c"),
]

# The default include list and the kind of globs a repository adds to it.
CONFIG = [
    "research/**/*.md",
    "knowledge/**/*.md",
    "docs/**/*.md",
    "plans/**/*.md",
    "docs/drafts/",
    "SECURITY.md",
    "**/*.lock",
    "src/**/test_*.py",
    ".github/**",
    "vendor/",
]

_DIRS = ["src", "docs", "research", "tests", "pkg", "api", "internal", "drafts", ".github"]
_STEMS = ["README", "index", "test_api", "main", "notes", "SECURITY", "package", "util"]
_EXTS = [".md", ".py", ".ts", ".json", ".lock", ".yml", ""]

# Run by the child process: the old matcher on one hostile case, one time per line.
_CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.test_globs import legacy_match
pattern, path, repeat = sys.argv[2], sys.argv[3], int(sys.argv[4])
for _ in range(repeat):
    started = time.perf_counter()
    legacy_match(pattern, path)
    print(time.perf_counter() - started, flush=True)
"""


def realistic_paths(count: int) -> list[str]:
    rng = random.Random(7)
    return [
        "/".join([*rng.choices(_DIRS, k=rng.randint(0, 5)), rng.choice(_STEMS) + rng.choice(_EXTS)])
        for _ in range(count)
    ]


def timed(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def legacy_hostile(pattern: str, path: str, repeat: int, timeout: float) -> str:
    """The old matcher's median on one case, or how long it ran before being stopped."""
    command = [sys.executable, "-c", _CHILD, str(ROOT), pattern, path, str(repeat)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} s (stopped)"
    return seconds(statistics.median(float(line) for line in done.stdout.split()))


def seconds(value: float) -> str:
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.1f} µs"


def match_all(match: Matcher, globs: list[str], paths: list[str]) -> int:
    return sum(match(glob, path) for glob in globs for path in paths)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args()

    print(f"median of {args.repeat} runs; the old matcher is stopped after {args.timeout:.0f} s")
    print(f"{'case':<34} {'before':>18} {'after':>12}")
    for label, pattern, path in HOSTILE:
        old = legacy_hostile(pattern, path, args.repeat, args.timeout)
        new = timed(functools.partial(glob_match, pattern, path), args.repeat)
        print(f"{label:<34} {old:>18} {seconds(new):>12}")

    paths = realistic_paths(1000)
    # A first pass caches both sides' compiled globs before anything is timed.
    hits = (match_all(legacy_match, CONFIG, paths), match_all(glob_match, CONFIG, paths))
    before = timed(lambda: match_all(legacy_match, CONFIG, paths), args.repeat)
    after = timed(lambda: match_all(glob_match, CONFIG, paths), args.repeat)
    label = f"config: {len(CONFIG)} globs x {len(paths):,} paths"
    print(f"{label:<34} {seconds(before):>18} {seconds(after):>12}")
    per_match = len(CONFIG) * len(paths)
    print(f"{'  per match':<34} {seconds(before / per_match):>18} {seconds(after / per_match):>12}")
    print(f"{'  (glob, path) pairs that match':<34} {hits[0]:>18,} {hits[1]:>12,}")


if __name__ == "__main__":
    main()
