"""`python -m bot` serves the App, like `judge-bot serve`; other arguments go to the CLI."""

from __future__ import annotations

import sys

from bot.cli import main

raise SystemExit(main(sys.argv[1:] or ["serve"]))
