"""`python -m bot.cli`: the `judge-bot` command, as the console script runs it."""

from __future__ import annotations

from bot.cli import main

raise SystemExit(main())
