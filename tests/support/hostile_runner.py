"""Running inputs built to make the App's code super-linear, each to its end, in a child
process with a generous limit: a regression then fails its test, naming the first input
still running, instead of hanging the whole run. Never a timing assertion: the limit is
minutes above what the linear code takes, and far below what the old code took."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def assert_each_finishes(module: str, table: str, *, limit_seconds: float = 60.0) -> None:
    """Calls every value of the dict `table` in `module` (a dotted name importable from the
    repository root) in a child process, which prints each key as its call returns."""
    script = (
        f"from {module} import {table}\n"
        f"for name, run in {table}.items():\n"
        "    run()\n"
        "    print(name, flush=True)\n"
    )
    names = list(getattr(importlib.import_module(module), table))
    try:
        finished = subprocess.run(
            [sys.executable, "-c", script],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=limit_seconds,
            check=True,
        ).stdout.splitlines()
    except subprocess.TimeoutExpired as expired:
        done = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout
        stuck = [name for name in names if name not in (done or "").splitlines()]
        pytest.fail(f"still running after {limit_seconds:.0f} s: {stuck[0]}")
    assert finished == names
