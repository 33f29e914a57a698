"""`python -m bot.judge.console`: what every installed pre-push hook runs (the hook script
names this module, and hooks written by earlier versions are in users' repositories), so
it stays; the commands live in `bot.cli.judge`."""

from __future__ import annotations

import sys

from bot.cli.judge import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
